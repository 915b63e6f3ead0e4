using RavenLite.Server.Databases;
using RavenLite.Server.Http;
using RavenLite.Server.Indexing.Analysis;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Custom analyzers and sorters (docs/http-api.md "Custom analyzers and sorters"): <c>PUT|DELETE
/// /databases/{db}/admin/analyzers</c> and <c>/admin/sorters</c> (the database's record) and <c>PUT|DELETE
/// /admin/analyzers</c>, <c>/admin/sorters</c> (server-wide, through the cluster's server items). A PUT body is
/// <c>{"Analyzers"|"Sorters": [{Name, Code}]}</c>, each compiled before anything is stored (201, no body); a DELETE names one
/// (<c>?name=</c>; 204, also when there was none).
/// </summary>
public static class AnalysisEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        foreach (bool sorters in new[] { false, true })
        {
            string path = sorters ? "sorters" : "analyzers";
            app.MapPut($"/databases/{{db}}/admin/{path}", DatabaseRoute.Handle((c, db) => PutForDatabase(c, db, sorters))).Requires(Access.DatabaseAdmin);
            app.MapDelete($"/databases/{{db}}/admin/{path}", DatabaseRoute.Handle((c, db) => DeleteForDatabase(c, db, sorters))).Requires(Access.DatabaseAdmin);
            app.MapPut($"/admin/{path}", c => PutServerWide(c, sorters)).Requires(Access.Operator);
            app.MapDelete($"/admin/{path}", c => DeleteServerWide(c, sorters)).Requires(Access.Operator);
        }
    }

    private static async Task PutForDatabase(HttpContext context, Database db, bool sorters)
    {
        using var body = await RequestBody.ReadJsonAsync(context, sorters ? "sorters" : "analyzers").ConfigureAwait(false);
        await RecordChangeRoute.RunAsync(context, db, sorters ? RecordChanges.PutSorters : RecordChanges.PutAnalyzers, body.RootElement).ConfigureAwait(false);
        context.Response.StatusCode = 201; // no body: RavenDB's clients read none here
    }

    private static async Task DeleteForDatabase(HttpContext context, Database db, bool sorters)
    {
        string name = Name(context, sorters);
        using var body = JsonDocument.Parse(JsonSerializer.SerializeToUtf8Bytes(new Dictionary<string, string> { ["Name"] = name }));
        await RecordChangeRoute.RunAsync(context, db, sorters ? RecordChanges.DeleteSorter : RecordChanges.DeleteAnalyzer, body.RootElement).ConfigureAwait(false);
        context.Response.StatusCode = 204;
    }

    private static async Task PutServerWide(HttpContext context, bool sorters)
    {
        using var body = await RequestBody.ReadJsonAsync(context, sorters ? "sorters" : "analyzers").ConfigureAwait(false);
        var items = context.RequestServices.GetRequiredService<Cluster.ServerItems>();
        foreach (var (name, code) in CustomAnalysis.Definitions(body.RootElement, sorters))
            await items.PutAsync(Cluster.CustomAnalysisFollower.Key(sorters, name),
                JsonSerializer.Serialize(new Dictionary<string, string> { ["Name"] = name, ["Code"] = code }), context.RequestAborted).ConfigureAwait(false);
        context.Response.StatusCode = 201;
    }

    private static async Task DeleteServerWide(HttpContext context, bool sorters)
    {
        string name = Name(context, sorters);
        var items = context.RequestServices.GetRequiredService<Cluster.ServerItems>();
        await items.PutAsync(Cluster.CustomAnalysisFollower.Key(sorters, name), null, context.RequestAborted).ConfigureAwait(false);
        context.Response.StatusCode = 204;
    }

    private static string Name(HttpContext context, bool sorters) =>
        context.Request.Query["name"].FirstOrDefault() is { Length: > 0 } name ? name : throw new BadRequestException($"Name the {(sorters ? "sorter" : "analyzer")} to delete: ?name=.");
}
