using RavenLite.Server.Documents;

namespace RavenLite.Server.Batches;

/// <summary>A <c>TimeSeries</c> command: appends, deletes and increments of one series of a document.</summary>
internal sealed class TimeSeriesItem(string id, TimeSeries.TimeSeriesOperation operation) : BatchItem(id, null)
{
    public override void Execute(DocumentsWriteContext context) => operation.Apply(context, Id);

    public override void WriteResult(Utf8JsonWriter w)
    {
        w.WriteString("Type", "TimeSeries");
        w.WriteString("Id", Id);
    }
}
