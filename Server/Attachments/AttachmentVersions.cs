using RavenLite.Server.Documents;

namespace RavenLite.Server.Attachments;

/// <summary>A document version an attachment change makes: its change vector once written (a batch writes it at its end).</summary>
public sealed class DocumentVersion
{
    /// <summary>The version's change vector; null until it is written.</summary>
    public string? ChangeVector { get; internal set; }
}

/// <summary>
/// The attachment changes of one batch, held until they are written as one new version per document — as RavenDB
/// updates a document once after all of a batch's attachment changes of it, so a session storing a document and two
/// attachments gets the version numbering RavenDB's does. Without a batch (<see cref="Immediate"/>), each change writes
/// its version at once. A batch writes what it holds before any other kind of command and at its end.
/// </summary>
public sealed class AttachmentVersions
{
    private readonly Dictionary<string, (DocumentExtras Extras, DocumentVersion Version)>? _pending;

    private AttachmentVersions(bool deferred) => _pending = deferred ? new(StringComparer.OrdinalIgnoreCase) : null;

    /// <summary>Changes written at once.</summary>
    public static AttachmentVersions Immediate { get; } = new(false);

    /// <summary>A batch's: changes held until <see cref="Write"/>.</summary>
    public static AttachmentVersions ForBatch() => new(true);

    /// <summary>The document's extras with the changes held for it.</summary>
    internal DocumentExtras? ExtrasOf(StoredDocument doc) =>
        _pending != null && _pending.TryGetValue(doc.Id, out var held) ? held.Extras : DocumentExtras.Read(doc.Json);

    /// <summary>Applies <paramref name="change"/> to the document's extras (false: nothing changed, null answered).</summary>
    internal DocumentVersion? Change(DocumentsWriteContext ctx, StoredDocument doc, Func<DocumentExtras, bool> change)
    {
        if (_pending == null)
        {
            var write = ctx.UpdateExtras(doc.Id, change);
            return write == null ? null : new DocumentVersion { ChangeVector = write.ChangeVector };
        }
        bool held = _pending.TryGetValue(doc.Id, out var pending);
        var extras = held ? pending.Extras : DocumentExtras.Read(doc.Json)?.Clone() ?? new DocumentExtras();
        if (!change(extras))
            return held ? pending.Version : null;
        var version = held ? pending.Version : new DocumentVersion();
        _pending[doc.Id] = (extras, version);
        return version;
    }

    /// <summary>Writes one new version of each document whose attachments changed, and forgets them.</summary>
    public void Write(DocumentsWriteContext ctx)
    {
        ArgumentNullException.ThrowIfNull(ctx);
        if (_pending is not { Count: > 0 })
            return;
        foreach (var (id, (extras, version)) in _pending)
        {
            var write = ctx.UpdateExtras(id, current =>
            {
                current.Attachments.Clear();
                foreach (var (name, info) in extras.Attachments)
                    current.Attachments[name] = info;
                return true;
            });
            version.ChangeVector = write?.ChangeVector;
        }
        _pending.Clear();
    }
}
