using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Operations;
using RavenLite.Server.Revisions;
using RavenLite.Server.Security;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Revisions (docs/http-api.md "Revisions"): <c>POST admin/revisions/config</c> sets the configuration (GET reads it);
/// <c>GET revisions?id=</c> (newest first, paged; <c>before=</c> a date; <c>metadataOnly</c>) or <c>?changeVector=</c>;
/// <c>GET revisions/count?id=</c>; <c>GET revisions/bin</c> (deleted documents' last revisions); <c>POST revisions/revert</c>
/// (every document back to its revision at a time: an operation) and <c>POST revisions/revert/docs</c> (chosen
/// documents to chosen revisions).
/// </summary>
public static class RevisionEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPost("/databases/{db}/admin/revisions/config", DatabaseRoute.Handle(SetConfiguration)).Requires(Access.DatabaseAdmin);
        app.MapGet("/databases/{db}/revisions/config", DatabaseRoute.Handle(GetConfiguration)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/revisions", DatabaseRoute.Handle(Get)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/revisions/count", DatabaseRoute.Handle(Count)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/revisions/bin", DatabaseRoute.Handle(Bin)).Requires(Access.DatabaseRead);
        app.MapPost("/databases/{db}/revisions/revert", DatabaseRoute.Handle(Revert)).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/revisions/revert/docs", DatabaseRoute.Handle(RevertDocuments)).Requires(Access.DatabaseReadWrite);
    }

    private static async Task SetConfiguration(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "revisions configuration").ConfigureAwait(false);
        await RecordChangeRoute.RunAndAnswerAsync(context, db, RecordChanges.Revisions, body.RootElement).ConfigureAwait(false);
    }

    private static Task GetConfiguration(HttpContext context, Database db)
    {
        var configuration = db.Revisions.Configuration;
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            if (configuration == null)
                w.WriteNullValue();
            else
                configuration.Write(w);
        });
    }

    private static Task Get(HttpContext context, Database db)
    {
        var request = context.Request;
        bool metadataOnly = string.Equals(RequestParsing.Query(request, "metadataOnly"), "true", StringComparison.OrdinalIgnoreCase);
        var changeVectors = request.Query["changeVector"].Where(c => !string.IsNullOrEmpty(c)).Select(c => c!).ToList();
        var results = new List<StoredDocument?>();
        long total;
        using (var tx = db.Environment.ReadTransaction())
        {
            if (changeVectors.Count > 0)
            {
                foreach (string cv in changeVectors)
                    results.Add(RevisionsStore.GetByChangeVector(tx, cv, db.Documents));
                if (changeVectors.Count == 1 && results[0] == null)
                    return JsonResponse.EmptyAsync(context, 404);
                total = results.Count;
            }
            else
            {
                string id = RequestParsing.Required(request, "id");
                var key = db.Documents.KeyOf(id);
                if (RequestParsing.Query(request, "before") is { } b)
                {
                    if (!DateTime.TryParse(b, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var before))
                        throw new BadRequestException($"'before' must be a date, got '{b}'.");
                    var revision = RevisionsStore.GetBefore(tx, key, before, db.Documents);
                    if (revision == null)
                        return JsonResponse.EmptyAsync(context, 404);
                    results.Add(revision);
                    total = 1;
                }
                else
                {
                    int start = RequestParsing.QueryInt(request, "start", 0);
                    int pageSize = RequestParsing.QueryInt(request, "pageSize", int.MaxValue, 0);
                    results.AddRange(RevisionsStore.GetFor(tx, key, start, pageSize, db.Documents));
                    total = RevisionsStore.Count(tx, key);
                }
            }
        }
        return WriteResults(context, results, total, metadataOnly);
    }

    private static Task WriteResults(HttpContext context, List<StoredDocument?> results, long total, bool metadataOnly) =>
        JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var r in results)
            {
                if (r == null)
                {
                    w.WriteNullValue();
                }
                else if (metadataOnly)
                {
                    using var parsed = JsonDocument.Parse(r.Json);
                    w.WriteStartObject();
                    w.WritePropertyName("@metadata");
                    parsed.RootElement.GetProperty("@metadata").WriteTo(w);
                    w.WriteEndObject();
                }
                else
                {
                    w.WriteRawValue(r.Json, skipInputValidation: true);
                }
            }
            w.WriteEndArray();
            w.WriteNumber("TotalResults", total);
            w.WriteEndObject();
        });

    private static Task Count(HttpContext context, Database db)
    {
        string id = RequestParsing.Required(context.Request, "id");
        long count;
        using (var tx = db.Environment.ReadTransaction())
            count = RevisionsStore.Count(tx, db.Documents.KeyOf(id));
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RevisionsCount", count);
            w.WriteEndObject();
        });
    }

    private static Task Bin(HttpContext context, Database db)
    {
        int start = RequestParsing.QueryInt(context.Request, "start", 0);
        int pageSize = RequestParsing.QueryInt(context.Request, "pageSize", 1024, 0);
        List<StoredDocument?> results;
        using (var tx = db.Environment.ReadTransaction())
            results = [.. RevisionsStore.Bin(tx, start, pageSize, db.Documents)];
        return WriteResults(context, results, results.Count, metadataOnly: false);
    }

    private static async Task RevertDocuments(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "revert request").ConfigureAwait(false);
        if (!body.RootElement.TryGetProperty("IdToChangeVector", out var map) || map.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("Body must be {\"IdToChangeVector\":{\"id\":\"change vector of the revision\"}}.");
        var wanted = new List<(string Id, string ChangeVector)>();
        foreach (var p in map.EnumerateObject())
            wanted.Add((p.Name, p.Value.GetString() ?? throw new BadRequestException($"IdToChangeVector.{p.Name} must be a change vector.")));
        await db.Merger.EnqueueAsync(new DelegateCommand<bool>(ctx =>
        {
            RevisionsRevert.ToChangeVectors(ctx, wanted);
            return true;
        })).ConfigureAwait(false);
        await JsonResponse.EmptyAsync(context, 200).ConfigureAwait(false);
    }

    /// <summary>
    /// Every document with revisions (of the given collections, if any) goes back to its newest revision written at or
    /// before <c>Time</c>: documents changed since get that revision's content, documents created since are deleted.
    /// A background operation (progress in /operations/state); one merger command per document.
    /// </summary>
    private static async Task Revert(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "revert request").ConfigureAwait(false);
        var root = body.RootElement;
        if (!root.TryGetProperty("Time", out var t) || t.ValueKind != JsonValueKind.String || !t.TryGetDateTime(out var time))
            throw new BadRequestException("Body must name the Time (a date) to revert to: {\"Time\":\"2026-01-01T00:00:00Z\"}.");
        time = time.Kind == DateTimeKind.Unspecified ? DateTime.SpecifyKind(time, DateTimeKind.Utc) : time.ToUniversalTime();
        var collections = root.TryGetProperty("Collections", out var cs) && cs.ValueKind == JsonValueKind.Array
            ? cs.EnumerateArray().Select(c => c.GetString() ?? "").ToHashSet(StringComparer.OrdinalIgnoreCase) : null;
        var state = RevertOperation.Start(db, time, collections);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("OperationId", state.Id);
            w.WriteString("OperationNodeTag", db.Documents.NodeTag);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }
}
