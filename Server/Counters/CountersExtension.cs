using RavenLite.Server.Documents;

namespace RavenLite.Server.Counters;

/// <summary>Counters as a document extension: a deleted document's counters go with it.</summary>
public sealed class CountersExtension : IDocumentExtension
{
    /// <inheritdoc />
    public void AfterDelete(DocumentsWriteContext context, in DocumentDelete deleted)
    {
        if (deleted.Extras is { Counters.Count: > 0 })
        {
            CountersStore.DeleteAll(context.Transaction, deleted.Key);
            CounterShares.RemoveAll(context.Transaction, deleted.Key);
        }
    }
}
