namespace RavenLite.Client.Session;

/// <summary>Time series: appends, increments and deletes queued for SaveChanges, reads sent at once.</summary>
internal sealed partial class AsyncDocumentSession
{
    public TimeSeries.ISessionDocumentTimeSeries TimeSeriesFor(string documentId, string name)
    {
        ArgumentException.ThrowIfNullOrEmpty(documentId);
        ArgumentException.ThrowIfNullOrEmpty(name);
        return new SessionTimeSeries(this, documentId, name);
    }

    public TimeSeries.ISessionDocumentTimeSeries TimeSeriesFor(object entity, string name) => TimeSeriesFor(Tracked(entity).Id, name);

    /// <summary>One series through this session.</summary>
    private sealed class SessionTimeSeries(AsyncDocumentSession session, string documentId, string name) : TimeSeries.ISessionDocumentTimeSeries
    {
        private TimeSeries.PendingTimeSeries Pending()
        {
            session.ThrowIfDisposed();
            var key = (documentId.ToLowerInvariant(), name.ToLowerInvariant());
            if (!session._timeSeries.TryGetValue(key, out var p))
                session._timeSeries[key] = p = new TimeSeries.PendingTimeSeries(name);
            return p;
        }

        public void Append(DateTime timestamp, double value, string? tag = null) => Pending().Append(timestamp, [value], tag);

        public void Append(DateTime timestamp, IEnumerable<double> values, string? tag = null) => Pending().Append(timestamp, values, tag);

        public void Increment(DateTime timestamp, double delta = 1) => Pending().Increment(timestamp, delta);

        public void Delete(DateTime? first = null, DateTime? last = null) => Pending().Delete(first, last);

        public async Task<IReadOnlyList<TimeSeries.TimeSeriesEntry>> GetAsync(DateTime? first = null, DateTime? last = null, int start = 0, int pageSize = int.MaxValue,
            CancellationToken cancellationToken = default)
        {
            session.ThrowIfDisposed();
            session.CountRequest();
            return await session.Store.Executor.ExecuteAsync(new TimeSeries.GetTimeSeriesOperation.Command(documentId, name, first, last, start, pageSize), session.Database, cancellationToken)
                .ConfigureAwait(false);
        }
    }
}
