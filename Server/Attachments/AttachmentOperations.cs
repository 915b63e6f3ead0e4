using RavenLite.Server.Documents;

namespace RavenLite.Server.Attachments;

/// <summary>What an attachment write did: the document and name written, the document's change vector after it, and the attachment.</summary>
public sealed record AttachmentWrite(string DocumentId, string Name, string DocumentChangeVector, AttachmentInfo Info);

/// <summary>
/// Attachment writes inside a write transaction: each changes the document's <c>@attachments</c> (a new document
/// change vector) and the content references in the same transaction. Re-runnable (the merger may run a command
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
    public static AttachmentWrite Put(DocumentsWriteContext ctx, string documentId, string name, string? contentType, StagedContent content, string? expected)
    {
        var doc = Document(ctx, documentId, expected);
        AttachmentsStore.AddReference(ctx.Transaction, content);
        var info = new AttachmentInfo(name, content.Hash, string.IsNullOrEmpty(contentType) ? "" : contentType, content.Size);
        var write = ctx.UpdateExtras(doc.Id, extras => Set(ctx, extras, info))!;
        return new AttachmentWrite(doc.Id, name, write.ChangeVector, info);
    }

    /// <summary>Removes attachment <paramref name="name"/>; nothing happens when there is none. Null when nothing changed.</summary>
    public static WriteResult? Delete(DocumentsWriteContext ctx, string documentId, string name, string? expected)
    {
        // A document that is not there has no attachments to delete (a batch that deleted it first, as RavenDB allows), unless
        // the write expected a version of it.
        if (ctx.Get(documentId) == null && string.IsNullOrEmpty(expected))
            return null;
        var doc = Document(ctx, documentId, expected);
        return ctx.UpdateExtras(doc.Id, extras =>
        {
            if (!extras.Attachments.Remove(name, out var old))
                return false;
            AttachmentsStore.Release(ctx.Transaction, old.Hash);
            return true;
        });
    }

    /// <summary>Copies attachment <paramref name="name"/> of one document to <paramref name="destinationName"/> of another (the content is shared, not copied).</summary>
    public static AttachmentWrite Copy(DocumentsWriteContext ctx, string documentId, string name, string destinationId, string destinationName, string? expected)
    {
        var source = Find(ctx, Document(ctx, documentId, expected), name);
        var destination = Document(ctx, destinationId, null);
        bool onItself = string.Equals(documentId, destinationId, StringComparison.OrdinalIgnoreCase) && string.Equals(name, destinationName, StringComparison.OrdinalIgnoreCase);
        if (!onItself && DocumentExtras.Read(destination.Json) is { } existing && existing.Attachments.ContainsKey(destinationName))
            throw new ConcurrencyException($"Cannot copy or move attachment '{name}' of '{documentId}' to '{destinationName}' of '{destination.Id}': the destination already has an attachment named '{destinationName}'.");
        AttachmentsStore.AddReference(ctx.Transaction, source.Hash);
        var info = source with { Name = destinationName };
        var write = ctx.UpdateExtras(destination.Id, extras => Set(ctx, extras, info))!;
        return new AttachmentWrite(destination.Id, destinationName, write.ChangeVector, info);
    }

    /// <summary>Moves (or, within one document, renames) an attachment: a copy, then the source removed.</summary>
    public static AttachmentWrite Move(DocumentsWriteContext ctx, string documentId, string name, string destinationId, string destinationName, string? expected)
    {
        var copied = Copy(ctx, documentId, name, destinationId, destinationName, expected);
        bool sameDocument = string.Equals(documentId, destinationId, StringComparison.OrdinalIgnoreCase);
        if (sameDocument && string.Equals(name, destinationName, StringComparison.OrdinalIgnoreCase))
            return copied;
        var removed = Delete(ctx, documentId, name, null);
        return sameDocument && removed != null ? copied with { DocumentChangeVector = removed.ChangeVector } : copied;
    }

    private static AttachmentInfo Find(DocumentsWriteContext ctx, StoredDocument doc, string name) =>
        DocumentExtras.Read(doc.Json) is { } extras && extras.Attachments.TryGetValue(name, out var a) ? a
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
