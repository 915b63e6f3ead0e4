using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Indexing;

namespace RavenLite.Server.Queries;

/// <summary>
/// Answers an <see cref="RqlQuery"/>. The source decides how candidates are found:
/// <list type="bullet">
/// <item><c>from index 'X'</c>: the static (or auto) index's postings narrow the candidates
/// (<see cref="CandidateFinder"/>); each candidate is checked against its index entry (the field
/// values the map produced), re-mapped from the current document when that changed after indexing.</item>
/// <item><c>from 'Coll' where/order by ...</c>: the auto index covering those fields, created or
/// widened on first use (docs/architecture.md); a query that created one waits for it
/// (bounded) so the first answer is not silently partial.</item>
/// <item><c>from 'Coll'</c> without where/order by fields, and <c>from @all_docs</c>: a scan of the
/// collection in one snapshot, never stale.</item>
/// </list>
/// Matches are then sorted, projected, de-duplicated and paged the same way for every source.
/// Semantics (docs/http-api.md "Queries"): a field that holds an array matches when any element
/// does; numbers compare as numbers; strings compare case-insensitively (lower-cased, by code
/// point) except on Exact fields of static indexes; a missing field equals null; search() matches
/// any analyzed term (lower-cased words, * wildcards at either end).
/// Thread-safety: one instance per query.
/// </summary>
public sealed partial class QueryRunner
{
    /// <summary>How long a query that had to create or widen an auto index waits for it (RavenDB's 15 s).</summary>
    public static readonly TimeSpan AutoIndexWait = TimeSpan.FromSeconds(15);

    private readonly Database _db;
    private readonly RqlQuery _query;
    private readonly JsonElement _parameters;
    private readonly Dictionary<RqlValue, JsonElement> _resolved = new(ReferenceEqualityComparer.Instance);
    private CompiledIndex? _compiled;
    private bool _stale;
    private bool _inStep; // the index's snapshot holds exactly the query's database snapshot: every entry is its document's
    private int _skip, _take;
    private long? _exactTotal;
    private Dictionary<RqlExpression, SearchHits>? _searchHits; // from the index's candidates, per search() and moreLikeThis()
    private readonly Dictionary<RqlMethod, SearchQuery> _searchQueries = new(ReferenceEqualityComparer.Instance);
    private List<FacetPlan>? _facets;
    private bool _presorted; // the rows come ranked already (TopByDocValues)
    private FacetAccumulator? _facetCounts;
    private QueryTimings? _timings;
    private Lucene.Net.Index.IndexReader? _heldReader; // a reference kept for explanations() and page scores computed late, given back when the query ends
    private Lucene.Net.Search.Query? _explainQuery;
    private AnswerIncludes? _facetIncludes; // a facet query's include clause

    private QueryRunner(Database db, RqlQuery query, JsonElement parameters)
    {
        _db = db;
        _query = query;
        _parameters = parameters;
    }

    private Memory.MemoryBudget.Lease? _memory; // the request's: results collected are charged to it

    /// <summary>Runs <paramref name="query"/> with <paramref name="parameters"/> (an object, or undefined/null).</summary>
    /// <param name="db">The database.</param>
    /// <param name="query">The parsed query.</param>
    /// <param name="parameters">QueryParameters of the request.</param>
    /// <param name="options">Paging defaults and staleness wishes from the request.</param>
    /// <param name="cancellation">The request's cancellation.</param>
    public static async Task<QueryAnswer> RunAsync(Database db, RqlQuery query, JsonElement parameters, QueryOptions options, CancellationToken cancellation)
    {
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(query);
        var runner = new QueryRunner(db, query, parameters) { _timings = query.Timings ? new QueryTimings() : null, _projectionBehavior = options.ProjectionBehavior, _memory = options.Memory };
        int skip = query.Skip != null ? runner.ToInt(query.Skip, "skip") : options.Start ?? 0;
        int take = query.Take != null ? runner.ToInt(query.Take, "take") : options.PageSize ?? int.MaxValue;
        if (skip < 0 || take < 0)
            throw new InvalidQueryException("limit skip and take must not be negative.");
        if (query.Where != null)
            runner.ResolveAll(query.Where); // a missing or mistyped parameter is a 400 even when nothing would be read
        if (query.Filter != null)
            runner.ResolveAll(query.Filter);
        if (query.Facets.Count > 0)
            runner._facets = FacetPlan.Resolve(query.Facets, runner.Resolve, runner.LoadJson);
        return await runner.WithIndexAsync(options, index => runner.Execute(index, skip, take), cancellation).ConfigureAwait(false);
    }

    /// <summary>
    /// The ids of the documents <paramref name="query"/> matches, in the order its index (or collection) holds them:
    /// what an operation by query (patch, delete) works on. Order, paging and projections do not apply.
    /// </summary>
    public static async Task<List<string>> MatchingIdsAsync(Database db, RqlQuery query, JsonElement parameters, QueryOptions options, CancellationToken cancellation)
    {
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(query);
        if (query.GroupBy.Count > 0 || query.Facets.Count > 0 || query.Suggestions.Count > 0)
            throw new InvalidQueryException("An operation by query works on documents; group by, facets and suggestions do not give documents.");
        var runner = new QueryRunner(db, query, parameters);
        if (query.Where != null)
            runner.ResolveAll(query.Where);
        return await runner.WithIndexAsync(options, runner.MatchingIds, cancellation).ConfigureAwait(false);
    }

    private List<string> MatchingIds(Indexing.Index? index)
    {
        if (index?.Compiled.StoresAnswers == true)
            throw new InvalidQueryException($"Index '{index.Name}' is a {(index.Compiled.IsMapReduce ? "map-reduce" : index.Compiled.SourceType == Indexing.IndexSourceType.Counters ? "counters" : "time-series")} index: its results are not documents to patch or delete.");
        _compiled = index?.Compiled;
        (_skip, _take) = (0, int.MaxValue);
        var ids = new List<string>();
        using var dbTx = _db.Environment.ReadTransaction();
        foreach (var row in index == null ? ScanRows(dbTx) : IndexRows(index, dbTx, out _))
        {
            using (row)
            {
                if ((_query.Where == null || Evaluate(_query.Where, row)) && Filtered(row) && row.Bind(_db.Documents).Document is { } doc)
                    ids.Add(doc.Id);
            }
        }
        return ids;
    }

    /// <summary>Chooses the index (creating an auto index when needed), waits as <paramref name="options"/> ask, and runs <paramref name="execute"/> holding it.</summary>
    private async Task<T> WithIndexAsync<T>(QueryOptions options, Func<Indexing.Index?, T> execute, CancellationToken cancellation)
    {
        var runner = this;
        var db = _db;
        for (int attempt = 0; ; attempt++)
        {
            var index = runner.ChooseIndex(out bool created);
            if (index == null)
                return execute(null);
            if (created || options.WaitForNonStale)
            {
                bool caughtUp = await index.WaitForNonStaleAsync(options.WaitForNonStale ? options.WaitTimeout : AutoIndexWait, cancellation).ConfigureAwait(false);
                if (!caughtUp && options.WaitForNonStale)
                    throw new TimeoutException($"Waited for {options.WaitTimeout} for the query to return non stale results from index '{index.Name}'.");
                if (caughtUp && created && index.Definition.IsAuto)
                    db.Indexes.RetireSuperseded(index);
                if (caughtUp)
                    index.FirstBuildPending = false;
            }
            if (!index.TryAcquire())
            {
                // Retired by a wider auto index, deleted or being reset meanwhile: choose again.
                if (attempt < 3)
                    continue;
                throw new UnavailableException(RavenExceptionTypes.DatabaseLoadFailure, $"Index '{index.Name}' is being reset or deleted; retry the query.");
            }
            try
            {
                return execute(index);
            }
            finally
            {
                index.Release();
            }
        }
    }

    /// <summary>A document's JSON (a clone, valid after the read), or null when there is none.</summary>
    private JsonElement? LoadJson(string id)
    {
        using var tx = _db.Environment.ReadTransaction();
        var doc = _db.Documents.Get(tx, id);
        if (doc == null)
            return null;
        using var parsed = JsonDocument.Parse(doc.Json);
        return parsed.RootElement.Clone();
    }

    private QueryAnswer Execute(Indexing.Index? index, int skip, int take)
    {
        if (_query.Suggestions.Count > 0)
            return Suggest(index);
        _compiled = index?.Compiled;
        (_skip, _take) = (skip, take);
        (_exactTotal, _presorted) = (null, false); // set by the index paths as the rows begin
        var matches = new List<Row>();
        // Without order by, moreLikeThis() answers the most similar first (as RavenDB: Lucene's relevance order).
        bool byRelevance = _query.OrderBy.Count == 0 && HasMoreLikeThis;
        var facets = _facetCounts = _facets == null ? null : new FacetAccumulator(_facets, Evaluate, FacetTerms, p => _compiled == null || p.IsId || _compiled.Field(p.ToString()) != null);
        // A sorted page keeps only its best skip+take matches as they come (never sorting them all).
        long limit = (long)skip + take;
        var top = _query.OrderBy.Count > 0 && !_query.Distinct && facets == null && limit <= TopRowsLimit ? new TopRows(this, (int)limit) : null;
        try
        {
            // One database snapshot for the whole answer: a match's document is read (copied out) only when
            // it is answered, projected or needed to sort, not for every match of a sorted query.
            using var dbTx = _db.Environment.ReadTransaction();
            long lastEtag = DocumentsStorage.LastEtag(dbTx);
            long phase = Stopwatch.GetTimestamp();
            // A facet query's matches are let go as they are counted: what they include is noted meanwhile.
            _facetIncludes = facets != null && _query.Include.Count > 0 ? new AnswerIncludes(this, dbTx) : null;
            var (total, stale) = CollectMatches(index, dbTx, matches, facets, top, byRelevance, limit);
            if (top != null && !_presorted)
                matches = top.Ranked();
            _timings?.Add("Query", phase);
            if (_exactTotal is { } exactTotal)
            {
                // Only the page was read (it starts at skip).
                total = exactTotal;
                skip = 0;
            }
            string indexName = index?.Name ?? (_query.Source.AllDocs ? "AllDocs" : "collection/" + _query.Source.Collection);
            if (facets != null)
            {
                phase = Stopwatch.GetTimestamp();
                var facetResults = facets.Results();
                _timings?.Add("Facets", phase);
                var included = _facetIncludes?.ReadDocuments() ?? new Dictionary<string, StoredDocument?>();
                return new QueryAnswer(facetResults.ConvertAll(r => (ResultJson)r), total, included, lastEtag, indexName, stale, index?.LastIndexingTime) { WriteExtras = _timings == null ? null : _timings.Write };
            }
            phase = Stopwatch.GetTimestamp();
            if (_query.OrderBy.Count > 0 && !_presorted && top == null)
                matches = Sort(matches);
            else if (byRelevance)
                matches = [.. matches.OrderByDescending(Score)];
            if (_query.OrderBy.Count > 0 || byRelevance)
                _timings?.Add("Sort", phase);
            return AnswerPage(matches, skip, take, total, dbTx, new AnswerHeader(lastEtag, indexName, stale, index?.LastIndexingTime));
        }
        finally
        {
            _heldReader?.DecRef();
            _heldReader = null;
            foreach (var row in matches)
                row.Dispose();
            top?.Dispose();
        }
    }

    /// <summary>What an answer says of where it came from.</summary>
    private readonly record struct AnswerHeader(long LastEtag, string IndexName, bool Stale, DateTime? LastIndexingTime);

    /// <summary>
    /// Reads the candidate rows (the index's, or a collection scan's) and keeps the matches: counted into
    /// <paramref name="facets"/>, offered to <paramref name="top"/> (a sorted page), or collected into
    /// <paramref name="matches"/> (all of them when they must be sorted, deduplicated or ranked; else the page's).
    /// Returns the match count and whether the index was stale.
    /// </summary>
    private (long Total, bool Stale) CollectMatches(Indexing.Index? index, Storage.Transactions.Transaction dbTx, List<Row> matches,
        FacetAccumulator? facets, TopRows? top, bool byRelevance, long limit)
    {
        bool needAll = _query.OrderBy.Count > 0 || _query.Distinct || byRelevance;
        long total = 0;
        bool stale = false;
        foreach (var row in index == null ? ScanRows(dbTx) : IndexRows(index, dbTx, out stale))
        {
            bool keep = Kept(row);
            if (keep)
                total++;
            if (facets != null)
            {
                // A facet query answers counts: each match is counted and let go.
                if (keep)
                {
                    facets.Add(row);
                    _facetIncludes?.Add(row.Bind(_db.Documents));
                }
                row.Dispose();
                continue;
            }
            if (keep && top != null && !_presorted) // presorted rows are the page, in order already (set with the first row)
                top.Offer(row.Bind(_db.Documents));
            else if (keep && (needAll || matches.Count < limit))
                matches.Add(row.Bind(_db.Documents));
            else
                row.Dispose();
        }
        return (total, stale);
    }

    /// <summary>
    /// The answer of the page <paramref name="skip"/>..<paramref name="take"/> of <paramref name="matches"/> (in their
    /// final order): each projected (distinct ones only, when asked), with its includes, highlights and explanations.
    /// </summary>
    private QueryAnswer AnswerPage(List<Row> matches, int skip, int take, long total, Storage.Transactions.Transaction dbTx, AnswerHeader header)
    {
        long phase = Stopwatch.GetTimestamp();
        var highlights = _query.Highlights.Count == 0 ? null : new HighlightCollector(_query.Highlights, Resolve, SearchOn, AnalyzerOf);
        var explanations = _query.Explanations == null ? null : new Dictionary<string, List<string>>(StringComparer.Ordinal);
        string? groupKey = ExplanationGroupKey();
        var includes = new AnswerIncludes(this, dbTx);
        var results = new List<ResultJson>();
        var seen = _query.Distinct ? new HashSet<string>(StringComparer.Ordinal) : null;
        int skipped = 0;
        long distinctTotal = 0;
        using var projection = NewProjection(dbTx);
        foreach (var row in matches)
        {
            if (seen == null && (skipped < skip || results.Count >= take))
            {
                // Outside the page and no distinct: nothing of it is needed.
                if (results.Count >= take)
                    break;
                skipped++;
                continue;
            }
            projection?.IncludedDocuments.Clear(); // what a projection includes counts for the rows answered only
            projection?.IncludedCompareExchange.Clear();
            var output = Output(row, projection, dbTx);
            if (seen != null && !seen.Add(Encoding.UTF8.GetString(ProjectionKey(output.Json))))
                continue;
            distinctTotal++;
            if (skipped < skip)
            {
                skipped++;
                continue;
            }
            if (results.Count >= take)
                continue;
            results.Add(output);
            _memory?.Add(output.Length + 24);
            highlights?.Add(row, row.Document!.Id);
            if (explanations != null && _explainQuery != null && _heldReader != null && row.IndexEntry >= 0)
            {
                // Keyed by the document's id, or (a map-reduce answer has none) by the GroupKey option's field of the result.
                string key = groupKey != null && row.DocumentJson.TryGetProperty(groupKey, out var k) ? (k.ValueKind == JsonValueKind.String ? k.GetString()! : k.GetRawText()) : row.Document!.Id;
                if (!explanations.TryGetValue(key, out var texts))
                    explanations[key] = texts = [];
                texts.Add(new Lucene.Net.Search.IndexSearcher(_heldReader).Explain(_explainQuery, (int)row.IndexEntry).ToString());
            }
            includes.Add(row);
            if (projection != null)
                includes.AddFromProjection(projection);
        }
        _timings?.Add("Projection", phase);
        phase = Stopwatch.GetTimestamp();
        var included = includes.ReadDocuments();
        if (included.Count > 0)
            _timings?.Add("Includes", phase);
        var timings = _timings;
        var counterIncludes = includes.Counters;
        var timeSeriesIncludes = includes.Extra;
        var tagParts = new List<string?>();
        counterIncludes?.AddTagParts(tagParts);
        timeSeriesIncludes?.AddTagParts(tagParts);
        return new QueryAnswer(results, seen != null ? distinctTotal : total, included, header.LastEtag, header.IndexName, header.Stale, header.LastIndexingTime)
        {
            IncludeTagParts = tagParts,
            WriteExtras = highlights == null && timings == null && explanations == null && counterIncludes == null && timeSeriesIncludes == null ? null : w =>
            {
                counterIncludes?.Write(w, names: true);
                timeSeriesIncludes?.Write(w);
                highlights?.Write(w);
                if (explanations != null)
                    WriteExplanations(w, explanations);
                timings?.Write(w);
            },
        };
    }

    private static void WriteExplanations(Utf8JsonWriter w, Dictionary<string, List<string>> explanations)
    {
        w.WriteStartObject("Explanations");
        foreach (var (key, texts) in explanations)
        {
            w.WriteStartArray(key);
            foreach (string text in texts)
                w.WriteStringValue(text);
            w.WriteEndArray();
        }
        w.WriteEndObject();
    }

    /// <summary>
    /// <c>include explanations($options)</c> with RavenDB's ExplanationOptions <c>{GroupKey: "Field"}</c>: the field whose
    /// value keys each explanation (map-reduce answers have no id); null for none. Other options are a 400.
    /// </summary>
    private string? ExplanationGroupKey()
    {
        if (_query.Explanations is not { } options || (options.Parameter == null && options.Literal == null))
            return null;
        var value = Resolve(options);
        if (value.ValueKind == JsonValueKind.Null)
            return null;
        if (value.ValueKind != JsonValueKind.Object)
            throw new InvalidQueryException($"Invalid query at position {options.Position}: explanations() takes ExplanationOptions {{GroupKey}}, got {value.GetRawText()}.");
        foreach (var p in value.EnumerateObject())
        {
            if (!p.Name.Equals("GroupKey", StringComparison.OrdinalIgnoreCase))
                throw new InvalidQueryException($"Invalid query at position {options.Position}: '{p.Name}' is not an explanations() option (GroupKey).");
            if (p.Value.ValueKind is JsonValueKind.String)
                return p.Value.GetString();
            if (p.Value.ValueKind != JsonValueKind.Null)
                throw new InvalidQueryException($"Invalid query at position {options.Position}: GroupKey is a field name, got {p.Value.GetRawText()}.");
        }
        return null;
    }
}
