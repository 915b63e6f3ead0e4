using RavenLite.Server.Databases;
using RavenLite.Server.Formatting;
using RavenLite.Server.Http;
using RavenLite.Server.Indexing;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Index management (docs/protocol.md §8): put (both routes), list, definitions, stats, errors,
/// staleness, delete and reset.
/// </summary>
public static class IndexEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPut("/databases/{db}/admin/indexes", DatabaseRoute.Handle(Put)).Requires(Access.DatabaseAdmin);
        app.MapPut("/databases/{db}/indexes", DatabaseRoute.Handle(Put)).Requires(Access.DatabaseAdmin);
        app.MapGet("/databases/{db}/indexes", DatabaseRoute.Handle(List)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/indexes/stats", DatabaseRoute.Handle(Stats)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/indexes/errors", DatabaseRoute.Handle(Errors)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/indexes/staleness", DatabaseRoute.Handle(Staleness)).Requires(Access.DatabaseRead);
        app.MapDelete("/databases/{db}/indexes", DatabaseRoute.Handle(Delete)).Requires(Access.DatabaseAdmin);
        app.MapMethods("/databases/{db}/indexes", ["RESET"], DatabaseRoute.Handle(Reset)).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/indexes/reset", DatabaseRoute.Handle(Reset)).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/admin/indexes/stop", DatabaseRoute.Handle((c, db) => Pause(c, db, true))).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/admin/indexes/start", DatabaseRoute.Handle((c, db) => Pause(c, db, false))).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/admin/indexes/enable", DatabaseRoute.Handle((c, db) => SetState(c, db, "Normal"))).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/admin/indexes/disable", DatabaseRoute.Handle((c, db) => SetState(c, db, "Disabled"))).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/indexes/set-lock", DatabaseRoute.Handle((c, db) => SetForMany(c, db, "Mode", IndexDefinitionJson.CheckLockMode))).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/indexes/set-priority", DatabaseRoute.Handle((c, db) => SetForMany(c, db, "Priority", IndexDefinitionJson.CheckPriority))).Requires(Access.DatabaseAdmin);
        app.MapGet("/databases/{db}/indexes/status", DatabaseRoute.Handle(IndexingStatus)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/indexes/terms", DatabaseRoute.Handle(Terms)).Requires(Access.DatabaseRead);
        app.MapPost("/databases/{db}/indexes/has-changed", DatabaseRoute.Handle(HasChanged)).Requires(Access.DatabaseRead);
        app.MapDelete("/databases/{db}/indexes/errors", DatabaseRoute.Handle(ClearErrors)).Requires(Access.DatabaseAdmin);
    }

    /// <summary>RavenDB's index status: Running, Paused (indexing stopped, or waiting for disk space), Disabled, or Error.</summary>
    private static string StatusOf(Indexing.Index i) =>
        i.Definition.State == "Disabled" ? "Disabled" : i.Paused || i.DiskFull ? "Paused" : i.State == "Normal" ? "Running" : "Error";

    /// <summary><c>set-lock</c> / <c>set-priority</c>: <c>{"IndexNames": [..], "Mode"|"Priority": ..}</c>; every name is checked before any changes (auto indexes cannot be locked).</summary>
    private static async Task SetForMany(HttpContext context, Database db, string property, Func<string, string> check)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "index " + property.ToLowerInvariant()).ConfigureAwait(false);
        var root = body.RootElement;
        if (root.ValueKind != JsonValueKind.Object || !root.TryGetProperty("IndexNames", out var names) || names.ValueKind != JsonValueKind.Array
            || names.EnumerateArray().Any(n => n.ValueKind != JsonValueKind.String))
            throw new BadRequestException($"The body must be {{\"IndexNames\": [..], \"{property}\": ..}}.");
        string value = root.TryGetProperty(property, out var v) && v.ValueKind == JsonValueKind.String ? check(v.GetString()!) : throw new BadRequestException($"'{property}' is required.");
        var list = names.EnumerateArray().Select(n => n.GetString()!).ToList();
        foreach (string name in list)
        {
            var index = db.Indexes.Get(name) ?? throw new NotFoundException(RavenExceptionTypes.IndexDoesNotExist, $"Index '{name}' does not exist.");
            if (property == "Mode" && index.Definition.IsAuto)
                throw new BadRequestException($"'{name}' is an auto index: auto indexes cannot be locked.");
        }
        await RecordChangeRoute.RunAsync(context, db, RecordChanges.IndexSettings, root).ConfigureAwait(false);
        context.Response.StatusCode = 204;
    }

    private static async Task SetState(HttpContext context, Database db, string state)
    {
        var index = Find(context, db);
        using var body = JsonDocument.Parse(JsonSerializer.SerializeToUtf8Bytes(new Dictionary<string, object> { ["IndexNames"] = new[] { index.Name }, ["State"] = state }));
        await RecordChangeRoute.RunAsync(context, db, RecordChanges.IndexSettings, body.RootElement).ConfigureAwait(false);
        context.Response.StatusCode = 204;
    }

    /// <summary><c>GET indexes/status</c>: <c>{"Status": "Running"|"Paused", "Indexes": [{"Name", "Status"}]}</c>.</summary>
    private static Task IndexingStatus(HttpContext context, Database db)
    {
        var all = db.Indexes.All;
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteString("Status", db.Indexes.IndexingStopped ? "Paused" : "Running");
            w.WriteStartArray("Indexes");
            foreach (var i in all)
            {
                w.WriteStartObject();
                w.WriteString("Name", i.Name);
                w.WriteString("Status", StatusOf(i));
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }

    private static async Task Put(HttpContext context, Database db)
    {
        using var doc = await RequestBody.ReadJsonAsync(context, "index").ConfigureAwait(false);
        var names = RecordChanges.Definitions(doc.RootElement).Select(d => d.Name).ToList(); // a changed index is answered by name while its replacement builds
        long raft = await RecordChangeRoute.RunAsync(context, db, RecordChanges.PutIndexes, doc.RootElement).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 201, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (string name in names)
            {
                w.WriteStartObject();
                w.WriteString("Index", name);
                w.WriteNumber("RaftCommandIndex", raft);
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static Task List(HttpContext context, Database db)
    {
        var indexes = db.Indexes.All.AsEnumerable();
        if (RequestParsing.Query(context.Request, "name") is { } name)
            indexes = indexes.Where(i => string.Equals(i.Name, name, StringComparison.OrdinalIgnoreCase));
        int start = RequestParsing.QueryInt(context.Request, "start", 0);
        int pageSize = RequestParsing.QueryInt(context.Request, "pageSize", int.MaxValue, min: 0);
        var page = indexes.Skip(start).Take(pageSize).ToList();
        bool namesOnly = string.Equals(RequestParsing.Query(context.Request, "namesOnly"), "true", StringComparison.OrdinalIgnoreCase);
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var i in page)
            {
                if (namesOnly)
                {
                    w.WriteStringValue(i.Name);
                    continue;
                }
                IndexDefinitionJson.Write(w, i);
            }
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }

    private static Task Stats(HttpContext context, Database db)
    {
        var indexes = db.Indexes.All.AsEnumerable();
        if (RequestParsing.Query(context.Request, "name") is { } name)
        {
            indexes = indexes.Where(i => string.Equals(i.Name, name, StringComparison.OrdinalIgnoreCase)).ToList();
            if (!indexes.Any())
                throw new NotFoundException(RavenExceptionTypes.IndexDoesNotExist, $"Index '{name}' does not exist.");
        }
        var list = indexes.ToList();
        var targets = new Dictionary<Indexing.Index, IndexPosition>();
        using (var tx = db.Environment.ReadTransaction())
            foreach (var i in list)
                targets[i] = i.TargetOf(tx);
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var i in list)
                WriteStats(w, i, targets[i]);
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }

    private static void WriteStats(Utf8JsonWriter w, Indexing.Index i, IndexPosition target)
    {
        var position = i.Position;
        var (attempts, successes, errors) = i.MapCounts;
        w.WriteStartObject();
        w.WriteString("Name", i.Name);
        w.WriteNumber("MapAttempts", attempts);
        w.WriteNumber("MapSuccesses", successes);
        w.WriteNumber("MapErrors", errors);
        w.WriteNumber("MapReferenceAttempts", 0);
        w.WriteNumber("MapReferenceSuccesses", 0);
        w.WriteNumber("MapReferenceErrors", 0);
        w.WriteNull("ReduceAttempts");
        w.WriteNull("ReduceSuccesses");
        w.WriteNull("ReduceErrors");
        w.WriteNull("ReduceOutputCollection");
        w.WriteNull("ReduceOutputReferencePattern");
        w.WriteNull("PatternReferencesCollectionName");
        w.WriteNumber("MappedPerSecondRate", 0);
        w.WriteNumber("ReducedPerSecondRate", 0);
        w.WriteNumber("MaxNumberOfOutputsPerDocument", 1);
        w.WriteStartObject("Collections");
        foreach (string c in i.Compiled.Collections)
        {
            long done = position.LastEtags.GetValueOrDefault(c), last = target.LastEtags.GetValueOrDefault(c);
            w.WriteStartObject(c);
            w.WriteNumber("LastProcessedDocumentEtag", done);
            w.WriteNumber("LastProcessedTombstoneEtag", position.LastTombstoneEtag);
            w.WriteNumber("DocumentLag", Math.Max(0, last - done));
            w.WriteNumber("TombstoneLag", Math.Max(0, target.LastTombstoneEtag - position.LastTombstoneEtag));
            w.WriteEndObject();
        }
        w.WriteEndObject();
        JsonDates.WriteDateOrNull(w, "LastQueryingTime", i.LastQueryingTime);
        w.WriteString("State", i.Definition.State);
        w.WriteString("Priority", i.Definition.Priority);
        JsonDates.WriteDateOrNull(w, "CreatedTimestamp", i.Definition.CreatedAt);
        JsonDates.WriteDateOrNull(w, "LastIndexingTime", i.LastIndexingTime);
        w.WriteBoolean("IsStale", Indexing.Index.IsBehind(position, target));
        w.WriteString("LockMode", i.Definition.LockMode);
        w.WriteString("Type", i.Definition.Type);
        w.WriteString("Status", StatusOf(i));
        w.WriteNumber("EntriesCount", position.Entries);
        w.WriteNumber("ErrorsCount", i.ErrorCount);
        w.WriteString("SourceType", i.Definition.SourceType.ToString());
        w.WriteBoolean("IsInvalidIndex", false);
        var files = i.Files();
        w.WriteStartObject("Lucene"); // RavenLite's own: the index's files as queries see them
        w.WriteNumber("Segments", files.Segments);
        w.WriteNumber("DeletedEntries", files.DeletedEntries);
        w.WriteNumber("SizeInBytes", files.SizeInBytes);
        w.WriteEndObject();
        w.WriteEndObject();
    }

    private static Task Errors(HttpContext context, Database db)
    {
        var indexes = db.Indexes.All.AsEnumerable();
        if (RequestParsing.Query(context.Request, "name") is { } name)
            indexes = indexes.Where(i => string.Equals(i.Name, name, StringComparison.OrdinalIgnoreCase));
        var list = indexes.ToList();
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var i in list)
            {
                w.WriteStartObject();
                w.WriteString("Name", i.Name);
                w.WriteStartArray("Errors");
                foreach (var e in i.Errors)
                {
                    w.WriteStartObject();
                    w.WriteString("Timestamp", JsonDates.FormatDate(e.Timestamp));
                    if (e.DocumentId != null)
                        w.WriteString("Document", e.DocumentId);
                    else
                        w.WriteNull("Document");
                    w.WriteString("Action", "Map");
                    w.WriteString("Error", e.Error);
                    w.WriteEndObject();
                }
                w.WriteEndArray();
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }

    private static Task Staleness(HttpContext context, Database db)
    {
        var index = Find(context, db);
        IndexPosition target;
        using (var tx = db.Environment.ReadTransaction())
            target = index.TargetOf(tx);
        var position = index.Position;
        bool stale = Indexing.Index.IsBehind(position, target);
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteBoolean("IsStale", stale);
            w.WriteStartArray("StalenessReasons");
            foreach (var (c, last) in target.LastEtags)
                if (position.LastEtags.GetValueOrDefault(c) < last)
                    w.WriteStringValue($"There are still documents of '{c}' to process: last indexed etag {position.LastEtags.GetValueOrDefault(c)}, last document etag {last}.");
            if (position.LastTombstoneEtag < target.LastTombstoneEtag)
                w.WriteStringValue($"There are still tombstones to process: last processed {position.LastTombstoneEtag}, last tombstone {target.LastTombstoneEtag}.");
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }

    private static Indexing.Index Find(HttpContext context, Database db)
    {
        string name = RequestParsing.Required(context.Request, "name");
        return db.Indexes.Get(name) ?? throw new NotFoundException(RavenExceptionTypes.IndexDoesNotExist, $"Index '{name}' does not exist.");
    }

    /// <summary>DELETE of an index: 204, or 404 without a body when there is none (RavenDB's answer, not an error).</summary>
    private static async Task Delete(HttpContext context, Database db)
    {
        if (db.Indexes.Get(RequestParsing.Required(context.Request, "name")) is not { } index)
        {
            context.Response.StatusCode = 404;
            return;
        }
        string name = index.Name;
        using var body = JsonDocument.Parse(JsonSerializer.SerializeToUtf8Bytes(new Dictionary<string, string> { ["Name"] = name }));
        await RecordChangeRoute.RunAsync(context, db, RecordChanges.DeleteIndex, body.RootElement).ConfigureAwait(false);
        context.Response.StatusCode = 204;
    }

    /// <summary>
    /// Stops or starts indexing for one index (<c>?name=</c>) or all; queries keep working (stale while stopped). A stop
    /// answers once the indexes have committed what they indexed (or after 30 s, should one still be busy).
    /// </summary>
    private static async Task Pause(HttpContext context, Database db, bool paused)
    {
        bool all = RequestParsing.Query(context.Request, "name") is null;
        var targets = all ? db.Indexes.All : [Find(context, db)];
        if (all)
            db.Indexes.IndexingStopped = paused;
        if (paused)
            await Task.WhenAll(targets.Select(i => i.StopAsync(TimeSpan.FromSeconds(30))));
        else
            foreach (var i in targets)
                i.Paused = false;
        context.Response.StatusCode = 204;
    }

    /// <summary><c>GET indexes/terms?name=&amp;field=&amp;fromValue=&amp;pageSize=</c>: <c>{Terms: [..]}</c>, the field's terms in order after fromValue.</summary>
    private static Task Terms(HttpContext context, Database db)
    {
        var index = Find(context, db);
        string field = RequestParsing.Required(context.Request, "field");
        string? from = RequestParsing.Query(context.Request, "fromValue") is { Length: > 0 } f ? f : null;
        int pageSize = RequestParsing.QueryInt(context.Request, "pageSize", 1024, min: 1);
        var terms = IndexTerms.Of(index, field, from, pageSize);
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Terms");
            foreach (string t in terms)
                w.WriteStringValue(t);
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }

    /// <summary><c>POST indexes/has-changed</c> with a definition: <c>{Changed}</c>, whether putting it would change the index.</summary>
    private static async Task HasChanged(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "index definition").ConfigureAwait(false);
        bool changed = db.Indexes.HasChanged(IndexDefinitionJson.Read(body.RootElement));
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteBoolean("Changed", changed);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    /// <summary><c>DELETE indexes/errors[?name=..]</c>: forgets the errors of the named indexes (or of all).</summary>
    private static Task ClearErrors(HttpContext context, Database db)
    {
        var names = context.Request.Query["name"].Where(n => !string.IsNullOrEmpty(n)).ToList();
        var targets = names.Count == 0 ? db.Indexes.All : names.Select(n => db.Indexes.Get(n!) ?? throw new NotFoundException(RavenExceptionTypes.IndexDoesNotExist, $"Index '{n}' does not exist.")).ToList();
        foreach (var index in targets)
            index.ClearErrors();
        context.Response.StatusCode = 204;
        return Task.CompletedTask;
    }

    private static Task Reset(HttpContext context, Database db)
    {
        Find(context, db).Reset();
        context.Response.StatusCode = 204;
        return Task.CompletedTask;
    }
}
