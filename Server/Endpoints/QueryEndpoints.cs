using System.Diagnostics;
using System.Text.Json;
using RavenLite.Server.Databases;
using RavenLite.Server.Hosting;
using RavenLite.Server.Http;
using RavenLite.Server.Queries;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// <c>POST/GET /databases/{db}/queries</c> (PROTOCOL.md §6): RQL answered by scanning the collection in
/// one snapshot (<see cref="QueryRunner"/>). Static index definitions need Lucene.Net (not available
/// here): index PUTs answer 501 with a JSON error, index listings are empty, and <c>from index</c>
/// answers IndexDoesNotExistException.
/// </summary>
public static class QueryEndpoints
{
    private const string NoIndexes = "Static indexes are not implemented in this RavenLite build (they need Lucene.Net, which this machine's package source lacks). Collection queries (from 'Users' where ...) work without an index.";

    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPost("/databases/{db}/queries", DatabaseRoute.Handle(Post));
        app.MapGet("/databases/{db}/queries", DatabaseRoute.Handle(Get));
        app.MapPut("/databases/{db}/admin/indexes", DatabaseRoute.Handle(NotImplemented));
        app.MapPut("/databases/{db}/indexes", DatabaseRoute.Handle(NotImplemented));
        app.MapGet("/databases/{db}/indexes", DatabaseRoute.Handle(EmptyResults));
        app.MapGet("/databases/{db}/indexes/stats", DatabaseRoute.Handle(EmptyResults));
        app.MapDelete("/databases/{db}/indexes", DatabaseRoute.Handle(DeleteIndex));
    }

    private static async Task Post(HttpContext context, Database db)
    {
        var options = context.RequestServices.GetRequiredService<ServerOptions>();
        var body = await RequestBody.ReadAsync(context, options.MaxRequestBodyBytes).ConfigureAwait(false);
        JsonDocument doc;
        try
        {
            doc = JsonDocument.Parse(body, new JsonDocumentOptions { MaxDepth = 64 });
        }
        catch (JsonException e)
        {
            throw ApiException.BadRequest("The query request body is not valid JSON: " + e.Message);
        }
        using (doc)
        {
            var root = doc.RootElement;
            if (root.ValueKind != JsonValueKind.Object || !root.TryGetProperty("Query", out var q) || q.ValueKind != JsonValueKind.String)
                throw ApiException.BadRequest("The query request needs a string 'Query' (RQL).");
            var parameters = root.TryGetProperty("QueryParameters", out var p) ? p : default;
            if (parameters.ValueKind is not (JsonValueKind.Undefined or JsonValueKind.Null or JsonValueKind.Object))
                throw ApiException.BadRequest("QueryParameters must be an object or null.");
            int? start = root.TryGetProperty("Start", out var st) && st.ValueKind == JsonValueKind.Number ? st.GetInt32() : null;
            int? pageSize = root.TryGetProperty("PageSize", out var ps) && ps.ValueKind == JsonValueKind.Number ? ps.GetInt32() : null;
            await Answer(context, db, q.GetString()!, parameters, start, pageSize).ConfigureAwait(false);
        }
    }

    private static Task Get(HttpContext context, Database db) =>
        Answer(context, db, RequestParsing.Required(context.Request, "query"), default, null, null);

    private static Task Answer(HttpContext context, Database db, string rql, JsonElement parameters, int? start, int? pageSize)
    {
        long t0 = Stopwatch.GetTimestamp();
        var query = RqlParser.Parse(rql);
        var answer = QueryRunner.Run(db.Documents, query, parameters, start, pageSize);
        string now = JsonResponse.FormatDate(DateTime.UtcNow);
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var r in answer.Results)
                w.WriteRawValue(r, skipInputValidation: true);
            w.WriteEndArray();
            w.WriteNumber("TotalResults", answer.TotalResults);
            w.WriteNumber("LongTotalResults", answer.TotalResults);
            w.WriteNumber("SkippedResults", 0);
            w.WriteBoolean("IsStale", false);
            w.WriteString("IndexName", answer.IndexName);
            w.WriteString("IndexTimestamp", now);
            w.WriteString("LastQueryTime", now);
            w.WriteNumber("ResultEtag", answer.ResultEtag);
            w.WriteStartObject("Includes");
            foreach (var (id, d) in answer.Includes)
            {
                if (d == null)
                    continue;
                w.WritePropertyName(d.Id);
                w.WriteRawValue(d.Json, skipInputValidation: true);
            }
            w.WriteEndObject();
            w.WriteNumber("DurationInMs", (long)Stopwatch.GetElapsedTime(t0).TotalMilliseconds);
            w.WriteEndObject();
        });
    }

    private static Task DeleteIndex(HttpContext context, Database db)
    {
        string name = RequestParsing.Required(context.Request, "name");
        throw ApiException.NotFound("Raven.Client.Exceptions.Documents.Indexes.IndexDoesNotExistException", $"Index '{name}' does not exist.");
    }

    private static Task NotImplemented(HttpContext context, Database db) =>
        ErrorHandlingMiddleware.WriteErrorAsync(context, 501, "Raven.Client.Exceptions.RavenException", NoIndexes, NoIndexes);

    private static Task EmptyResults(HttpContext context, Database db) => JsonResponse.WriteAsync(context, 200, w =>
    {
        w.WriteStartObject();
        w.WriteStartArray("Results");
        w.WriteEndArray();
        w.WriteEndObject();
    });
}
