using RavenLite.Server.CompareExchange;
using RavenLite.Server.Documents;

namespace RavenLite.Server.Batches;

/// <summary>A CompareExchangePUT (with its value) or CompareExchangeDELETE (<c>json</c> null) of a cluster-wide transaction.</summary>
internal sealed class CompareExchangeItem(string key, long index, byte[]? json) : BatchItem(key, null)
{
    public long ExpectedIndex { get; } = index;

    /// <summary>The value to put (<c>{"Object":..}</c>), or null for a delete.</summary>
    public byte[]? Value => json;

    private long _index;

    /// <summary>Null when the key's index is <see cref="ExpectedIndex"/>, else what is wrong.</summary>
    public string? Violation(DocumentsWriteContext context)
    {
        long current = CompareExchangeStore.Get(context.Transaction, Id)?.Index ?? 0;
        if (current == ExpectedIndex || (json == null && ExpectedIndex == 0 && current != 0))
            return null;
        return $"compare-exchange '{Id}': expected index {ExpectedIndex}, actual {current}";
    }

    public void Apply(DocumentsWriteContext context, long transactionIndex)
    {
        _index = transactionIndex;
        if (json != null)
            CompareExchangeStore.Put(context.Transaction, Id, ExpectedIndex, json, () => transactionIndex);
        else
            CompareExchangeStore.Delete(context.Transaction, Id, ExpectedIndex == 0 ? null : ExpectedIndex); // checked above: 0 deletes what there is
    }

    public override void Execute(DocumentsWriteContext context) => throw new InvalidOperationException("Compare-exchange commands run only in a cluster-wide batch.");

    public override void WriteResult(Utf8JsonWriter w)
    {
        w.WriteString("Type", json != null ? "CompareExchangePUT" : "CompareExchangeDELETE");
        w.WriteString("Key", Id);
        w.WriteNumber("Index", _index);
    }
}
