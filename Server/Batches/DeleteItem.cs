using RavenLite.Server.Documents;

namespace RavenLite.Server.Batches;

/// <summary>A <c>Delete</c> command of a batch.</summary>
internal sealed class DeleteItem(string id, string? cv) : BatchItem(id, cv)
{
    private WriteResult? _result;

    public override void Execute(DocumentsWriteContext context) => _result = context.Delete(Id, ChangeVector);

    public override void WriteResult(Utf8JsonWriter w)
    {
        var r = _result!;
        w.WriteString("Type", "DELETE");
        w.WriteString("Id", r.Id);
        w.WriteBoolean("Deleted", r.Deleted);
        if (r.Deleted)
            w.WriteString("ChangeVector", r.ChangeVector);
        else
            w.WriteNull("ChangeVector");
    }
}
