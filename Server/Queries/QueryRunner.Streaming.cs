using RavenLite.Server.Databases;
using RavenLite.Server.Documents;

namespace RavenLite.Server.Queries;

/// <summary>What a streamed query says of itself before its results (RavenDB's <c>StreamQueryStatistics</c>).</summary>
/// <param name="ResultEtag">The database's last etag in the snapshot read.</param>
/// <param name="IsStale">The index was behind the documents.</param>
/// <param name="IndexName">The index (or <c>collection/X</c>, <c>AllDocs</c>) read.</param>
/// <param name="IndexTimestamp">When the index last indexed (now for a scan).</param>
/// <param name="TotalResults">The matches, when known before the first result (a collection scan, an index whose candidates are exact); else -1.</param>
public sealed record QueryStreamStats(long ResultEtag, bool IsStale, string IndexName, long TotalResults, DateTime IndexTimestamp);

public sealed partial class QueryRunner
{
    /// <summary>
    /// Runs <paramref name="query"/> and hands each result to <paramref name="onResult"/> as it is read from one storage
    /// snapshot (and one index snapshot): without <c>order by</c>, <c>distinct</c> or relevance order nothing is
    /// retained, so memory stays flat for any number of results. An ordered query is answered as <see cref="RunAsync"/>
    /// answers it (its order is known only once every match was seen; a page of at most 100,000 is kept while ranking,
    /// more is sorted whole), then handed over. Facets and suggestions are answers, not result streams: 400.
    /// Blocks: call it from a thread that may wait (<see cref="Http.StreamedResponse"/>'s producer).
    /// </summary>
    public static long Stream(Database db, RqlQuery query, JsonElement parameters, QueryOptions options, Action<QueryStreamStats> onStats, Action<byte[]> onResult, CancellationToken cancellation)
    {
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(query);
        if (query.UpdateScript != null)
            throw new InvalidQueryException("A query with 'update { ... }' is a patch by query: send it with PATCH /databases/{db}/queries.");
        if (query.Facets.Count > 0 || query.Suggestions.Count > 0)
            throw new InvalidQueryException("Facets and suggestions answer with aggregates, not a stream of results: send them to /queries.");
        var runner = new QueryRunner(db, query, parameters) { _projectionBehavior = options.ProjectionBehavior };
        int skip = query.Skip != null ? runner.ToInt(query.Skip, "skip") : options.Start ?? 0;
        int take = query.Take != null ? runner.ToInt(query.Take, "take") : options.PageSize ?? int.MaxValue;
        if (skip < 0 || take < 0)
            throw new InvalidQueryException("limit skip and take must not be negative.");
        if (query.Where != null)
            runner.ResolveAll(query.Where);
        if (query.Filter != null)
            runner.ResolveAll(query.Filter);
        return runner.WithIndexAsync(options, index => runner.StreamRows(index, skip, take, onStats, onResult, cancellation), cancellation).GetAwaiter().GetResult();
    }

    private long StreamRows(Indexing.Index? index, int skip, int take, Action<QueryStreamStats> onStats, Action<byte[]> onResult, CancellationToken cancellation)
    {
        string indexName = index?.Name ?? (_query.Source.AllDocs ? "AllDocs" : "collection/" + _query.Source.Collection);
        if (_query.OrderBy.Count > 0 || _query.Distinct || HasMoreLikeThis)
        {
            var answer = Execute(index, skip, take);
            onStats(new QueryStreamStats(answer.ResultEtag, answer.IsStale, answer.IndexName, answer.TotalResults, answer.IndexTimestamp ?? DateTime.UtcNow));
            foreach (var result in answer.Results)
            {
                cancellation.ThrowIfCancellationRequested();
                onResult(result.ToArray());
            }
            return answer.Results.Count;
        }
        _compiled = index?.Compiled;
        (_skip, _take) = (skip, take);
        try
        {
            using var dbTx = _db.Environment.ReadTransaction();
            long lastEtag = DocumentsStorage.LastEtag(dbTx);
            bool stale = false;
            using var rows = (index == null ? ScanRows(dbTx) : IndexRows(index, dbTx, out stale)).GetEnumerator();
            bool more = rows.MoveNext(); // an index's candidates are found here: an exact count is known after it
            long total = _exactTotal ?? (index == null && _query.Where == null && _query.Filter == null ? SourceCount(dbTx) : -1);
            onStats(new QueryStreamStats(lastEtag, stale, indexName, total, index?.LastIndexingTime ?? DateTime.UtcNow));
            using var projection = NewProjection(dbTx);
            long written = 0;
            int skipped = 0;
            for (; more && written < take; more = rows.MoveNext())
            {
                cancellation.ThrowIfCancellationRequested();
                using var row = rows.Current;
                if (!Kept(row))
                    continue;
                if (_exactTotal == null && skipped < skip)
                {
                    // Exact candidates arrive paged already; else the skip is counted here.
                    skipped++;
                    continue;
                }
                onResult(Output(row.Bind(_db.Documents), projection, dbTx).ToArray());
                written++;
            }
            return written;
        }
        finally
        {
            _heldReader?.DecRef();
            _heldReader = null;
        }
    }

    /// <summary>Documents a scan without a condition answers: all, or the collection's.</summary>
    private long SourceCount(Storage.Transactions.Transaction dbTx) => _query.Source.AllDocs
        ? DocumentsStorage.CountDocuments(dbTx)
        : DocumentsStorage.CollectionCounts(dbTx).GetValueOrDefault(_query.Source.Collection!);
}
