using RavenLite.Server.Documents;

namespace RavenLite.Server.Batches;

/// <summary>A <c>ForceRevisionCreation</c> command: a revision of the document's current version, whatever the configuration.</summary>
internal sealed class ForceRevisionItem(string id) : BatchItem(id, null)
{
    private bool _created;
    private StoredDocument? _document;

    public override void Execute(DocumentsWriteContext context)
    {
        _created = Revisions.RevisionsExtension.Force(context, Id);
        _document = _created ? context.Get(Id) : null;
    }

    public override void WriteResult(Utf8JsonWriter w)
    {
        w.WriteString("Type", "ForceRevisionCreation");
        w.WriteBoolean("RevisionCreated", _created);
        if (_document is not { } d)
        {
            w.WriteString("Id", Id);
            return;
        }
        // The document's metadata as it is now (with HasRevisions): the session takes it over.
        using var parsed = JsonDocument.Parse(d.Json);
        foreach (var p in parsed.RootElement.GetProperty("@metadata").EnumerateObject())
            p.WriteTo(w);
    }
}
