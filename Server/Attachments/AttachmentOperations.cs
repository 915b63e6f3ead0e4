using RavenLite.Server.Documents;

namespace RavenLite.Server.Attachments;

/// <summary>
/// What an attachment write did: the document and name written, the attachment's change vector (its etag is taken
/// before the document's new version, as RavenDB numbers them), the document's change vector after it, and the attachment.
/// </summary>
public sealed record AttachmentWrite(string DocumentId, string Name, string ChangeVector, DocumentVersion Version, AttachmentInfo Info)
{
    /// <summary>The document's change vector after the write (a batch's: once written, at the batch's end).</summary>
    public string DocumentChangeVector => Version.ChangeVector!;
}

/// <summary>
/// Attachment writes inside a write transaction: each changes the document's <c>@attachments</c> (a new document
/// version, at once or at the end of a batch: <see cref="AttachmentVersions"/>) and the content references in the same transaction. Re-runnable (the merger may run a command
/// again after a rollback). A missing document is a 400 DocumentDoesNotExistException, a missing source attachment
/// a 400 AttachmentDoesNotExistException, a document change vector that does not match <c>expected</c> a 409, and so is a copy
/// or move onto a name the destination already has.
/// </summary>
public static class AttachmentOperations
{
    private static StoredDocument Document(DocumentsWriteContext ctx, string id, string? expected)
    {
        var doc = ctx.Get(id) ?? throw new BadRequestException($"There is no document '{id}' (or it has been deleted), cannot operate on its attachments.", RavenExceptionTypes.DocumentDoesNotExist);
        if (!string.IsNullOrEmpty(expected) && !string.Equals(expected, doc.ChangeVector, StringComparison.Ordinal))
            throw new ConcurrencyException($"Document {id} has change vector {doc.ChangeVector}, but the attachment write expected {expected}.");
        return doc;
    }

    /// <summary>Attaches <paramref name="content"/> as <paramref name="name"/> (replacing an attachment of that name).</summary>
    public static AttachmentWrite Put(DocumentsWriteContext ctx, string documentId, string name, string? contentType, StagedContent content, string? expected,
        AttachmentVersions? versions = null)
    {
        versions ??= AttachmentVersions.Immediate;
        var doc = Document(ctx, documentId, expected);
        AttachmentsStore.AddReference(ctx.Transaction, content);
        var info = new AttachmentInfo(name, content.Hash, string.IsNullOrEmpty(contentType) ? "" : contentType, content.Size);
        string changeVector = ctx.TakeItemEtag(doc.ChangeVector);
        var version = versions.Change(ctx, doc, extras => Set(ctx, extras, info))!;
        return new AttachmentWrite(doc.Id, name, changeVector, version, info);
    }

    /// <summary>Removes attachment <paramref name="name"/>; nothing happens when there is none. Null when nothing changed.</summary>
    public static DocumentVersion? Delete(DocumentsWriteContext ctx, string documentId, string name, string? expected, AttachmentVersions? versions = null)
    {
        versions ??= AttachmentVersions.Immediate;
        // A document that is not there has no attachments to delete (a batch that deleted it first, as RavenDB allows), unless
        // the write expected a version of it.
        if (ctx.Get(documentId) == null && string.IsNullOrEmpty(expected))
            return null;
        var doc = Document(ctx, documentId, expected);
        return versions.Change(ctx, doc, extras =>
        {
            if (!extras.Attachments.Remove(name, out var old))
                return false;
            AttachmentsStore.Release(ctx.Transaction, old.Hash);
            ctx.TakeItemEtag(doc.ChangeVector); // RavenDB's removal leaves a tombstone of the attachment at an etag of its own
            return true;
        });
    }

    /// <summary>Copies attachment <paramref name="name"/> of one document to <paramref name="destinationName"/> of another (the content is shared, not copied).</summary>
    public static AttachmentWrite Copy(DocumentsWriteContext ctx, string documentId, string name, string destinationId, string destinationName, string? expected,
        AttachmentVersions? versions = null)
    {
        versions ??= AttachmentVersions.Immediate;
        var source = Find(versions, Document(ctx, documentId, expected), name);
        var destination = Document(ctx, destinationId, null);
        bool onItself = string.Equals(documentId, destinationId, StringComparison.OrdinalIgnoreCase) && string.Equals(name, destinationName, StringComparison.OrdinalIgnoreCase);
        if (!onItself && versions.ExtrasOf(destination) is { } existing && existing.Attachments.ContainsKey(destinationName))
            throw new ConcurrencyException($"Cannot copy or move attachment '{name}' of '{documentId}' to '{destinationName}' of '{destination.Id}': the destination already has an attachment named '{destinationName}'.");
        AttachmentsStore.AddReference(ctx.Transaction, source.Hash);
        var info = source with { Name = destinationName };
        string changeVector = ctx.TakeItemEtag(destination.ChangeVector);
        var version = versions.Change(ctx, destination, extras => Set(ctx, extras, info))!;
        return new AttachmentWrite(destination.Id, destinationName, changeVector, version, info);
    }

    /// <summary>Moves (or, within one document, renames) an attachment: a copy, then the source removed.</summary>
    public static AttachmentWrite Move(DocumentsWriteContext ctx, string documentId, string name, string destinationId, string destinationName, string? expected,
        AttachmentVersions? versions = null)
    {
        var copied = Copy(ctx, documentId, name, destinationId, destinationName, expected, versions);
        bool sameDocument = string.Equals(documentId, destinationId, StringComparison.OrdinalIgnoreCase);
        if (sameDocument && string.Equals(name, destinationName, StringComparison.OrdinalIgnoreCase))
            return copied;
        var removed = Delete(ctx, documentId, name, null, versions);
        return sameDocument && removed != null ? copied with { Version = removed } : copied;
    }

    private static AttachmentInfo Find(AttachmentVersions versions, StoredDocument doc, string name) =>
        versions.ExtrasOf(doc) is { } extras && extras.Attachments.TryGetValue(name, out var a) ? a
            : throw new BadRequestException($"There is no attachment '{name}' on document '{doc.Id}'.", RavenExceptionTypes.AttachmentDoesNotExist);

    /// <summary>Puts <paramref name="info"/> into the extras, releasing the content of an attachment it replaces.</summary>
    private static bool Set(DocumentsWriteContext ctx, DocumentExtras extras, AttachmentInfo info)
    {
        if (extras.Attachments.Remove(info.Name, out var old))
            AttachmentsStore.Release(ctx.Transaction, old.Hash);
        extras.Attachments[info.Name] = info;
        return true;
    }
}
