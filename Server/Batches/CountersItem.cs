using RavenLite.Server.Counters;
using RavenLite.Server.Documents;

namespace RavenLite.Server.Batches;

/// <summary>A <c>Counters</c> command: a document's counter operations.</summary>
internal sealed class CountersItem(string id, CounterBatch counters) : BatchItem(id, null)
{
    public override void Execute(DocumentsWriteContext context) => counters.Apply(context);

    public override void WriteResult(Utf8JsonWriter w)
    {
        w.WriteString("Type", "Counters");
        w.WriteString("Id", counters.DocumentId);
        w.WritePropertyName("CountersDetail");
        CounterBatch.WriteDetails(w, counters.Results, full: false);
        if (counters.DocumentChangeVector != null)
            w.WriteString("DocumentChangeVector", counters.DocumentChangeVector);
    }
}
