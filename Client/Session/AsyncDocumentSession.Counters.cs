using RavenLite.Client.Counters;

namespace RavenLite.Client.Session;

/// <summary>Counters: changes queued for SaveChanges, reads sent at once.</summary>
internal sealed partial class AsyncDocumentSession
{
    public ISessionDocumentCounters CountersFor(string documentId)
    {
        ArgumentException.ThrowIfNullOrEmpty(documentId);
        return new SessionDocumentCounters(this, documentId);
    }

    public ISessionDocumentCounters CountersFor(object entity) => new SessionDocumentCounters(this, Tracked(entity).Id);

    private void AddCounterOperation(string documentId, CounterOperationType type, string counter, long delta)
    {
        ArgumentException.ThrowIfNullOrEmpty(counter);
        ThrowIfDisposed();
        if (!_counterOperations.TryGetValue(documentId, out var list))
            _counterOperations[documentId] = list = [];
        list.Add(CountersJson.Operation(type, counter, delta));
    }

    private async Task<IReadOnlyList<CounterDetail?>> GetCountersAsync(string documentId, string[] counters, CancellationToken cancellationToken)
    {
        ThrowIfDisposed();
        CountRequest();
        return await Store.Executor.ExecuteAsync(new CountersJson.GetCommand(documentId, counters), Database, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>The counters of one document, through its session.</summary>
    private sealed class SessionDocumentCounters(AsyncDocumentSession session, string documentId) : ISessionDocumentCounters
    {
        public void Increment(string counter, long delta = 1) => session.AddCounterOperation(documentId, CounterOperationType.Increment, counter, delta);

        public void Delete(string counter) => session.AddCounterOperation(documentId, CounterOperationType.Delete, counter, 0);

        public async Task<long?> GetAsync(string counter, CancellationToken cancellationToken = default)
        {
            var details = await session.GetCountersAsync(documentId, [counter], cancellationToken).ConfigureAwait(false);
            return details.Count > 0 ? details[0]?.TotalValue : null;
        }

        public async Task<IReadOnlyDictionary<string, long>> GetAllAsync(CancellationToken cancellationToken = default) =>
            (await session.GetCountersAsync(documentId, [], cancellationToken).ConfigureAwait(false))
                .Where(d => d != null).ToDictionary(d => d!.CounterName, d => d!.TotalValue, StringComparer.OrdinalIgnoreCase);
    }
}
