using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Operations;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>Operation ids, state and kill (PROTOCOL.md §7, §10.4).</summary>
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
            w.WriteString("NodeTag", ChangeVectors.NodeTag);
            w.WriteEndObject();
        });
    }

    private static Task State(HttpContext context, Database db)
    {
        long id = RequestParsing.QueryLong(context.Request, "id") ?? throw ApiException.BadRequest("Query string parameter 'id' must be a number.");
        var state = db.Operations.Get(id);
        if (state == null)
            return UnknownOperation(context, id);
        return JsonResponse.WriteAsync(context, 200, w => WriteState(w, state));
    }

    /// <summary>An operation's state as <c>/operations/state</c> answers it and the changes API sends it: <c>{Status, Result, Progress}</c>.</summary>
    public static void WriteState(System.Text.Json.Utf8JsonWriter w, OperationState state)
    {
        w.WriteStartObject();
        w.WriteString("Status", state.Status.ToString());
        switch (state.Status)
        {
            case OperationStatus.Completed when state.ResultJson != null:
                w.WritePropertyName("Result");
                w.WriteRawValue(state.ResultJson, skipInputValidation: true);
                w.WriteNull("Progress");
                break;
            case OperationStatus.Completed:
                w.WriteStartObject("Result");
                w.WriteString("$type", "Raven.Client.Documents.Operations.BulkOperationResult, Raven.Client");
                w.WriteNumber("Total", state.Total >= 0 ? state.Total : state.Processed);
                w.WriteNumber("DocumentsProcessed", state.Processed);
                w.WriteNumber("DocumentsSkipped", state.Skipped); // RavenLite's own: unchanged documents left as they were
                w.WriteEndObject();
                w.WriteNull("Progress");
                break;
            case OperationStatus.Faulted or OperationStatus.Canceled:
                w.WriteStartObject("Result");
                w.WriteString("$type", "Raven.Client.Documents.Operations.OperationExceptionResult, Raven.Client");
                w.WriteString("Type", state.ErrorType);
                w.WriteString("Message", state.Error);
                w.WriteString("Error", state.Error);
                w.WriteNumber("StatusCode", state.ErrorStatus);
                w.WriteEndObject();
                w.WriteNull("Progress");
                break;
            default:
                w.WriteNull("Result");
                w.WriteStartObject("Progress");
                w.WriteNumber("Processed", state.Processed);
                w.WriteNumber("DocumentsProcessed", state.Processed);
                if (state.Total >= 0)
                    w.WriteNumber("Total", state.Total);
                w.WriteEndObject();
                break;
        }
        w.WriteEndObject();
    }

    private static Task Kill(HttpContext context, Database db)
    {
        long id = RequestParsing.QueryLong(context.Request, "id") ?? throw ApiException.BadRequest("Query string parameter 'id' must be a number.");
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
        long id = RequestParsing.QueryLong(context.Request, "id") ?? throw ApiException.BadRequest("Query string parameter 'id' must be a number.");
        var state = context.RequestServices.GetRequiredService<ServerOperations>().Table.Get(id);
        if (state == null)
            return UnknownOperation(context, id);
        return JsonResponse.WriteAsync(context, 200, w => WriteState(w, state));
    }
}
