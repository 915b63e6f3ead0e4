using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Operations;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>Operation ids, state and kill (docs/protocol.md §7, §10.4).</summary>
public static class OperationEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapGet("/databases/{db}/operations/next-operation-id", DatabaseRoute.Handle(NextId)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/operations/state", DatabaseRoute.Handle(State)).Requires(Access.DatabaseRead);
        app.MapPost("/databases/{db}/operations/kill", DatabaseRoute.Handle(Kill)).Requires(Access.DatabaseReadWrite);
        app.MapGet("/operations/state", ServerState).Requires(Access.Operator);
    }

    private static Task NextId(HttpContext context, Database db)
    {
        long id = db.Operations.NextId();
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("Id", id);
            w.WriteString("NodeTag", db.Documents.NodeTag);
            w.WriteEndObject();
        });
    }

    private static Task State(HttpContext context, Database db)
    {
        long id = RequestParsing.QueryLong(context.Request, "id") ?? throw new BadRequestException("Query string parameter 'id' must be a number.");
        var state = db.Operations.Get(id);
        if (state == null)
            return UnknownOperation(context, id);
        return JsonResponse.WriteAsync(context, 200, w => OperationStateJson.Write(w, state));
    }

    private static Task Kill(HttpContext context, Database db)
    {
        long id = RequestParsing.QueryLong(context.Request, "id") ?? throw new BadRequestException("Query string parameter 'id' must be a number.");
        var state = db.Operations.Get(id);
        if (state == null)
            return UnknownOperation(context, id);
        state.Cancel();
        return JsonResponse.EmptyAsync(context, 204);
    }

    private static Task UnknownOperation(HttpContext context, long id) =>
        ErrorHandlingMiddleware.WriteErrorAsync(context, 404, RavenExceptionTypes.RavenException, $"Operation {id} is not known.", $"Operation {id} is not known.");

    /// <summary>A server-wide operation's state (restores).</summary>
    private static Task ServerState(HttpContext context)
    {
        long id = RequestParsing.QueryLong(context.Request, "id") ?? throw new BadRequestException("Query string parameter 'id' must be a number.");
        var state = context.RequestServices.GetRequiredService<ServerOperations>().Table.Get(id);
        if (state == null)
            return UnknownOperation(context, id);
        return JsonResponse.WriteAsync(context, 200, w => OperationStateJson.Write(w, state));
    }
}
