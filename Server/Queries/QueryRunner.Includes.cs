using RavenLite.Server.Documents;

namespace RavenLite.Server.Queries;

public sealed partial class QueryRunner
{
    /// <summary>The query's <c>include timeseries(..)</c> ranges, resolved (null: none).</summary>
    private ExtraIncludes? TimeSeriesIncludesOf() => _query.TimeSeriesIncludes.Count == 0 ? null
        : ExtraIncludes.ForRanges(_query.TimeSeriesIncludes.Select(t => t.LastValue == null
            ? (ResolveString(t.Name), TimeOf(t.From, 0), TimeOf(t.To, long.MaxValue), (int?)null)
            : t.LastUnit == null
                ? (ResolveString(t.Name), 0L, long.MaxValue, (int?)ToInt(t.LastValue, "count"))
                : (ResolveString(t.Name), ExtraIncludes.LastSince(Resolve(t.LastValue).GetRawText(), ResolveString(t.LastUnit)), long.MaxValue, (int?)null)));

    /// <summary>The query's <c>include counters(..)</c>, resolved (null: none).</summary>
    private Counters.CounterIncludes? CounterIncludesOf() => _query.CounterIncludes.Count == 0 ? null
        : new Counters.CounterIncludes(_query.CounterIncludes.SelectMany(c => c.Name == null ? [RavenLite.Server.Counters.CounterIncludes.All] : ResolveStrings(c.Name)));

    /// <summary>
    /// What the answered rows include (<c>include</c> paths, <c>timeseries(..)</c>, <c>cmpxchg(..)</c>,
    /// <c>counters(..)</c>), collected row by row from one database snapshot.
    /// </summary>
    private sealed class AnswerIncludes
    {
        private readonly QueryRunner _runner;
        private readonly Storage.Transactions.Transaction _tx;
        private readonly RqlQuery _query;
        private readonly Dictionary<string, StoredDocument?> _documents = new(StringComparer.OrdinalIgnoreCase);

        public AnswerIncludes(QueryRunner runner, Storage.Transactions.Transaction tx)
        {
            _runner = runner;
            _tx = tx;
            _query = runner._query;
            Extra = runner.TimeSeriesIncludesOf(); // also carries include cmpxchg(..)
            Counters = runner.CounterIncludesOf();
        }

        /// <summary>The time series and compare-exchange values included (null: none asked for).</summary>
        public ExtraIncludes? Extra { get; private set; }

        /// <summary>The counters included (null: none asked for).</summary>
        public Counters.CounterIncludes? Counters { get; }

        /// <summary>Notes what <paramref name="row"/>'s document includes.</summary>
        public void Add(Row row)
        {
            foreach (string path in _query.Include)
                foreach (string id in Referenced(row, path))
                    _documents.TryAdd(id, null);
            if (Extra != null)
                AddTimeSeries(row);
            if (_query.CompareExchangeIncludes.Count > 0)
                AddCompareExchange(row);
            if (Counters != null)
                AddCounters(row);
        }

        /// <summary>Takes what a JavaScript projection included (<c>includes.cmpxchg</c>, <c>includes.document</c>).</summary>
        public void AddFromProjection(JavaScriptProjection projection)
        {
            foreach (string id in projection.IncludedDocuments)
                _documents.TryAdd(id, null);
            foreach (string key in projection.IncludedCompareExchange)
                (Extra ??= ExtraIncludes.ForRanges([])).AddCompareExchange(_tx, key);
            projection.IncludedDocuments.Clear();
            projection.IncludedCompareExchange.Clear();
        }

        /// <summary>The included documents, read once each (null for an id that does not exist).</summary>
        public Dictionary<string, StoredDocument?> ReadDocuments()
        {
            foreach (string id in _documents.Keys.ToList())
                _documents[id] = _runner._db.Documents.Get(_tx, id);
            return _documents;
        }

        private static List<string> Referenced(Row row, string path)
        {
            var ids = new List<string>();
            IncludePaths.Collect(row.DocumentJson, path, ids);
            return ids;
        }

        private void AddTimeSeries(Row row)
        {
            var documents = _runner._db.Documents;
            foreach (var ti in _query.TimeSeriesIncludes)
            {
                if (ti.Path == null)
                {
                    Extra!.Add(_tx, documents, row.Document!);
                    continue;
                }
                foreach (string id in Referenced(row, ti.Path.Text))
                    if (documents.Get(_tx, id) is { } referenced)
                        Extra!.Add(_tx, documents, referenced);
            }
        }

        private void AddCompareExchange(Row row)
        {
            Extra ??= ExtraIncludes.ForRanges([]);
            foreach (var ci in _query.CompareExchangeIncludes)
            {
                if (ci.Key != null)
                {
                    Extra.AddCompareExchange(_tx, _runner.ResolveString(ci.Key));
                    continue;
                }
                var keys = new List<JsonElement>();
                JsonPaths.Walk(row.DocumentJson, ci.Path!.Parts, 0, keys);
                foreach (var k in keys)
                    if (k.ValueKind == JsonValueKind.String)
                        Extra.AddCompareExchange(_tx, k.GetString()!);
            }
        }

        private void AddCounters(Row row)
        {
            var documents = _runner._db.Documents;
            foreach (var ci in _query.CounterIncludes)
            {
                if (ci.Path == null)
                {
                    Counters!.Add(_tx, documents, row.Document!.Id);
                    continue;
                }
                foreach (string id in Referenced(row, ci.Path.Text))
                    Counters!.Add(_tx, documents, id);
            }
        }
    }
}
