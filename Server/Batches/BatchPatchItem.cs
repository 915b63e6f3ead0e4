using RavenLite.Server.Documents;

namespace RavenLite.Server.Batches;

/// <summary>
/// A BatchPATCH (RavenDB's <c>BatchPatchCommandData</c>): one patch applied to each of several documents, each with its
/// optional change vector (a mismatch is a 409, as a single PATCH's). One result entry for the command, listing each
/// document's outcome; clients read none of it (the session is not updated by this command).
/// </summary>
internal sealed class BatchPatchItem(List<(string Id, string? ChangeVector)> targets, Operations.DocumentPatch patch) : BatchItem(targets[0].Id, null)
{
    private readonly List<Operations.DocumentPatch.Outcome> _outcomes = [];

    public Operations.DocumentPatch Patch { get; } = patch;

    public override void Execute(DocumentsWriteContext context)
    {
        _outcomes.Clear();
        foreach (var (id, changeVector) in targets)
            _outcomes.Add(Patch.Apply(context, id, changeVector, skipOnMismatch: false));
    }

    public override void WriteResult(Utf8JsonWriter w)
    {
        w.WriteString("Type", "BatchPATCH");
        w.WriteStartArray("Results");
        for (int i = 0; i < _outcomes.Count; i++)
        {
            w.WriteStartObject();
            w.WriteString("Id", _outcomes[i].Write?.Id ?? targets[i].Id);
            if (_outcomes[i].Write is { } written)
                w.WriteString("ChangeVector", written.ChangeVector);
            else
                w.WriteNull("ChangeVector");
            w.WriteString("PatchStatus", _outcomes[i].Status.ToString());
            w.WriteEndObject();
        }
        w.WriteEndArray();
    }
}
