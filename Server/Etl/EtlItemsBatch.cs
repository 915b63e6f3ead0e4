using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Etl;

/// <summary>A batch kept as its changes until it is loaded whole (RavenDB ETL's: one request built from them all).</summary>
internal sealed class EtlItemsBatch(Transaction tx, Func<IReadOnlyList<EtlItem>, Transaction, CancellationToken, Task> load) : IEtlBatch
{
    private readonly List<EtlItem> _items = [];

    public int Count => _items.Count;

    public void Add(EtlItem item) => _items.Add(item);

    public Task LoadAsync(CancellationToken cancellation) => _items.Count == 0 ? Task.CompletedTask : load(_items, tx, cancellation);

    public void Dispose()
    {
    }
}
