using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Formatting;
using RavenLite.Server.Http;
using RavenLite.Server.Security;
using RavenLite.Server.TimeSeries;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Time series (docs/http-api.md "Time series"): <c>POST /databases/{db}/timeseries?docId=</c> applies a
/// <c>TimeSeriesOperation</c> (appends, deletes, increments) through the merger; <c>GET ?docId=&amp;name=&amp;from=&amp;to=&amp;start=&amp;pageSize=</c>
/// reads a range (404 when the document or series does not exist); <c>GET timeseries/stats?docId=</c> lists a document's series.
/// </summary>
public static class TimeSeriesEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPost("/databases/{db}/timeseries", DatabaseRoute.Handle(Post)).Requires(Access.DatabaseReadWrite);
        app.MapGet("/databases/{db}/timeseries", DatabaseRoute.Handle(Get)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/timeseries/stats", DatabaseRoute.Handle(Stats)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/timeseries/ranges", DatabaseRoute.Handle(Ranges)).Requires(Access.DatabaseRead);
        app.MapPost("/databases/{db}/admin/timeseries/config", DatabaseRoute.Handle(SetConfiguration)).Requires(Access.DatabaseAdmin);
        app.MapGet("/databases/{db}/timeseries/config", DatabaseRoute.Handle(GetConfiguration)).Requires(Access.DatabaseRead);
        app.MapPut("/databases/{db}/admin/timeseries/policy", DatabaseRoute.Handle(PutPolicy)).Requires(Access.DatabaseAdmin);
        app.MapDelete("/databases/{db}/admin/timeseries/policy", DatabaseRoute.Handle(DeletePolicy)).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/timeseries/names/config", DatabaseRoute.Handle(SetValueNames)).Requires(Access.DatabaseAdmin);
    }

    private static async Task Post(HttpContext context, Database db)
    {
        string id = RequestParsing.Required(context.Request, "docId");
        db.Documents.ValidateId(id);
        var options = context.RequestServices.GetRequiredService<ServerOptions>();
        var body = await RequestBody.ReadAsync(context, options.MaxRequestBodyBytes).ConfigureAwait(false);
        using var json = DocumentJson.Parse(body, 4);
        var operation = TimeSeriesOperation.Parse(json.RootElement, "The time-series operation");
        await db.Merger.EnqueueAsync(new DelegateCommand<bool>(ctx =>
        {
            operation.Apply(ctx, id);
            return true;
        }, body.Length)).ConfigureAwait(false);
        await JsonResponse.EmptyAsync(context, 204).ConfigureAwait(false);
    }

    /// <summary>
    /// Stores the configuration made from the current one by <paramref name="change"/> (a database record change: on
    /// every member of a group); answers <c>{RaftCommandIndex}</c>. A failed change leaves the current one as it was.
    /// </summary>
    private static async Task Configure(HttpContext context, Database db, Action<TimeSeriesConfiguration> change)
    {
        using var copy = Json(db.TimeSeries.Configuration ?? new TimeSeriesConfiguration());
        var configuration = TimeSeriesConfiguration.Parse(copy.RootElement);
        change(configuration);
        using var changed = Json(configuration);
        await RecordChangeRoute.RunAndAnswerAsync(context, db, Databases.RecordChanges.TimeSeries, changed.RootElement).ConfigureAwait(false);
    }

    private static JsonDocument Json(TimeSeriesConfiguration configuration)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
            configuration.Write(w);
        return JsonDocument.Parse(buffer.WrittenMemory);
    }

    private static async Task SetConfiguration(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "time-series configuration").ConfigureAwait(false);
        var parsed = TimeSeriesConfiguration.Parse(body.RootElement);
        await Configure(context, db, c =>
        {
            c.Collections.Clear();
            foreach (var (k, v) in parsed.Collections)
                c.Collections[k] = v;
            c.PolicyCheckFrequency = parsed.PolicyCheckFrequency;
            c.NamedValues.Clear();
            foreach (var (k, v) in parsed.NamedValues)
                c.NamedValues[k] = v;
        }).ConfigureAwait(false);
    }

    private static Task GetConfiguration(HttpContext context, Database db) =>
        JsonResponse.WriteAsync(context, 200, w =>
        {
            if (db.TimeSeries.Configuration is { } c)
                c.Write(w);
            else
                w.WriteNullValue();
        });

    private static async Task PutPolicy(HttpContext context, Database db)
    {
        string collection = RequestParsing.Required(context.Request, "collection");
        using var body = await RequestBody.ReadJsonAsync(context, "time-series policy").ConfigureAwait(false);
        var policy = TimeSeriesConfiguration.ParsePolicy(body.RootElement, "The policy");
        await Configure(context, db, c =>
        {
            var current = c.Collections.TryGetValue(collection, out var existing) ? existing : new TimeSeriesCollectionConfiguration(false, [], new TimeValue(int.MaxValue, "None"));
            if (policy.Name.Equals(TimeSeriesConfiguration.RawPolicyName, StringComparison.OrdinalIgnoreCase))
            {
                c.Collections[collection] = current with { RawRetention = policy.RetentionTime };
                return;
            }
            var policies = current.Policies.Where(p => !p.Name.Equals(policy.Name, StringComparison.OrdinalIgnoreCase)).Append(policy)
                .OrderBy(p => p.AggregationTime.Milliseconds).ToList();
            c.Collections[collection] = current with { Policies = policies };
        }).ConfigureAwait(false);
    }

    private static Task DeletePolicy(HttpContext context, Database db)
    {
        string collection = RequestParsing.Required(context.Request, "collection");
        string name = RequestParsing.Required(context.Request, "name");
        return Configure(context, db, c =>
        {
            if (!c.Collections.TryGetValue(collection, out var current))
                return;
            c.Collections[collection] = name.Equals(TimeSeriesConfiguration.RawPolicyName, StringComparison.OrdinalIgnoreCase)
                ? current with { RawRetention = new TimeValue(int.MaxValue, "None") }
                : current with { Policies = current.Policies.Where(p => !p.Name.Equals(name, StringComparison.OrdinalIgnoreCase)).ToList() };
        });
    }

    private static async Task SetValueNames(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "value names").ConfigureAwait(false);
        var root = body.RootElement;
        string? collection = root.TryGetProperty("Collection", out var c) ? c.GetString() : null;
        string? series = root.TryGetProperty("TimeSeries", out var t) ? t.GetString() : null;
        if (string.IsNullOrEmpty(collection) || string.IsNullOrEmpty(series) || !root.TryGetProperty("ValueNames", out var v) || v.ValueKind != JsonValueKind.Array || v.GetArrayLength() == 0)
            throw new BadRequestException("Body must be {\"Collection\", \"TimeSeries\", \"ValueNames\":[..], \"Update\"}.");
        var names = v.EnumerateArray().Select(n => n.GetString() ?? "").ToArray();
        bool update = root.TryGetProperty("Update", out var u) && u.ValueKind == JsonValueKind.True;
        await Configure(context, db, conf =>
        {
            if (!conf.NamedValues.TryGetValue(collection, out var perSeries))
                conf.NamedValues[collection] = perSeries = new Dictionary<string, string[]>(StringComparer.OrdinalIgnoreCase);
            if (perSeries.TryGetValue(series, out var existing) && !update && !existing.SequenceEqual(names))
                throw new BadRequestException($"Series '{series}' of '{collection}' has value names already; send Update: true to replace them.");
            perSeries[series] = names;
        }).ConfigureAwait(false);
    }

    /// <summary>A <c>from</c>/<c>to</c> query parameter as ms (absent: the open end).</summary>
    internal static long Time(HttpRequest request, string name, long fallback)
    {
        if (RequestParsing.Query(request, name) is not { Length: > 0 } s)
            return fallback;
        return DateTime.TryParse(s, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var t)
            ? TimeSeriesPoint.ToMilliseconds(t) : throw new BadRequestException($"'{name}' must be a date (ISO 8601), got '{s}'.");
    }

    private static Task Get(HttpContext context, Database db)
    {
        var request = context.Request;
        string id = RequestParsing.Required(request, "docId");
        string name = RequestParsing.Required(request, "name");
        long from = Time(request, "from", 0), to = Time(request, "to", long.MaxValue);
        int start = RequestParsing.QueryInt(request, "start", 0);
        int pageSize = RequestParsing.QueryInt(request, "pageSize", int.MaxValue, 0);
        var entries = new List<TimeSeriesPoint>();
        long total = 0;
        Func<TimeSeriesPoint, IReadOnlyDictionary<string, double[]>>? nodeValues = null;
        using (var tx = db.Environment.ReadTransaction())
        {
            var doc = db.Documents.Get(tx, id);
            if (doc == null || !TimeSeriesStore.Exists(tx, db.Documents.KeyOf(doc.Id), name))
                return JsonResponse.EmptyAsync(context, 404);
            foreach (var p in TimeSeriesStore.Read(tx, db.Documents.KeyOf(doc.Id), name, from, to))
            {
                total++;
                if (total > start && entries.Count < pageSize)
                    entries.Add(p);
            }
            nodeValues = NodeValues(request, db, tx, db.Documents.KeyOf(doc.Id), name, from, to);
        }
        return JsonResponse.WriteAsync(context, 200, w => TimeSeriesEntryJson.WriteRange(w, from, to, entries, total, TimeSeriesEntryJson.IsRollup(name), nodeValues));
    }

    /// <summary>With <c>full=true</c>, an incremental series' entries answer their per-node parts (<c>NodeValues</c>); else null.</summary>
    private static Func<TimeSeriesPoint, IReadOnlyDictionary<string, double[]>>? NodeValues(HttpRequest request, Database db,
        RavenLite.Storage.Transactions.Transaction tx, byte[] key, string name, long from, long to) =>
        string.Equals(RequestParsing.Query(request, "full"), "true", StringComparison.OrdinalIgnoreCase) && TimeSeriesOperation.IsIncremental(name)
            ? IncrementalShares.NodeValues(tx, key, name, from, to, TimeSeriesOperation.IncrementalOwner(db.Documents))
            : null;

    /// <summary>
    /// <c>GET timeseries/ranges?docId=&amp;name=&amp;from=&amp;to=&amp;name=..[&amp;start=&amp;pageSize=&amp;includeDocument=&amp;includeTags=]</c>
    /// (the sessions' reads): several ranges of a document's series in one answer,
    /// <c>{"Id","Values":{"name":[{"From","To","Entries","TotalResults"}]},"Includes"}</c>, as RavenDB answers it: <c>start</c>
    /// and <c>pageSize</c> page across the ranges together, in order; <c>TotalResults</c> (the series' entry count) only for
    /// a range that covers the whole series; <c>includeDocument</c> includes the document, <c>includeTags</c> the documents
    /// the entries' tags name.
    /// </summary>
    private static Task Ranges(HttpContext context, Database db)
    {
        var request = context.Request;
        string id = RequestParsing.Required(request, "docId");
        var names = request.Query["name"].Select(n => n ?? "").ToList();
        var froms = request.Query["from"].Select(f => f ?? "").ToList();
        var tos = request.Query["to"].Select(t => t ?? "").ToList();
        if (names.Count == 0 || froms.Count != names.Count || tos.Count != names.Count)
            throw new BadRequestException("Name each range with name, from and to (from and to may be empty).");
        int skip = RequestParsing.QueryInt(request, "start", 0);
        int left = RequestParsing.QueryInt(request, "pageSize", int.MaxValue, 0);
        bool includeDocument = string.Equals(RequestParsing.Query(request, "includeDocument"), "true", StringComparison.OrdinalIgnoreCase);
        bool includeTags = string.Equals(RequestParsing.Query(request, "includeTags"), "true", StringComparison.OrdinalIgnoreCase);
        static long Parse(string s, long fallback) => s.Length == 0 ? fallback
            : DateTime.TryParse(s, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var t) ? TimeSeriesPoint.ToMilliseconds(t)
            : throw new BadRequestException($"'{s}' is not a date (ISO 8601).");
        var results = new List<(string Name, long From, long To, List<TimeSeriesPoint> Entries, long? Total, Func<TimeSeriesPoint, IReadOnlyDictionary<string, double[]>>? NodeValues)>();
        var includes = new Dictionary<string, StoredDocument?>(StringComparer.OrdinalIgnoreCase);
        string storedId;
        using (var tx = db.Environment.ReadTransaction())
        {
            var doc = db.Documents.Get(tx, id);
            if (doc == null)
                return JsonResponse.EmptyAsync(context, 404);
            storedId = doc.Id;
            if (includeDocument)
                includes[doc.Id] = doc;
            var key = db.Documents.KeyOf(doc.Id);
            for (int i = 0; i < names.Count; i++)
            {
                long from = Parse(froms[i], 0), to = Parse(tos[i], long.MaxValue);
                var entries = new List<TimeSeriesPoint>();
                foreach (var p in TimeSeriesStore.Read(tx, key, names[i], from, to))
                {
                    if (skip > 0)
                    {
                        skip--;
                        continue;
                    }
                    if (left <= 0)
                        break;
                    entries.Add(p);
                    left--;
                    if (includeTags && p.Tag != null && !includes.ContainsKey(p.Tag))
                        includes[p.Tag] = db.Documents.Get(tx, p.Tag);
                }
                long? total = TimeSeriesStore.Statistics(tx, key, names[i]) is var (count, first, last)
                    && from <= TimeSeriesPoint.ToMilliseconds(first) && to >= TimeSeriesPoint.ToMilliseconds(last) ? count : null;
                results.Add((names[i], from, to, entries, total, NodeValues(request, db, tx, key, names[i], from, to)));
            }
        }
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteString("Id", storedId);
            w.WriteStartObject("Values");
            foreach (var group in results.GroupBy(r => r.Name, StringComparer.OrdinalIgnoreCase))
            {
                w.WriteStartArray(group.Key);
                foreach (var r in group)
                    TimeSeriesEntryJson.WriteRange(w, r.From, r.To, r.Entries, r.Total, TimeSeriesEntryJson.IsRollup(r.Name), r.NodeValues);
                w.WriteEndArray();
            }
            w.WriteEndObject();
            if (includeDocument || includeTags)
            {
                w.WriteStartObject("Includes");
                foreach (var (includedId, included) in includes)
                {
                    if (included == null)
                        continue; // a tag that names no document
                    w.WritePropertyName(included.Id);
                    w.WriteRawValue(included.Json, skipInputValidation: true);
                }
                w.WriteEndObject();
            }
            w.WriteEndObject();
        });
    }

    private static Task Stats(HttpContext context, Database db)
    {
        string id = RequestParsing.Required(context.Request, "docId");
        var series = new List<(string Name, long Count, DateTime Start, DateTime End)>();
        string? storedId = null;
        using (var tx = db.Environment.ReadTransaction())
        {
            var doc = db.Documents.Get(tx, id);
            if (doc == null)
                return JsonResponse.EmptyAsync(context, 404);
            storedId = doc.Id;
            foreach (string name in DocumentExtras.Read(doc.Json)?.TimeSeries ?? [])
                if (TimeSeriesStore.Statistics(tx, db.Documents.KeyOf(doc.Id), name) is var (count, start, end))
                    series.Add((name, count, start, end));
        }
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteString("DocumentId", storedId);
            w.WriteStartArray("TimeSeries");
            foreach (var (name, count, start, end) in series)
            {
                w.WriteStartObject();
                w.WriteString("Name", name);
                w.WriteNumber("NumberOfEntries", count);
                w.WriteString("StartDate", JsonDates.FormatDate(start));
                w.WriteString("EndDate", JsonDates.FormatDate(end));
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }
}
