using RavenLite.Server.Formatting;
using RavenLite.Server.Memory;
using RavenLite.Server.Errors;
using System.Diagnostics;
using System.Globalization;
using System.Text;
using System.Text.Json;
using RavenLite.Server.Documents;
using RavenLite.Server.Databases;
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
        if (index?.Compiled.IsMapReduce == true)
            throw new InvalidQueryException($"Index '{index.Name}' is a map-reduce index: its results are not documents to patch or delete.");
        _compiled = index?.Compiled;
        (_skip, _take) = (0, int.MaxValue);
        var ids = new List<string>();
        using var dbTx = _db.Environment.ReadTransaction();
        foreach (var row in index == null ? ScanRows(dbTx) : IndexRows(index, dbTx, out _))
        {
            using (row)
            {
                if ((_query.Where == null || Evaluate(_query.Where, row)) && row.Bind(_db.Documents).Document is { } doc)
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

    /// <summary>The index the query reads, or null for a scan.</summary>
    private Indexing.Index? ChooseIndex(out bool created)
    {
        created = false;
        if (_query.Source.Index is { } name)
        {
            var index = _db.Indexes.Get(name) ?? throw new NotFoundException(RavenExceptionTypes.IndexDoesNotExist, $"Index '{name}' does not exist.");
            CheckFieldsIndexed(index.Compiled);
            return index;
        }
        if (_query.Source.AllDocs)
            return null;
        if (_query.GroupBy.Count > 0)
        {
            var (reduced, createdNow) = _db.Indexes.GetOrCreateAutoMapReduce(_query.Source.Collection!, _query.GroupBy, _query.GroupSums);
            created = createdNow;
            return reduced;
        }
        var fields = QueryFields();
        if (fields.Count == 0)
            return null;
        var (auto, isNew) = _db.Indexes.GetOrCreateAuto(_query.Source.Collection!, fields.Select(kv => new AutoField(kv.Key, kv.Value)).ToList());
        created = isNew;
        return auto;
    }

    /// <summary>The document fields the where clause and order by use (not id()), each with "used by search()".</summary>
    private Dictionary<string, bool> QueryFields()
    {
        var fields = new Dictionary<string, bool>(StringComparer.Ordinal);
        if (_query.Where != null)
            CollectFields(_query.Where, fields);
        foreach (var o in _query.OrderBy)
        {
            if (o.Field is { IsId: false } f)
                fields.TryAdd(f.ToString(), false);
            foreach (var p in o.DistanceOf?.Paths() ?? [])
                fields.TryAdd(p.ToString(), false);
        }
        foreach (var sg in _query.Suggestions)
            if (!sg.Field.IsId)
                fields.TryAdd(sg.Field.ToString(), false);
        foreach (var path in _facets?.SelectMany(f => f.Fields()) ?? [])
            if (!path.IsId)
                fields.TryAdd(path.ToString(), false);
        return fields;
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

    private static void CollectFields(RqlExpression e, Dictionary<string, bool> fields)
    {
        void Add(RqlPath p, bool search)
        {
            if (p.IsId)
                return;
            string name = p.ToString();
            fields[name] = fields.GetValueOrDefault(name) || search;
        }
        switch (e)
        {
            case RqlBinary b:
                CollectFields(b.Left, fields);
                CollectFields(b.Right, fields);
                break;
            case RqlNot n:
                CollectFields(n.Operand, fields);
                break;
            case RqlCompare c:
                Add(c.Field, false);
                break;
            case RqlBetween bt:
                Add(bt.Field, false);
                break;
            case RqlIn i:
                Add(i.Field, false);
                break;
            case RqlMethod m:
                Add(m.Field, m.Name == "search");
                break;
            case RqlSpatial sp:
                foreach (var p in sp.Target.Paths())
                    Add(p, false);
                break;
        }
    }

    /// <summary>400 when a static index is queried or sorted on a field its map does not output.</summary>
    private void CheckFieldsIndexed(CompiledIndex compiled)
    {
        foreach (string name in QueryFields().Keys)
            if (compiled.Field(name) == null)
                throw new InvalidQueryException($"The field '{name}' is not indexed by index '{_query.Source.Index}'; its fields are: {string.Join(", ", compiled.Fields.Select(x => x.Name))}.");
    }

    private QueryAnswer Execute(Indexing.Index? index, int skip, int take)
    {
        if (_query.Suggestions.Count > 0)
            return Suggest(index);
        _compiled = index?.Compiled;
        (_skip, _take) = (skip, take);
        (_exactTotal, _presorted) = (null, false); // set by the index paths as the rows begin
        var condition = _query.Where;
        var matches = new List<Row>();
        long total = 0;
        bool stale = false;
        // Without order by, moreLikeThis() answers the most similar first (as RavenDB: Lucene's relevance order).
        bool byRelevance = _query.OrderBy.Count == 0 && HasMoreLikeThis;
        bool needAll = _query.OrderBy.Count > 0 || _query.Distinct || byRelevance;
        var facets = _facetCounts = _facets == null ? null : new FacetAccumulator(_facets, Evaluate, FacetTerms);
        // A sorted page keeps only its best skip+take matches as they come (never sorting them all).
        long limit = (long)skip + take;
        var top = _query.OrderBy.Count > 0 && !_query.Distinct && facets == null && limit <= TopRowsLimit ? new TopRows(this, (int)limit) : null;
        var highlights = _query.Highlights.Count == 0 ? null : new HighlightCollector(_query.Highlights, Resolve, SearchOn, AnalyzerOf);
        try
        {
            // One database snapshot for the whole answer: a match's document is read (copied out) only when
            // it is answered, projected or needed to sort, not for every match of a sorted query.
            using var dbTx = _db.Environment.ReadTransaction();
            long lastEtag = DocumentsStorage.LastEtag(dbTx);
            long phase = Stopwatch.GetTimestamp();
            foreach (var row in index == null ? ScanRows(dbTx) : IndexRows(index, dbTx, out stale))
            {
                bool keep = Matches(condition, row);
                if (keep)
                    total++;
                if (facets != null)
                {
                    // A facet query answers counts: each match is counted and let go.
                    if (keep)
                        facets.Add(row);
                    row.Dispose();
                    continue;
                }
                if (keep && top != null && !_presorted) // presorted rows are the page, in order already (set with the first row)
                    top.Offer(row.Bind(_db.Documents));
                else if (keep && (needAll || matches.Count < (long)skip + take))
                    matches.Add(row.Bind(_db.Documents));
                else
                    row.Dispose();
            }
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
                return new QueryAnswer(facetResults.ConvertAll(r => (ResultJson)r), total, new Dictionary<string, StoredDocument?>(), lastEtag, indexName, stale, index?.LastIndexingTime) { WriteExtras = _timings == null ? null : _timings.Write };
            }
            phase = Stopwatch.GetTimestamp();
            if (_query.OrderBy.Count > 0 && !_presorted && top == null)
                matches = Sort(matches);
            else if (byRelevance)
                matches = [.. matches.OrderByDescending(Score)];
            if (_query.OrderBy.Count > 0 || byRelevance)
                _timings?.Add("Sort", phase);
            phase = Stopwatch.GetTimestamp();
            var explanations = _query.Explanations == null ? null : new Dictionary<string, string>(StringComparer.Ordinal);
            var results = new List<ResultJson>();
            var seen = _query.Distinct ? new HashSet<string>(StringComparer.Ordinal) : null;
            int skipped = 0;
            long distinctTotal = 0;
            var included = new Dictionary<string, StoredDocument?>(StringComparer.OrdinalIgnoreCase);
            var timeSeriesIncludes = _query.TimeSeriesIncludes.Count == 0 ? null // also carries include cmpxchg(..)
                : ExtraIncludes.ForRanges(_query.TimeSeriesIncludes.Select(t => t.LastValue == null
                    ? (ResolveString(t.Name), TimeOf(t.From, 0), TimeOf(t.To, long.MaxValue), (int?)null)
                    : t.LastUnit == null
                        ? (ResolveString(t.Name), 0L, long.MaxValue, (int?)ToInt(t.LastValue, "count"))
                        : (ResolveString(t.Name), ExtraIncludes.LastSince(Resolve(t.LastValue).GetRawText(), ResolveString(t.LastUnit)), long.MaxValue, (int?)null)));
            var counterIncludes = _query.CounterIncludes.Count == 0 ? null
                : new Counters.CounterIncludes(_query.CounterIncludes.Select(c => c.Name == null ? Counters.CounterIncludes.All : ResolveString(c.Name)));
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
                    explanations[row.Document!.Id] = new Lucene.Net.Search.IndexSearcher(_heldReader).Explain(_explainQuery, (int)row.IndexEntry).ToString();
                foreach (string path in _query.Include)
                {
                    var ids = new List<string>();
                    IncludePaths.Collect(row.DocumentJson, path, ids);
                    foreach (string id in ids)
                        included.TryAdd(id, null);
                }
                if (timeSeriesIncludes != null)
                {
                    foreach (var ti in _query.TimeSeriesIncludes)
                    {
                        if (ti.Path == null)
                        {
                            timeSeriesIncludes.Add(dbTx, _db.Documents, row.Document!);
                            continue;
                        }
                        var ids = new List<string>();
                        IncludePaths.Collect(row.DocumentJson, ti.Path.Text, ids);
                        foreach (string id in ids)
                            if (_db.Documents.Get(dbTx, id) is { } referenced)
                                timeSeriesIncludes.Add(dbTx, _db.Documents, referenced);
                    }
                }
                if (_query.CompareExchangeIncludes.Count > 0)
                {
                    timeSeriesIncludes ??= ExtraIncludes.ForRanges([]);
                    foreach (var ci in _query.CompareExchangeIncludes)
                    {
                        if (ci.Key != null)
                        {
                            timeSeriesIncludes.AddCompareExchange(dbTx, ResolveString(ci.Key));
                            continue;
                        }
                        var keys = new List<JsonElement>();
                        JsonPaths.Walk(row.DocumentJson, ci.Path!.Parts, 0, keys);
                        foreach (var k in keys)
                            if (k.ValueKind == JsonValueKind.String)
                                timeSeriesIncludes.AddCompareExchange(dbTx, k.GetString()!);
                    }
                }
                if (counterIncludes != null)
                {
                    foreach (var ci in _query.CounterIncludes)
                    {
                        if (ci.Path == null)
                        {
                            counterIncludes.Add(dbTx, _db.Documents, row.Document!.Id);
                            continue;
                        }
                        var ids = new List<string>();
                        IncludePaths.Collect(row.DocumentJson, ci.Path.Text, ids);
                        foreach (string id in ids)
                            counterIncludes.Add(dbTx, _db.Documents, id);
                    }
                }
            }
            _timings?.Add("Projection", phase);
            phase = Stopwatch.GetTimestamp();
            foreach (string id in included.Keys.ToList())
                included[id] = _db.Documents.Get(dbTx, id);
            if (included.Count > 0)
                _timings?.Add("Includes", phase);
            var timings = _timings;
            return new QueryAnswer(results, seen != null ? distinctTotal : total, included, lastEtag, indexName, stale, index?.LastIndexingTime)
            {
                HasVolatileIncludes = counterIncludes != null || timeSeriesIncludes != null,
                WriteExtras = highlights == null && timings == null && explanations == null && counterIncludes == null && timeSeriesIncludes == null ? null : w =>
                {
                    counterIncludes?.Write(w, names: true);
                    timeSeriesIncludes?.Write(w);
                    highlights?.Write(w);
                    if (explanations != null)
                    {
                        w.WriteStartObject("Explanations");
                        foreach (var (id, text) in explanations)
                        {
                            w.WriteStartArray(id);
                            w.WriteStringValue(text);
                            w.WriteEndArray();
                        }
                        w.WriteEndObject();
                    }
                    timings?.Write(w);
                },
            };
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

    /// <summary>The JavaScript projection the query's <c>select { }</c> or <c>load</c> needs, reading from <paramref name="dbTx"/>; else null.</summary>
    private JavaScriptProjection? NewProjection(Storage.Transactions.Transaction dbTx) =>
        _query.SelectScript != null || _query.Loads.Count > 0 ? new JavaScriptProjection(_query, _parameters, id => _db.Documents.Get(dbTx, id), key => CompareExchange.CompareExchangeStore.GetObject(dbTx, key),
            (id, name, raw) => CounterJson(dbTx, id, name, raw)) : null;

    /// <summary>What the answer holds for a kept row: the document, or its projection, with <c>@index-score</c> when searched.</summary>
    private ResultJson Output(Row row, JavaScriptProjection? projection, Storage.Transactions.Transaction dbTx)
    {
        byte[] output = projection != null ? projection.Project(row.Document!, row.DocumentJson)
            : _query.TimeSeries.Count > 0 ? ProjectTimeSeries(row.Document!, dbTx)
            : _query.Select.Count > 0 ? Project(row) : row.Document!.Json;
        return _searchHits is { Count: > 0 } ? new ResultJson(output, Score(row)) : output;
    }

    /// <summary>Every document of the source collection, in etag order.</summary>
    private IEnumerable<Row> ScanRows(Storage.Transactions.Transaction dbTx)
    {
        if (HasMoreLikeThis)
            throw new InvalidQueryException("moreLikeThis() reads an index's terms: query a static index (from index 'Name').");
        foreach (var doc in _db.Documents.Scan(dbTx, _query.Source.AllDocs ? null : _query.Source.Collection))
            yield return Row.ForDocument(doc);
    }

    /// <summary>A reduce result as a query answers it: its properties and an empty <c>@metadata</c> (no id: it is no document).</summary>
    private static byte[] ReduceResultJson(ReadOnlySpan<byte> result)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(result.Length + 16);
        using (var w = new Utf8JsonWriter(buffer))
        {
            using var parsed = JsonDocument.Parse(result.ToArray());
            w.WriteStartObject();
            foreach (var p in parsed.RootElement.EnumerateObject())
                p.WriteTo(w);
            w.WriteStartObject("@metadata");
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>The index's candidate entries (index order) whose documents still exist in the snapshot.</summary>
    private IEnumerable<Row> IndexRows(Indexing.Index index, Storage.Transactions.Transaction dbTx, out bool stale)
    {
        var snapshot = index.AcquireSnapshot();
        try
        {
            long since = Stopwatch.GetTimestamp();
            var target = index.TargetOf(dbTx);
            stale = _stale = Indexing.Index.IsBehind(snapshot.Position, target);
            // The index may also be ahead of this query's database snapshot (it indexed writes committed after the
            // snapshot began): then an entry can hold a newer value than the document the query reads.
            _inStep = !_stale && !Indexing.Index.IsBehind(target, snapshot.Position);
            _timings?.Add("Staleness", since);
        }
        catch
        {
            Indexing.Index.ReleaseSnapshot(snapshot);
            throw;
        }
        return Rows(index, snapshot, dbTx);
    }

    private IEnumerable<Row> Rows(Indexing.Index index, Indexing.IndexSnapshot snapshot, Storage.Transactions.Transaction dbTx)
    {
        try
        {
            var reader = snapshot.Reader;
            var docs = DocumentsStorage.Docs(dbTx);
            // Every hit's score is needed to order by it (score(), or moreLikeThis() without order by); else only the page's.
            bool allScores = _query.OrderBy.Any(o => o.Type == RqlOrderType.Score) || (_query.OrderBy.Count == 0 && HasMoreLikeThis);
            var finder = new CandidateFinder(index.Compiled, reader, Resolve, MoreLikeThisQueries(index.Compiled, reader, dbTx), sp => ShapeOf(sp.Shape, Miles(sp.Target)), allScores);
            _searchHits = finder.SearchHits;
            var entries = new EntryReader(reader);
            long since = Stopwatch.GetTimestamp();
            // A number range ordered by its own field, from an index in step with the snapshot: the page straight from the terms.
            var ranged = _inStep && !_query.Distinct && _facets == null ? TopByNumberTerms(index.Compiled, reader) : null;
            // An exact answer with no order (and no facets, distinct or scores for all) is counted and read a page at a time: a lone
            // search() keeps only the hits up to the page's end.
            bool unorderedPage = _inStep && _query.OrderBy.Count == 0 && !_query.Distinct && _facets == null;
            var candidates = ranged == null ? finder.Find(_query.Where, unorderedPage && !allScores ? (int)Math.Min((long)_skip + _take, int.MaxValue) : int.MaxValue) : null;
            _timings?.Add("Lucene", since);
            if (_query.Explanations != null && finder.LuceneQueries.Count > 0)
            {
                // explanations(): Lucene's account of each answered entry's score under the query's search()/moreLikeThis().
                var explain = new Lucene.Net.Search.BooleanQuery();
                foreach (var q in finder.LuceneQueries)
                    explain.Add(q, Lucene.Net.Search.Occur.SHOULD);
                _explainQuery = explain;
            }
            if (finder.LuceneQueries.Count > 0 && _heldReader == null)
            {
                // The page's scores (and explanations) are computed after the rows are read: keep the reader open till then.
                reader.IncRef();
                _heldReader = reader;
            }
            IEnumerable<long> ids = candidates ?? AllEntryIds(reader);
            if (ranged is { } page)
            {
                (_exactTotal, _presorted) = (page.Total, true);
                ids = page.Page;
            }
            else if (candidates != null && finder.Exact && unorderedPage)
            {
                // Exact candidates from an index in step with the snapshot: they are the matches, in order;
                // count them and read only the page.
                _exactTotal = finder.Total;
                ids = candidates.Skip(_skip).Take(_take);
            }
            else if (candidates != null && candidates.Count < finder.Total)
            {
                throw new InvalidOperationException("The query kept only a page of its candidates but does not answer a page of them.");
            }
            else if (_facetCounts != null && (candidates == null ? _query.Where == null : finder.Exact) && _inStep
                && _facetCounts.TryAddFromIndex(reader, index.Compiled, MatchSet(reader, candidates), Resolve))
            {
                // Exact matches of an index in step with the snapshot: the facets were counted from its terms and doc values.
                _exactTotal = candidates?.Count ?? reader.NumDocs;
                yield break;
            }
            else if ((candidates == null ? _query.Where == null : finder.Exact) && _inStep && !_query.Distinct && _facets == null
                && TopByDocValues(index.Compiled, reader, candidates) is { } top)
            {
                // Exact matches (or every entry) of an index in step with the snapshot, ordered by numeric sort doc values:
                // only the page's entries are read, already in order.
                (_exactTotal, _presorted) = (top.Total, true);
                ids = top.Page;
            }
            if (index.Compiled.IsMapReduce)
            {
                // Reduce results are the answers themselves (no documents behind them).
                foreach (long entryId in ids)
                {
                    var (lowerId, _, indexed) = entries.Read((int)entryId);
                    var result = reader.Document((int)entryId).GetBinaryValue(Indexing.Index.ReduceResultField);
                    var answer = new StoredDocument("", Documents.Collections.Empty, 0, "", index.LastIndexingTime ?? DateTime.UtcNow, ReduceResultJson(result.Bytes.AsSpan(result.Offset, result.Length)));
                    yield return Row.ForEntry(indexed, lowerId, answer, changed: false, docs, entryId);
                }
                yield break;
            }
            foreach (long entryId in ids)
            {
                var (lowerId, entryEtag, indexed) = entries.Read((int)entryId);
                if (!docs.TryGet(lowerId, out var record))
                    continue; // deleted after it was indexed
                long docEtag = DocumentRecord.Etag(record);
                if (docEtag == entryEtag)
                {
                    // Rows of a page already chosen are all answered: read the document now, not looked up again later.
                    var answered = _exactTotal != null ? DocumentRecord.Read(record, _db.Documents) : null;
                    yield return Row.ForEntry(indexed, lowerId, answered, changed: false, docs, entryId);
                    continue;
                }
                // Changed after it was indexed: check the current version, mapped the same way.
                var current = DocumentRecord.Read(record, _db.Documents);
                byte[] entry;
                using (var parsed = JsonDocument.Parse(current.Json))
                    entry = index.Compiled.EntryOrEmpty(parsed.RootElement, current.Collection, current.Id, Indexing.DocumentLoaders.From(_db.Documents, dbTx));
                yield return Row.ForEntry(entry, lowerId, current, changed: true, docs, entryId);
            }
        }
        finally
        {
            Indexing.Index.ReleaseSnapshot(snapshot);
        }
    }

    /// <summary>
    /// Whether a row satisfies the where clause. The rows of a page chosen and counted from an index in step with the
    /// snapshot (<see cref="_exactTotal"/> set) are matches by construction and are not checked again, unless the
    /// document changed since it was indexed.
    /// </summary>
    private bool Matches(RqlExpression? condition, Row row) => condition == null || (_exactTotal != null && row.EntryNumber >= 0) || Evaluate(condition, row);

    /// <summary>The where clause has a moreLikeThis() (answered by relevance unless ordered; only from an index).</summary>
    private bool HasMoreLikeThis => _hasMoreLikeThis ??= Find<RqlMoreLikeThis>(_query.Where).Any();

    private bool? _hasMoreLikeThis;

    /// <summary>Every condition of type <typeparamref name="T"/> in <paramref name="e"/> (not inside moreLikeThis()).</summary>
    private static IEnumerable<T> Find<T>(RqlExpression? e) where T : RqlExpression
    {
        switch (e)
        {
            case T t:
                yield return t;
                break;
            case RqlBinary b:
                foreach (var x in Find<T>(b.Left).Concat(Find<T>(b.Right)))
                    yield return x;
                break;
            case RqlNot n:
                foreach (var x in Find<T>(n.Operand))
                    yield return x;
                break;
        }
    }

    /// <summary>The candidates as a set of document numbers (null: every live entry).</summary>
    private static Lucene.Net.Util.FixedBitSet? MatchSet(Lucene.Net.Index.IndexReader reader, List<long>? candidates)
    {
        if (candidates == null)
            return null;
        var set = new Lucene.Net.Util.FixedBitSet(Math.Max(1, reader.MaxDoc));
        foreach (long c in candidates)
            set.Set((int)c);
        return set;
    }

    private static IEnumerable<long> AllEntryIds(Lucene.Net.Index.IndexReader reader)
    {
        var live = Lucene.Net.Index.MultiFields.GetLiveDocs(reader);
        for (int doc = 0; doc < reader.MaxDoc; doc++)
            if (live == null || live.Get(doc))
                yield return doc;
    }

    /// <summary>The projection without its @metadata, for distinct.</summary>
    private static byte[] ProjectionKey(byte[] output)
    {
        using var d = JsonDocument.Parse(output);
        var b = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(b))
        {
            w.WriteStartObject();
            foreach (var p in d.RootElement.EnumerateObject())
                if (p.Name != "@metadata")
                    p.WriteTo(w);
            w.WriteEndObject();
        }
        return b.WrittenSpan.ToArray();
    }

    private void ResolveAll(RqlExpression e)
    {
        switch (e)
        {
            case RqlBinary b:
                ResolveAll(b.Left);
                ResolveAll(b.Right);
                break;
            case RqlNot n:
                ResolveAll(n.Operand);
                break;
            case RqlCompare c:
                Resolve(c.Value);
                break;
            case RqlBetween bt:
                Resolve(bt.Low);
                Resolve(bt.High);
                break;
            case RqlIn i:
                foreach (var v in i.Values)
                    Resolve(v);
                break;
            case RqlMethod { Value: { } mv } m:
                if (Resolve(mv).ValueKind != JsonValueKind.String)
                    throw new InvalidQueryException($"Invalid query at position {mv.Position}: {m.Name}() needs a string value.");
                if (m.Name == "regex")
                    RegexOf(m);
                break;
            case RqlSpatial sp:
                ShapeOf(sp.Shape, Miles(sp.Target)); // a shape that does not parse is a 400 before anything is read
                break;
            case RqlMoreLikeThis mlt:
                if (mlt.Source != null)
                    ResolveAll(mlt.Source);
                if (mlt.Document != null)
                    Resolve(mlt.Document);
                if (mlt.Options != null)
                    Resolve(mlt.Options);
                break;
        }
    }

    private int ToInt(RqlValue v, string what)
    {
        var e = Resolve(v);
        if (e.ValueKind == JsonValueKind.Null)
            return what == "skip" ? 0 : int.MaxValue; // Node sends null for an unset skip
        if (e.ValueKind == JsonValueKind.Number && e.TryGetInt64(out long n))
            return (int)Math.Clamp(n, int.MinValue, int.MaxValue);
        throw new InvalidQueryException($"Invalid query at position {v.Position}: limit {what} must be an integer, got {e.ValueKind}.");
    }

    /// <summary>A date literal or parameter as ms (null or absent: <paramref name="fallback"/>); 400 when it is not a date.</summary>
    private long TimeOf(RqlValue? v, long fallback)
    {
        if (v == null)
            return fallback;
        var e = Resolve(v);
        if (e.ValueKind == JsonValueKind.Null)
            return fallback;
        if (e.ValueKind == JsonValueKind.String && DateTime.TryParse(e.GetString(), System.Globalization.CultureInfo.InvariantCulture,
                System.Globalization.DateTimeStyles.AdjustToUniversal | System.Globalization.DateTimeStyles.AssumeUniversal, out var t))
            return TimeSeries.TimeSeriesPoint.ToMilliseconds(t);
        throw new InvalidQueryException($"Invalid query at position {v.Position}: a time-series range ends at a date, got {e.GetRawText()}.");
    }

    /// <summary>A literal or parameter that must be a string (a counter name); 400 otherwise.</summary>
    private string ResolveString(RqlValue v)
    {
        var e = Resolve(v);
        return e.ValueKind == JsonValueKind.String ? e.GetString()!
            : throw new InvalidQueryException($"Invalid query at position {v.Position}: a counter name must be a string, got {e.ValueKind}.");
    }

    /// <summary>The value of a literal or parameter, as JSON; computed once per query (not per scanned document).</summary>
    private JsonElement Resolve(RqlValue v)
    {
        if (!_resolved.TryGetValue(v, out var value))
            _resolved[v] = value = ResolveUncached(v);
        return value;
    }

    private JsonElement ResolveUncached(RqlValue v)
    {
        if (v.CompareExchangeKey is { } keyValue)
        {
            var key = Resolve(keyValue);
            if (key.ValueKind != JsonValueKind.String)
                throw new InvalidQueryException($"Invalid query at position {v.Position}: cmpxchg() takes a key (a string), got {key.ValueKind}.");
            using var tx = _db.Environment.ReadTransaction();
            return CompareExchange.CompareExchangeStore.GetObject(tx, key.GetString()!);
        }
        if (v.Parameter is { } name)
        {
            if (_parameters.ValueKind != JsonValueKind.Object || !_parameters.TryGetProperty(name, out var p))
                throw new InvalidQueryException($"Invalid query at position {v.Position}: parameter ${name} has no value in QueryParameters.");
            return p;
        }
        return JsonSerializer.SerializeToElement(v.Literal);
    }

    private bool Evaluate(RqlExpression e, Row row)
    {
        switch (e)
        {
            case RqlBinary b:
                return b.IsAnd ? Evaluate(b.Left, row) && Evaluate(b.Right, row) : Evaluate(b.Left, row) || Evaluate(b.Right, row);
            case RqlNot n:
                return !Evaluate(n.Operand, row);
            case RqlTrue:
                return true;
            case RqlCompare c:
            {
                var values = row.Values(c.Field);
                var target = Resolve(c.Value);
                bool exact = IsExact(c.Field);
                if (c.Op == "=")
                    return EqualsAny(values, target, exact);
                if (c.Op == "!=")
                    return !EqualsAny(values, target, exact);
                foreach (var v in values)
                {
                    int? cmp = Compare(v, target, exact);
                    if (cmp is { } r && c.Op switch { "<" => r < 0, "<=" => r <= 0, ">" => r > 0, _ => r >= 0 })
                        return true;
                }
                return false;
            }
            case RqlBetween bt:
            {
                var low = Resolve(bt.Low);
                var high = Resolve(bt.High);
                bool exact = IsExact(bt.Field);
                return row.Values(bt.Field).Any(v => Compare(v, low, exact) >= 0 && Compare(v, high, exact) <= 0);
            }
            case RqlIn { All: true } i:
            {
                var values = row.Values(i.Field);
                bool exact = IsExact(i.Field);
                foreach (var rv in i.Values)
                {
                    var target = Resolve(rv);
                    if (!(target.ValueKind == JsonValueKind.Array ? target.EnumerateArray().All(t => EqualsAny(values, t, exact)) : EqualsAny(values, target, exact)))
                        return false;
                }
                return true;
            }
            case RqlIn i:
            {
                var values = row.Values(i.Field);
                bool exact = IsExact(i.Field);
                foreach (var rv in i.Values)
                {
                    var target = Resolve(rv);
                    if (target.ValueKind == JsonValueKind.Array ? target.EnumerateArray().Any(t => EqualsAny(values, t, exact)) : EqualsAny(values, target, exact))
                        return true;
                }
                return false;
            }
            case RqlMethod m:
                return Method(m, row);
            case RqlSpatial sp:
            {
                var query = ShapeOf(sp.Shape, Miles(sp.Target));
                var shapes = ShapesOf(sp.Target, row);
                return sp.Relation switch
                {
                    "within" => shapes.Any(x => x.IsWithin(query)),
                    "contains" => shapes.Any(x => x.Contains(query)),
                    "disjoint" => shapes.Count > 0 && !shapes.Any(x => x.Intersects(query)),
                    _ => shapes.Any(x => x.Intersects(query)),
                };
            }
            case RqlMoreLikeThis mlt:
                // Judged by the index alone (its terms and frequencies), for changed documents too.
                return row.IndexEntry >= 0 && _searchHits != null && _searchHits.TryGetValue(mlt, out var similar) && similar.ContainsKey(row.IndexEntry);
            default:
                throw new InvalidOperationException("unknown expression " + e);
        }
    }

    private bool IsExact(RqlPath path) => _compiled != null && !path.IsId && _compiled.Field(path.ToString())?.Indexing == FieldIndexing.Exact;

    private bool Method(RqlMethod m, Row row)
    {
        var values = row.Values(m.Field);
        if (m.Name == "exists")
            return values.Count > 0;
        var arg = Resolve(m.Value!);
        if (arg.ValueKind != JsonValueKind.String)
            throw new InvalidQueryException($"Invalid query at position {m.Value!.Position}: {m.Name}() needs a string value.");
        bool exact = IsExact(m.Field);
        string text = exact ? arg.GetString()! : arg.GetString()!.ToLowerInvariant();
        string Fold(JsonElement v) => exact ? v.GetString()! : v.GetString()!.ToLowerInvariant();
        switch (m.Name)
        {
            case "startswith":
                return values.Any(v => v.ValueKind == JsonValueKind.String && Fold(v).StartsWith(text, StringComparison.Ordinal));
            case "endswith":
                return values.Any(v => v.ValueKind == JsonValueKind.String && Fold(v).EndsWith(text, StringComparison.Ordinal));
            case "regex":
            {
                var regex = RegexOf(m);
                try
                {
                    return values.Any(v => v.ValueKind == JsonValueKind.String && regex.IsMatch(Fold(v)));
                }
                catch (System.Text.RegularExpressions.RegexMatchTimeoutException)
                {
                    throw new InvalidQueryException($"Invalid query at position {m.Value!.Position}: the regex() pattern took longer than {RegexTimeout.TotalMilliseconds} ms on one value; simplify it.");
                }
            }
            default:
                // search(): an entry the index answered for (its document unchanged since) is a match when
                // Lucene matched it; anything else is matched against its text values the same way.
                if (row.EntryNumber >= 0 && _searchHits != null && _searchHits.TryGetValue(m, out var hits))
                    return hits.ContainsKey(row.EntryNumber);
                if (!_searchQueries.TryGetValue(m, out var query))
                    _searchQueries[m] = query = SearchQuery.Parse(arg.GetString()!, null, m.Value!.Position, m.AllTerms,
                        m.Field.IsId ? null : _compiled?.Field(m.Field.ToString())?.TextAnalyzer);
                return query.Matches(values.Where(v => v.ValueKind == JsonValueKind.String).Select(v => v.GetString()!).ToList());
        }
    }

    /// <summary>A row's relevance: the sum of its scores in the query's search() matches (0 when it has none, or was not answered by the index).</summary>
    private double Score(Row row)
    {
        double score = 0;
        if (_searchHits != null)
        {
            foreach (var (condition, hits) in _searchHits)
            {
                // moreLikeThis() judges every entry by the index; search() only entries whose document is unchanged.
                long entry = condition is RqlMoreLikeThis ? row.IndexEntry : row.EntryNumber;
                if (entry >= 0 && hits.TryGetValue(entry, out float s))
                    score += s;
            }
        }
        return score;
    }

    private static bool EqualsAny(List<JsonElement> values, JsonElement target, bool exact)
    {
        if (values.Count == 0)
            return target.ValueKind == JsonValueKind.Null;
        foreach (var v in values)
        {
            if (v.ValueKind == JsonValueKind.Null || target.ValueKind == JsonValueKind.Null)
            {
                if (v.ValueKind == target.ValueKind)
                    return true;
                continue;
            }
            if (Compare(v, target, exact) == 0)
                return true;
        }
        return false;
    }

    /// <summary>Typed comparison, or null when the two are not comparable (a number against a string).</summary>
    private static int? Compare(JsonElement a, JsonElement b, bool exact)
    {
        if (a.ValueKind == JsonValueKind.Number && b.ValueKind == JsonValueKind.Number)
        {
            if (a.TryGetDecimal(out decimal da) && b.TryGetDecimal(out decimal db))
                return da.CompareTo(db);
            return a.GetDouble().CompareTo(b.GetDouble());
        }
        if (a.ValueKind == JsonValueKind.String && b.ValueKind == JsonValueKind.String)
            return exact ? JsonPaths.CompareCodePoints(a.GetString()!, b.GetString()!) : JsonPaths.CompareText(a.GetString()!, b.GetString()!);
        bool ab = a.ValueKind is JsonValueKind.True or JsonValueKind.False, bb = b.ValueKind is JsonValueKind.True or JsonValueKind.False;
        if (ab && bb)
            return a.GetBoolean().CompareTo(b.GetBoolean());
        return null;
    }

    private string _projectionBehavior = "Default";

    /// <summary>A counter's total (or, raw, <c>{"A:{version}-{db}": total}</c>), null when the document has no such counter.</summary>
    private void WriteCounter(Utf8JsonWriter w, StoredDocument doc, string name, bool raw)
    {
        using var tx = _db.Environment.ReadTransaction();
        CounterJson(tx, doc.Id, name, raw).WriteTo(w);
    }

    private JsonElement CounterJson(RavenLite.Storage.Transactions.Transaction tx, string id, string name, bool raw)
    {
        if (Counters.CountersStore.Get(tx, _db.Documents.KeyOf(id), name) is not { } c)
            return JsonSerializer.SerializeToElement<object?>(null);
        return raw
            ? JsonSerializer.SerializeToElement(new Dictionary<string, long> { [Documents.ChangeVectors.Format(c.Version, _db.Documents.DatabaseId)] = c.Value })
            : JsonSerializer.SerializeToElement(c.Value);
    }

    private List<TimeSeries.TimeSeriesQuery>? _timeSeriesQueries;

    /// <summary>The answer of <c>select timeseries(..) as a, ..</c> for one document: <c>{"a": {"Count","Results"}, .., "@metadata"}</c>.</summary>
    private byte[] ProjectTimeSeries(StoredDocument doc, RavenLite.Storage.Transactions.Transaction tx)
    {
        _timeSeriesQueries ??= _query.TimeSeries.Select(t => TimeSeries.TimeSeriesQuery.Parse(t.Text, _parameters)).ToList();
        var key = _db.Documents.KeyOf(doc.Id);
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            for (int i = 0; i < _timeSeriesQueries.Count; i++)
            {
                var q = _timeSeriesQueries[i];
                w.WritePropertyName(_query.TimeSeries[i].Alias);
                q.Write(w, TimeSeries.TimeSeriesStore.Read(tx, key, q.Name, q.From, q.To));
            }
            w.WriteStartObject("@metadata");
            w.WriteBoolean("@projection", true);
            w.WriteString("@id", doc.Id);
            w.WriteString("@change-vector", doc.ChangeVector);
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    private byte[] Project(Row row)
    {
        var doc = row.Document!;
        var root = row.DocumentJson;
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            foreach (var f in _query.Select)
            {
                w.WritePropertyName(f.Alias);
                if (f.Counter != null)
                {
                    WriteCounter(w, doc, ResolveString(f.Counter), f.CounterRaw);
                    continue;
                }
                if (f.Path.IsId)
                {
                    w.WriteStringValue(doc.Id);
                    continue;
                }
                var values = new List<JsonElement>();
                bool throughArray = false;
                // Where the value comes from (ProjectionBehavior): the index's entry (an index field; by default when
                // the field is stored) or the document; by default the document, else the values the map computed.
                var indexField = row.HasEntry ? _compiled?.Field(f.Path.ToString()) : null;
                bool fromIndex = _projectionBehavior is "FromIndex" or "FromIndexOrThrow" || (_projectionBehavior == "Default" && indexField is { Stored: true });
                if (_projectionBehavior == "FromIndexOrThrow" && indexField == null)
                    throw new InvalidQueryException($"ProjectionBehavior FromIndexOrThrow: '{f.Path}' is not a field of the index.");
                if (fromIndex)
                {
                    if (indexField != null)
                    {
                        values = row.Values(f.Path);
                        throughArray = values.Count > 1;
                    }
                }
                else
                {
                    JsonPaths.Walk(root, f.Path.Parts, 0, values);
                    throughArray = JsonPaths.PassesArray(root, f.Path.Parts);
                    if (values.Count == 0 && _projectionBehavior == "FromDocumentOrThrow" && !JsonPaths.Exists(root, f.Path.Parts))
                        throw new InvalidQueryException($"ProjectionBehavior FromDocumentOrThrow: document '{doc.Id}' has no '{f.Path}'.");
                    if (values.Count == 0 && row.HasEntry && _projectionBehavior == "Default")
                    {
                        // A field the map computes (not in the document): its indexed values.
                        values = row.Values(f.Path);
                        throughArray = values.Count > 1;
                    }
                }
                if (values.Count == 0)
                    w.WriteNullValue();
                else if (values.Count == 1 && !throughArray)
                    values[0].WriteTo(w);
                else
                {
                    w.WriteStartArray();
                    foreach (var v in values)
                        v.WriteTo(w);
                    w.WriteEndArray();
                }
            }
            w.WriteStartObject("@metadata");
            w.WriteBoolean("@projection", true);
            w.WriteString("@id", doc.Id);
            w.WriteString("@change-vector", doc.ChangeVector);
            if (doc.Collection != Documents.Collections.Empty)
                w.WriteString("@collection", doc.Collection);
            w.WriteString("@last-modified", JsonDates.FormatDate(doc.LastModified));
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

}
