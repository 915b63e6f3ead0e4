using RavenLite.Server.Counters;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Queries;
using RavenLite.Server.Security;
using RavenLite.Server.TransactionMerger;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Single documents and listings (docs/protocol.md §4): <c>GET/POST/PUT/DELETE/HEAD /databases/{db}/docs</c>,
/// <c>GET /databases/{db}/collections/docs</c>, <c>GET /databases/{db}/collections/stats</c>.
/// Reads use one storage snapshot per request; writes go through the merger and are answered
/// once durable.
/// </summary>
public static class DocumentEndpoints
{
    private const int DefaultPageSize = 25;
    private const int MaxPageSize = 1024;

    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapGet("/databases/{db}/docs", DatabaseRoute.Handle(Get)).Requires(Access.DatabaseRead);
        app.MapPost("/databases/{db}/docs", DatabaseRoute.Handle(PostIds)).Requires(Access.DatabaseRead);
        // Short handlers that queue a command completing inline: they stay on the thread that read the request.
        app.MapPut("/databases/{db}/docs", DatabaseRoute.Handle(Put)).WithMetadata(ThreadPoolHop.StayOnReadingThread).Requires(Access.DatabaseReadWrite);
        app.MapDelete("/databases/{db}/docs", DatabaseRoute.Handle(Delete)).WithMetadata(ThreadPoolHop.StayOnReadingThread).Requires(Access.DatabaseReadWrite);
        app.MapMethods("/databases/{db}/docs", ["HEAD"], DatabaseRoute.Handle(Head)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/collections/docs", DatabaseRoute.Handle(GetCollectionDocs)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/collections/stats", DatabaseRoute.Handle(GetCollectionStats)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/collections/stats/detailed", DatabaseRoute.Handle(GetDetailedCollectionStats)).Requires(Access.DatabaseRead);
    }

    private static Task Get(HttpContext context, Database db)
    {
        var request = context.Request;
        var ids = request.Query["id"].Select(s => string.IsNullOrEmpty(s) ? null : s).ToList();
        if (ids.Count > 0)
            return WriteByIds(context, db, ids);
        if (RequestParsing.Query(request, "startsWith") is { } prefix)
            return WriteStartingWith(context, db, prefix);
        int start = RequestParsing.QueryInt(request, "start", 0);
        int pageSize = RequestParsing.QueryInt(request, "pageSize", DefaultPageSize, 0, MaxPageSize);
        using var tx = db.Environment.ReadTransaction();
        List<StoredDocument> docs;
        if (RequestParsing.QueryLong(request, "etag", min: 0) is { } etag)
            docs = db.Documents.GetAfterEtag(tx, etag, start, pageSize);
        else
            docs = db.Documents.GetLatest(tx, start, pageSize);
        return WriteResults(context, docs, []);
    }

    /// <summary>
    /// <c>?startsWith=</c> (the clients' loadStartingWith): documents whose id starts with the prefix
    /// (any casing), in id order, after <c>startAfter</c>, whose id tail matches <c>matches</c> and not
    /// <c>exclude</c> (<see cref="IdPattern"/>), skipping <c>start</c> of those and returning at most
    /// <c>pageSize</c> (no limit when absent, as RavenDB).
    /// </summary>
    private static Task WriteStartingWith(HttpContext context, Database db, string prefix)
    {
        var request = context.Request;
        int start = RequestParsing.QueryInt(request, "start", 0);
        int pageSize = RequestParsing.QueryInt(request, "pageSize", int.MaxValue, 0);
        var matches = IdPattern.Parse(RequestParsing.Query(request, "matches"));
        var exclude = IdPattern.Parse(RequestParsing.Query(request, "exclude"));
        string? startAfter = RequestParsing.Query(request, "startAfter") is { Length: > 0 } a ? a : null;
        bool metadataOnly = string.Equals(RequestParsing.Query(request, "metadataOnly"), "true", StringComparison.OrdinalIgnoreCase);
        List<StoredDocument> docs;
        using (var tx = db.Environment.ReadTransaction())
            docs = db.Documents.GetStartingWith(tx, prefix, tail => (matches == null || matches.IsMatch(tail)) && (exclude == null || !exclude.IsMatch(tail)),
                startAfter, start, pageSize);
        return WriteResults(context, docs, [], metadataOnly);
    }

    private static async Task PostIds(HttpContext context, Database db)
    {
        var options = db.Options;
        var body = await RequestBody.ReadAsync(context, options.MaxRequestBodyBytes).ConfigureAwait(false);
        using var doc = DocumentJson.Parse(body, 2);
        if (doc.RootElement.ValueKind != JsonValueKind.Object || !doc.RootElement.TryGetProperty("Ids", out var arr) || arr.ValueKind != JsonValueKind.Array)
            throw new BadRequestException("Body must be {\"Ids\":[...]}.");
        var ids = new List<string?>();
        foreach (var e in arr.EnumerateArray())
            ids.Add(e.ValueKind switch
            {
                JsonValueKind.String => e.GetString(),
                JsonValueKind.Null => null, // answered as a null result, as RavenDB
                _ => throw new BadRequestException("Ids must hold strings (or null)."),
            });
        await WriteByIds(context, db, ids).ConfigureAwait(false);
    }

    /// <summary>The documents of <paramref name="ids"/>, in order; a null (or empty) id is a null result, as a missing document is.</summary>
    private static Task WriteByIds(HttpContext context, Database db, List<string?> ids)
    {
        var includes = context.Request.Query["include"].Where(s => !string.IsNullOrEmpty(s)).Select(s => s!).ToList();
        var counters = context.Request.Query["counter"].Select(s => s ?? "").ToList();
        bool metadataOnly = string.Equals(RequestParsing.Query(context.Request, "metadataOnly"), "true", StringComparison.OrdinalIgnoreCase);
        var results = new List<StoredDocument?>(ids.Count);
        var included = new Dictionary<string, StoredDocument?>(StringComparer.OrdinalIgnoreCase);
        CounterIncludes? counterIncludes = null;
        var extraIncludes = ExtraIncludes.Parse(k => context.Request.Query[k]);
        using (var tx = db.Environment.ReadTransaction())
        {
            foreach (string? id in ids)
            {
                var doc = string.IsNullOrEmpty(id) ? null : db.Documents.Get(tx, id);
                if (doc == null && !string.IsNullOrEmpty(id))
                    DocumentConflicts.ThrowIfConflicted(tx, db.Documents, id);
                results.Add(doc);
            }
            if (ids.Count == 1 && results[0] == null)
                return JsonResponse.EmptyAsync(context, 404);
            if (ids.Count == 1 && includes.Count == 0 && counters.Count == 0 && extraIncludes == null && HttpCaching.Matches(context, results[0]!.ChangeVector))
                return HttpCaching.NotModifiedAsync(context); // conditionalLoad sends the document's change vector
            if (includes.Count > 0)
                LoadIncludes(db, tx, results, includes, included);
            if (counters.Count > 0)
            {
                counterIncludes = new CounterIncludes(counters);
                foreach (var d in results)
                    if (d != null)
                        counterIncludes.Add(tx, db.Documents, d.Id);
            }
            if (extraIncludes != null)
                foreach (var d in results)
                    if (d != null)
                        extraIncludes.Add(tx, db.Documents, d);
        }
        return WriteResults(context, results, included, metadataOnly, counterIncludes, extraIncludes);
    }

    internal static void LoadIncludes(Database db, Transaction tx, IEnumerable<StoredDocument?> docs, List<string> paths, Dictionary<string, StoredDocument?> included)
    {
        var wanted = new List<string>();
        foreach (var d in docs)
        {
            if (d == null)
                continue;
            using var parsed = JsonDocument.Parse(d.Json);
            foreach (string p in paths)
                IncludePaths.Collect(parsed.RootElement, p, wanted);
        }
        foreach (string id in wanted)
        {
            if (included.ContainsKey(id))
                continue;
            try
            {
                included[id] = db.Documents.Get(tx, id);
            }
            catch (DomainException)
            {
                // A value that cannot be an id (too long, control characters) names no document.
            }
        }
    }

    /// <summary>
    /// Writes <c>{"Results":[...],"Includes":{...}}</c> with an ETag that changes with any result's or
    /// include's change vector (a single document's own change vector is set by the caller), or 304
    /// when the request's If-None-Match names it.
    /// </summary>
    internal static Task WriteResults(HttpContext context, IReadOnlyList<StoredDocument?> docs, Dictionary<string, StoredDocument?> included, bool metadataOnly = false,
        CounterIncludes? counterIncludes = null, ExtraIncludes? extraIncludes = null)
    {
        if (!context.Response.Headers.ContainsKey("ETag"))
        {
            var parts = new List<string?>(docs.Count + included.Count + 1) { metadataOnly ? "metadata" : "documents" };
            foreach (var d in docs)
                parts.Add(d == null ? null : d.Id + "\n" + d.ChangeVector);
            foreach (var (id, d) in included.OrderBy(p => p.Key, StringComparer.OrdinalIgnoreCase))
                parts.Add(id + "\n" + d?.ChangeVector);
            counterIncludes?.AddTagParts(parts);
            extraIncludes?.AddTagParts(parts);
            if (HttpCaching.Matches(context, HttpCaching.Tag(parts)))
                return HttpCaching.NotModifiedAsync(context);
        }
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var d in docs)
                WriteDocument(w, d, metadataOnly);
            w.WriteEndArray();
            w.WriteStartObject("Includes");
            foreach (var (id, d) in included)
            {
                if (d == null)
                    continue;
                w.WritePropertyName(d.Id);
                WriteDocument(w, d, false);
            }
            w.WriteEndObject();
            counterIncludes?.Write(w);
            extraIncludes?.Write(w);
            w.WriteEndObject();
        });
    }

    private static void WriteDocument(Utf8JsonWriter w, StoredDocument? d, bool metadataOnly)
    {
        if (d == null)
        {
            w.WriteNullValue();
            return;
        }
        if (!metadataOnly)
        {
            w.WriteRawValue(d.Json, skipInputValidation: true);
            return;
        }
        using var parsed = JsonDocument.Parse(d.Json);
        w.WriteStartObject();
        if (parsed.RootElement.TryGetProperty("@metadata", out var meta))
        {
            w.WritePropertyName("@metadata");
            meta.WriteTo(w);
        }
        w.WriteEndObject();
    }

    private static async Task Put(HttpContext context, Database db)
    {
        var options = db.Options;
        // An empty id (?id=) asks the server for a GUID, as RavenDB does; only a missing parameter is a 400.
        string id = RequestParsing.Query(context.Request, "id") ?? throw new BadRequestException("Query string parameter 'id' is required.");
        db.Documents.ValidateIdToWrite(id);
        id = await GroupIdentities.ResolveAsync(context, db, id).ConfigureAwait(false);
        string? expected = RequestParsing.Header(context.Request, "If-Match");
        var body = await RequestBody.ReadAsync(context, options.MaxDocumentBytes, nameof(options.MaxDocumentBytes)).ConfigureAwait(false);
        // Validated and prepared here, on the request's thread; the merger thread only assigns the etag and writes.
        var prepared = new ArrayBufferWriter<byte>(body.Length + 64);
        int prefix = DocumentPreparer.Current.Prepare(body.Span, prepared, out string collection);
        // Completes on the merger thread (the rest is writing the answer): no thread-pool hand-off per request.
        var command = new DelegateCommand<WriteResult>(ctx => ctx.Put(ctx.ResolveId(id), collection, prepared.WrittenSpan, prefix, expected), body.Length, completeInline: true);
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        var result = command.Result!;
        await JsonResponse.WriteAsync(context, 201, w =>
        {
            w.WriteStartObject();
            w.WriteString("Id", result.Id);
            w.WriteString("ChangeVector", result.ChangeVector);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static async Task Delete(HttpContext context, Database db)
    {
        string id = RequestParsing.Required(context.Request, "id");
        db.Documents.ValidateId(id);
        string? expected = RequestParsing.Header(context.Request, "If-Match");
        var command = new DelegateCommand<WriteResult>(ctx => ctx.Delete(id, expected), completeInline: true);
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        await JsonResponse.EmptyAsync(context, 204).ConfigureAwait(false);
    }

    private static Task Head(HttpContext context, Database db)
    {
        string id = RequestParsing.Required(context.Request, "id");
        string? cv;
        using (var tx = db.Environment.ReadTransaction())
            cv = db.Documents.ChangeVectorOf(tx, id);
        if (cv == null)
            return JsonResponse.EmptyAsync(context, 404);
        context.Response.Headers.ETag = "\"" + cv + "\"";
        string? ifNoneMatch = RequestParsing.Header(context.Request, "If-None-Match");
        return JsonResponse.EmptyAsync(context, ifNoneMatch == cv ? 304 : 200);
    }

    private static Task GetCollectionDocs(HttpContext context, Database db)
    {
        string name = RequestParsing.Required(context.Request, "name");
        int start = RequestParsing.QueryInt(context.Request, "start", 0);
        int pageSize = RequestParsing.QueryInt(context.Request, "pageSize", DefaultPageSize, 0, MaxPageSize);
        using var tx = db.Environment.ReadTransaction();
        var docs = db.Documents.GetByCollection(tx, name, start, pageSize);
        return WriteResults(context, docs, []);
    }

    /// <summary>RavenDB's DetailedCollectionStatistics: counts and stored sizes per collection (<see cref="CollectionSizes"/>).</summary>
    private static Task GetDetailedCollectionStats(HttpContext context, Database db)
    {
        SortedDictionary<string, CollectionSizes.Details> collections;
        long total, conflicts;
        using (var tx = db.Environment.ReadTransaction())
        {
            collections = CollectionSizes.Of(tx);
            total = DocumentsStorage.CountDocuments(tx);
            conflicts = DocumentConflicts.Count(tx);
        }
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("CountOfDocuments", total);
            w.WriteNumber("CountOfConflicts", conflicts);
            w.WriteStartObject("Collections");
            foreach (var c in collections.Values)
            {
                w.WriteStartObject(c.Name);
                w.WriteString("Name", c.Name);
                w.WriteNumber("CountOfDocuments", c.Documents);
                Formatting.Sizes.Write(w, "Size", c.DocumentsBytes + c.TombstonesBytes + c.RevisionsBytes);
                Formatting.Sizes.Write(w, "DocumentsSize", c.DocumentsBytes);
                Formatting.Sizes.Write(w, "TombstonesSize", c.TombstonesBytes);
                Formatting.Sizes.Write(w, "RevisionsSize", c.RevisionsBytes);
                w.WriteEndObject();
            }
            w.WriteEndObject();
            w.WriteEndObject();
        });
    }

    private static Task GetCollectionStats(HttpContext context, Database db)
    {
        SortedDictionary<string, long> counts;
        long total, conflicts;
        using (var tx = db.Environment.ReadTransaction())
        {
            counts = DocumentsStorage.CollectionCounts(tx);
            total = DocumentsStorage.CountDocuments(tx);
            conflicts = DocumentConflicts.Count(tx);
        }
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("CountOfDocuments", total);
            w.WriteNumber("CountOfConflicts", conflicts);
            w.WriteStartObject("Collections");
            foreach (var (name, count) in counts)
                w.WriteNumber(name, count);
            w.WriteEndObject();
            w.WriteEndObject();
        });
    }
}
