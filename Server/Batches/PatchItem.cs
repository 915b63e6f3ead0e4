using RavenLite.Server.Documents;
using RavenLite.Server.Formatting;

namespace RavenLite.Server.Batches;

/// <summary>A PATCH; <c>returnDocument</c>: answer with the patched document (the session had it loaded).</summary>
internal sealed class PatchItem(string id, string? cv, Operations.DocumentPatch patch, bool returnDocument) : BatchItem(id, cv)
{
    private Operations.DocumentPatch.Outcome? _outcome;

    public Operations.DocumentPatch Patch { get; } = patch;

    public override void Execute(DocumentsWriteContext context) => _outcome = Patch.Apply(context, Id, ChangeVector, skipOnMismatch: false);

    public override void WriteResult(Utf8JsonWriter w)
    {
        var outcome = _outcome!;
        var patched = outcome.Write;
        w.WriteString("Type", "PATCH");
        w.WriteString("Id", patched?.Id ?? Id);
        if (patched != null)
        {
            w.WriteString("ChangeVector", patched.ChangeVector);
            w.WriteString("LastModified", JsonDates.FormatDate(patched.LastModified));
        }
        else
        {
            w.WriteNull("ChangeVector");
            w.WriteNull("LastModified");
        }
        w.WriteString("PatchStatus", outcome.Status.ToString());
        w.WriteNull("Debug");
        if (returnDocument && outcome.Modified != null)
        {
            w.WritePropertyName("ModifiedDocument");
            using var modified = JsonDocument.Parse(outcome.Modified);
            modified.RootElement.WriteTo(w);
        }
    }
}
