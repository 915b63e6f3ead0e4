using RavenLite.Server.Databases;
using RavenLite.Server.Http;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Queries and indexes are the next piece of work (indexing issue): until then <c>queries</c> and
/// index definitions answer 501 with a JSON error, and the index listings answer empty.
/// </summary>
public static class QueryEndpoints
{
    private const string NotYet = "Queries and indexes are not implemented in this RavenLite build yet; load documents by id or list them by collection (GET /databases/{db}/collections/docs?name=).";

    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPost("/databases/{db}/queries", DatabaseRoute.Handle(NotImplemented));
        app.MapGet("/databases/{db}/queries", DatabaseRoute.Handle(NotImplemented));
        app.MapPut("/databases/{db}/admin/indexes", DatabaseRoute.Handle(NotImplemented));
        app.MapPut("/databases/{db}/indexes", DatabaseRoute.Handle(NotImplemented));
        app.MapGet("/databases/{db}/indexes", DatabaseRoute.Handle(EmptyResults));
        app.MapGet("/databases/{db}/indexes/stats", DatabaseRoute.Handle(EmptyResults));
    }

    private static Task NotImplemented(HttpContext context, Database db) =>
        ErrorHandlingMiddleware.WriteErrorAsync(context, 501, "Raven.Client.Exceptions.RavenException", NotYet, NotYet);

    private static Task EmptyResults(HttpContext context, Database db) => JsonResponse.WriteAsync(context, 200, w =>
    {
        w.WriteStartObject();
        w.WriteStartArray("Results");
        w.WriteEndArray();
        w.WriteEndObject();
    });
}
