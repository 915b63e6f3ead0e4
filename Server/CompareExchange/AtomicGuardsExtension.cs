using RavenLite.Server.Documents;

namespace RavenLite.Server.CompareExchange;

/// <summary>
/// Cluster-wide transactions' atomic guards as a document extension: deleting a document deletes its guard
/// (<c>rvn-atomic/{id}</c>), as RavenDB does, so a later cluster-wide session can create the id again.
/// </summary>
public sealed class AtomicGuardsExtension : IDocumentExtension
{
    /// <inheritdoc />
    public void AfterDelete(DocumentsWriteContext context, in DocumentDelete deleted) =>
        CompareExchangeStore.DeleteAtomicGuard(context.Transaction, deleted.Document.Id);
}
