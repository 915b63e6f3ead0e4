using RavenLite.Server.Databases;
using RavenLite.Server.Documents;

namespace RavenLite.Server.Queries;

public sealed partial class QueryRunner
{
    /// <summary>
    /// A data subscription's query applied to one document at a time (no index: a subscription reads its collection
    /// in etag order): <see cref="SubscriptionMatcher.Apply"/> gives what the worker receives — the document, or its
    /// projection (<c>select</c>, <c>select { JS }</c>, <c>declare function</c>, <c>load</c>) — or null when the
    /// <c>where</c> clause rejects it. 400 for what a subscription cannot run: an index source, order by, paging,
    /// group by, facets, suggestions, search and moreLikeThis (which need an index), an update.
    /// </summary>
    public static SubscriptionMatcher ForSubscription(Database db, RqlQuery query, bool revisions = false)
    {
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(query);
        string? refused = query.Source.Index != null ? "an index source (subscriptions read a collection: from Orders)"
            : query.OrderBy.Count > 0 ? "order by (documents come in the order they were written)"
            : query.Skip != null || query.Take != null ? "limit (use MaxDocsPerBatch)"
            : query.GroupBy.Count > 0 ? "group by"
            : query.Facets.Count > 0 || query.Suggestions.Count > 0 ? "facets or suggestions"
            : query.UpdateScript != null ? "update { } (a patch by query)"
            : query.Distinct ? "distinct"
            : Find<RqlMethod>(query.Where).Any(m => m.IsSearch) || Find<RqlMoreLikeThis>(query.Where).Any() ? "search() or moreLikeThis() (they need an index)"
            : null;
        if (refused != null)
            throw new InvalidQueryException("A subscription query cannot have " + refused + ".");
        var runner = new QueryRunner(db, query, default);
        if (query.Where != null)
            runner.ResolveAll(query.Where);
        if (revisions && (query.Select.Count > 0 || query.SelectScript != null))
            throw new InvalidQueryException("A subscription on revisions sends {Current, Previous}: it cannot have a select.");
        return new SubscriptionMatcher(runner) { Revisions = revisions };
    }

    /// <summary>See <see cref="ForSubscription"/>.</summary>
    public sealed class SubscriptionMatcher
    {
        private readonly QueryRunner _runner;

        internal SubscriptionMatcher(QueryRunner runner) => _runner = runner;

        /// <summary>True when <paramref name="doc"/> passes the query's where (a revision's current version, for a revisions subscription).</summary>
        public bool Matches(StoredDocument doc)
        {
            using var row = Row.ForDocument(doc);
            return _runner._query.Where == null || _runner.Evaluate(_runner._query.Where, row);
        }

        /// <summary>True for a subscription on revisions (<c>from Orders (Revisions = true)</c>): items are <c>{Current, Previous}</c>.</summary>
        public bool Revisions { get; init; }

        /// <summary>The collection read (null: every document).</summary>
        public string? Collection => _runner._query.Source.AllDocs ? null : _runner._query.Source.Collection;

        /// <summary>The include paths of the query (documents sent with a batch).</summary>
        public IReadOnlyList<string> Includes => _runner._query.Include;

        /// <summary>A projection bound to <paramref name="tx"/> for a batch (null when the query has none); dispose it with the batch.</summary>
        public IDisposable? BeginBatch(Storage.Transactions.Transaction tx) => _runner.NewProjection(tx);

        /// <summary>What the worker gets for <paramref name="doc"/>, or null when the query does not match it.</summary>
        public byte[]? Apply(StoredDocument doc, IDisposable? batch, Storage.Transactions.Transaction tx)
        {
            using var row = Row.ForDocument(doc);
            if (_runner._query.Where != null && !_runner.Evaluate(_runner._query.Where, row))
                return null;
            return _runner.Output(row, batch as JavaScriptProjection, tx).ToArray();
        }

        /// <summary>The counters and time series the query includes for a batch's documents (<c>include counters(..), timeseries(..)</c>), each null when none.</summary>
        public (Counters.CounterIncludes? Counters, ExtraIncludes? TimeSeries) NewItemIncludes() => (_runner.CounterIncludesOf(), _runner.TimeSeriesIncludesOf());

        /// <summary>The ids <paramref name="json"/> names under the query's include paths.</summary>
        public void CollectIncludes(ReadOnlySpan<byte> json, List<string> ids)
        {
            if (Includes.Count == 0)
                return;
            using var parsed = JsonDocument.Parse(json.ToArray());
            foreach (string path in Includes)
                IncludePaths.Collect(parsed.RootElement, path, ids);
        }
    }
}
