using RavenLite.Server.BulkInsert;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Http;
using RavenLite.Server.Operations;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// <c>POST /databases/{db}/bulk_insert?id={operation}</c> (docs/protocol.md §7, docs/architecture.md).
/// The handler translates HTTP around a <see cref="BulkInsertSession"/> (which parses the body as it arrives and
/// hands batches to the merger): the body's pipe with its idle limit, the answer, and on failure the rest of the
/// stream drained so the client reads the error. The answer
/// (201, <c>Content-Length: 0</c>) goes out at the closing <c>]</c> once every batch is durable; on
/// failure a JSON error, and the operation's state says Faulted. Committed batches stay; a batch is
/// never partly applied.
/// </summary>
public static class BulkInsertEndpoints
{
    /// <summary>
    /// Longest time spent reading (and discarding) the rest of a refused stream before the error goes out:
    /// a client that keeps sending past it gets the error and a closed connection.
    /// </summary>
    public static readonly TimeSpan DrainLimit = TimeSpan.FromSeconds(30);

    /// <summary>Maps the route.</summary>
    public static void Map(IEndpointRouteBuilder app) => app.MapPost("/databases/{db}/bulk_insert", DatabaseRoute.Handle(Post, drainBodyOnMissing: true)).Requires(Access.DatabaseReadWrite);

    private static async Task Post(HttpContext context, Database db)
    {
        var options = context.RequestServices.GetRequiredService<ServerOptions>();
        long opId = RequestParsing.QueryLong(context.Request, "id") ?? db.Operations.NextId();
        bool skipUnchanged = string.Equals(RequestParsing.Query(context.Request, "skipOverwriteIfUnchanged"), "true", StringComparison.OrdinalIgnoreCase);
        var state = db.Operations.Start(opId, "BulkInsert");
        using var cts = CancellationTokenSource.CreateLinkedTokenSource(state.Token, context.RequestAborted);
        // A client may pause between documents for as long as it likes (RavenDB has no minimum rate; the Node
        // client sends a heartbeat only after 40 s): Kestrel's default minimum body data rate would cut it off.
        if (context.Features.Get<Microsoft.AspNetCore.Server.Kestrel.Core.Features.IHttpMinRequestBodyDataRateFeature>() is { } rate)
            rate.MinDataRate = null;
        IdlePipeReader? pipe = null;
        BulkInsertSession? session = null;
        try
        {
            // Exempt from the minimum data rate, but not silent forever: BulkInsertIdleSeconds without a byte ends it.
            pipe = new IdlePipeReader(RequestBody.DecodeToPipe(context.Request), TimeSpan.FromSeconds(options.BulkInsertIdleSeconds));
            context.Response.RegisterForDispose(pipe);
            session = new BulkInsertSession(db, state, pipe, options, RequestMemory.For(context), skipUnchanged);
            await session.RunAsync(cts.Token).ConfigureAwait(false);
            db.Operations.Finished(state);
            context.Response.Headers.Connection = "close";
            await JsonResponse.EmptyAsync(context, 201).ConfigureAwait(false);
        }
        catch (Exception e)
        {
            if (session != null)
                await session.AbandonAsync().ConfigureAwait(false);
            RequestMemory.Release(context); // every batch is done with; the error answer is small
            await FailAsync(context, db, state, options, e, pipe, session).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Ends a failed bulk insert: the operation's state says why, and the client — unless it went away or went silent
    /// — gets the JSON error after the rest of its stream was read, so it sees the error, not a broken pipe.
    /// </summary>
    private static async Task FailAsync(HttpContext context, Database db, OperationState state, ServerOptions options, Exception e,
        IdlePipeReader? pipe, BulkInsertSession? session)
    {
        if (pipe is { TimedOut: true })
        {
            // The client went silent: nobody is sending, so nothing is drained; the connection is closed.
            state.Fault(RavenExceptionTypes.BulkInsertAborted, $"Bulk insert {state.Id}: the client sent nothing for {options.BulkInsertIdleSeconds} s (BulkInsertIdleSeconds), after {state.Processed} documents.", 408);
            db.Operations.Finished(state);
            context.Abort();
            return;
        }
        bool clientGone = context.RequestAborted.IsCancellationRequested || IsClientGone(e);
        bool killed = e is OperationCanceledException && state.Token.IsCancellationRequested;
        var (status, type, message) = killed
            ? (500, RavenExceptionTypes.BulkInsertAborted, $"Bulk insert {state.Id} was killed.")
            : clientGone
                ? (400, RavenExceptionTypes.BulkInsertAborted, $"Bulk insert {state.Id}: the client closed the stream before its end (after {state.Processed} documents).")
                : ErrorHandlingMiddleware.Classify(e);
        if (status >= 500 && !type.EndsWith("BulkInsertAbortedException", StringComparison.Ordinal))
            type = RavenExceptionTypes.BulkInsertAborted;
        state.Fault(type, message, status);
        db.Operations.Finished(state);
        if (clientGone)
            return; // nobody to answer, and not the server's failure
        // Read the rest of what the client is sending, then answer (not after a kill: the client asked to abort and
        // stops sending; it is answered at once).
        var drainer = killed ? null : session != null ? session.BeginDrain() : BodyDrainer.FromStart();
        if (drainer != null)
        {
            try
            {
                await drainer.DrainAsync(pipe ?? context.Request.BodyReader, DrainLimit, context.RequestAborted).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
                context.Abort(); // the client went silent before the end of its stream
                return;
            }
        }
        if (context.RequestAborted.IsCancellationRequested)
            return;
        context.Response.Headers.Connection = "close";
        await ErrorHandlingMiddleware.WriteErrorAsync(context, status, type, message, status >= 500 ? e.ToString() : message).ConfigureAwait(false);
    }

    /// <summary>True for a failure to read the body because the client went away (reset, or the body cut short).</summary>
    private static bool IsClientGone(Exception e) => e switch
    {
        Microsoft.AspNetCore.Connections.ConnectionResetException => true,
        BadHttpRequestException b => b.Message.Contains("Unexpected end of request content", StringComparison.OrdinalIgnoreCase),
        IOException io => io.InnerException is Microsoft.AspNetCore.Connections.ConnectionResetException || io.Message.Contains("reset", StringComparison.OrdinalIgnoreCase),
        _ => false,
    };
}
