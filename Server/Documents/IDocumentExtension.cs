namespace RavenLite.Server.Documents;

/// <summary>
/// A document extension — revisions, expiration, counters, attachments, time series, atomic guards — keeping what it
/// stores beside a document in step with the document's puts and deletes. Each registers once with
/// <see cref="DocumentsStorage.Register"/>; <see cref="DocumentsWriteContext"/> calls every registered extension, in
/// registration order, inside the write transaction of each put and delete. Documents knows this interface and none
/// of the extensions, so the extensions depend on Documents and never the other way. Called on the merger thread only.
/// </summary>
public interface IDocumentExtension
{
    /// <summary>
    /// Before a version of a document of <paramref name="collection"/> is stored: the <see cref="DocumentExtras"/> it
    /// will carry (<paramref name="extras"/>, possibly null; return a changed copy, never change it in place).
    /// </summary>
    DocumentExtras? BeforePut(string collection, DocumentExtras? extras) => extras;

    /// <summary>After <paramref name="put"/> was stored, in the same transaction.</summary>
    void AfterPut(DocumentsWriteContext context, in DocumentPut put)
    {
    }

    /// <summary>After <paramref name="deleted"/>'s document was removed and its tombstone written, in the same transaction.</summary>
    void AfterDelete(DocumentsWriteContext context, in DocumentDelete deleted)
    {
    }
}
