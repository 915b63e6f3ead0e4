using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Operations;
using RavenLite.Server.Queries;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Operations by query (RavenDB's <c>PatchByQueryOperation</c> and <c>DeleteByQueryOperation</c>):
/// <c>PATCH /databases/{db}/queries</c> with <c>{"Query":{"Query":"from Orders where ... update { ... }","QueryParameters":{..}}}</c>
/// and <c>DELETE /databases/{db}/queries</c> with <c>{"Query":"from Orders where ...","QueryParameters":{..}}</c> answer
/// <c>{"OperationId","OperationNodeTag"}</c> at once and run in the background: the ids the query matches are collected
/// first (waiting for a non-stale index unless <c>allowStale=true</c>, up to <c>staleTimeout</c>), then processed in
/// batches, each one merged transaction, so other writes go on between them. A patch runs its script on a snapshot
/// outside the merger and writes only documents it changed, each only if nobody changed it meanwhile (else it is
/// patched again from its new version). Progress, result, failure and cancellation go through
/// <c>/operations/state</c> and <c>/operations/kill</c>; <c>maxOpsPerSec</c> limits the pace.
/// </summary>
public static class OperationsByQueryEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapMethods("/databases/{db}/queries", ["PATCH"], DatabaseRoute.Handle(Patch)).Requires(Access.DatabaseReadWrite);
        app.MapDelete("/databases/{db}/queries", DatabaseRoute.Handle(Delete)).Requires(Access.DatabaseReadWrite);
    }

    private static async Task Patch(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "patch by query").ConfigureAwait(false);
        var root = body.RootElement;
        if (root.ValueKind != JsonValueKind.Object || !root.TryGetProperty("Query", out var q) || q.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("The body must be {\"Query\":{\"Query\":\"from ... update { ... }\",\"QueryParameters\":{...}}}.");
        var (rql, parameters) = QueryOf(q);
        var query = RqlParser.Parse(rql);
        if (query.UpdateScript == null)
            throw new InvalidQueryException("A patch by query needs 'update { ... }' at its end, e.g. from Orders where Freight > 10 update { this.Freight = 0; }.");
        int? pace = MaxOpsPerSecond(context);
        bool ignoreSteps = string.Equals(RequestParsing.Query(context.Request, "ignoreMaxStepsForScript"), "true", StringComparison.OrdinalIgnoreCase);
        var limits = PatchLimits.Of(context.RequestServices.GetRequiredService<Configuration.ServerOptions>(), ignoreSteps);
        var script = PatchScript.Create(query.UpdateScript, parameters, rql, query.UpdateScriptPosition, limits);
        await Answer(context, ByQueryOperation.StartPatch(db, query, parameters, Options(context), script, pace)).ConfigureAwait(false);
    }

    private static async Task Delete(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "delete by query").ConfigureAwait(false);
        var root = body.RootElement;
        if (root.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("The body must be {\"Query\":\"from ... where ...\",\"QueryParameters\":{...}}.");
        var (rql, parameters) = QueryOf(root);
        var query = RqlParser.Parse(rql);
        if (query.UpdateScript != null)
            throw new InvalidQueryException("A delete by query has no update script.");
        int? pace = MaxOpsPerSecond(context);
        await Answer(context, ByQueryOperation.StartDelete(db, query, parameters, Options(context), pace)).ConfigureAwait(false);
    }

    private static (string Rql, JsonElement Parameters) QueryOf(JsonElement query)
    {
        if (!query.TryGetProperty("Query", out var text) || text.ValueKind != JsonValueKind.String)
            throw new BadRequestException("The query needs a string 'Query' (RQL).");
        var parameters = query.TryGetProperty("QueryParameters", out var p) ? p.Clone() : default;
        if (parameters.ValueKind is not (JsonValueKind.Undefined or JsonValueKind.Null or JsonValueKind.Object))
            throw new BadRequestException("QueryParameters must be an object or null.");
        return (text.GetString()!, parameters);
    }

    private static int? MaxOpsPerSecond(HttpContext context) =>
        RequestParsing.QueryLong(context.Request, "maxOpsPerSec") is { } n ? n > 0 ? (int)Math.Min(n, int.MaxValue) : throw new BadRequestException("maxOpsPerSec must be positive.") : null;

    /// <summary>How stale the query's index may be: <c>allowStale</c>, <c>staleTimeout</c>.</summary>
    private static QueryOptions Options(HttpContext context)
    {
        bool allowStale = string.Equals(RequestParsing.Query(context.Request, "allowStale"), "true", StringComparison.OrdinalIgnoreCase);
        var staleTimeout = RequestParsing.Query(context.Request, "staleTimeout") is { } t ? QueryEndpoints.ParseTimeout(JsonSerializer.SerializeToElement(t)) : null;
        return new QueryOptions(null, null, !allowStale, staleTimeout ?? QueryRunner.AutoIndexWait);
    }

    private static Task Answer(HttpContext context, OperationState state) =>
        JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("OperationId", state.Id);
            w.WriteString("OperationNodeTag", NodeTag.Of(context));
            w.WriteEndObject();
        });
}
