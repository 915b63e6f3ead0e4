using RavenLite.Server.Documents;

namespace RavenLite.Server.Attachments;

/// <summary>
/// Attachments as a document extension: a deleted document releases its references to attachment contents (a content
/// goes when nothing, document or revision, refers to it any more).
/// </summary>
public sealed class AttachmentsExtension : IDocumentExtension
{
    /// <inheritdoc />
    public void AfterDelete(DocumentsWriteContext context, in DocumentDelete deleted)
    {
        if (deleted.Extras is { Attachments.Count: > 0 } extras)
            AttachmentsStore.ReleaseAll(context.Transaction, extras);
    }
}
