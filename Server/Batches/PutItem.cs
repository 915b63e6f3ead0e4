using RavenLite.Server.Documents;
using RavenLite.Server.Formatting;

namespace RavenLite.Server.Batches;

/// <summary>A PUT; its prepared document is <c>prepared[start..start+length]</c> with a prefix of <c>prefix</c> bytes.</summary>
internal sealed class PutItem(string id, string? cv, string collection, int start, int length, int prefix, ArrayBufferWriter<byte> prepared) : BatchItem(id, cv)
{
    /// <summary>The collection of the document written.</summary>
    public string Collection => collection;

    private WriteResult? _result;

    public override void Execute(DocumentsWriteContext context) =>
        _result = context.Put(context.ResolveId(Id), collection, prepared.WrittenSpan.Slice(start, length), prefix, ChangeVector);

    public override void WriteResult(Utf8JsonWriter w)
    {
        var r = _result!;
        w.WriteString("Type", "PUT");
        w.WriteString("@id", r.Id);
        if (r.Collection != Collections.Empty)
            w.WriteString("@collection", r.Collection);
        w.WriteString("@change-vector", r.ChangeVector);
        w.WriteString("@last-modified", JsonDates.FormatDate(r.LastModified));
    }
}
