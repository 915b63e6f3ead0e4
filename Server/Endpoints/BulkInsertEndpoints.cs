using RavenLite.Server.Memory;
using RavenLite.Server.Configuration;
using RavenLite.Server.Errors;
using System.IO.Pipelines;
using RavenLite.Server.Attachments;
using RavenLite.Server.BulkInsert;
using RavenLite.Server.Databases;
using RavenLite.Server.Hosting;
using RavenLite.Server.Http;
using RavenLite.Server.Operations;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// <c>POST /databases/{db}/bulk_insert?id={operation}</c> (docs/protocol.md §7, docs/architecture.md).
/// The body is parsed as it arrives; documents gather into a batch handed to the merger at a byte
/// bound, a count bound, or when the network has been quiet for <see cref="ServerOptions.BulkInsertQuietMs"/>.
/// At most two batches are in flight, so memory stays bounded whatever the stream's size. The answer
/// (201, <c>Content-Length: 0</c>) goes out at the closing <c>]</c> once every batch is durable; on
/// failure a JSON error, and the operation's state says Faulted. Committed batches stay; a batch is
/// never partly applied.
/// </summary>
public static class BulkInsertEndpoints
{
    private const int MaxBatchesInFlight = 2;

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
        var inFlight = new Queue<BulkInsertBatch>();
        var memory = RequestMemory.For(context); // charged for the batches in flight
        BulkInsertBatch? batch = null;
        IdlePipeReader? pipe = null;
        BulkInsertReader? parser = null;
        try
        {
            // Exempt from the minimum data rate, but not silent forever: BulkInsertIdleSeconds without a byte ends it.
            pipe = new IdlePipeReader(RequestBody.DecodeToPipe(context.Request), TimeSpan.FromSeconds(options.BulkInsertIdleSeconds));
            context.Response.RegisterForDispose(pipe);
            parser = new BulkInsertReader(pipe, db.Documents, options.MaxDocumentBytes);
            while (!parser.Finished)
            {
                ReadResult result;
                if (batch is not { Count: > 0 })
                {
                    result = await pipe.ReadAsync(cts.Token).ConfigureAwait(false);
                }
                else if (!pipe.TryRead(out result))
                {
                    // Nothing buffered: hand the batch over if the network stays quiet for a moment.
                    var readTask = pipe.ReadAsync(cts.Token).AsTask();
                    if (await Task.WhenAny(readTask, Task.Delay(options.BulkInsertQuietMs, cts.Token)).ConfigureAwait(false) != readTask)
                    {
                        await SubmitAsync(db, batch, inFlight, state, memory).ConfigureAwait(false);
                        batch = null;
                    }
                    result = await readTask.ConfigureAwait(false);
                }
                parser.Consume(result, () => batch ??= new BulkInsertBatch(skipUnchanged),
                    b => b.Count >= options.BulkInsertBatchDocuments || b.Bytes >= options.BulkInsertBatchBytes);
                if (parser.PendingAttachment is { } attachment)
                {
                    // Its raw bytes follow the item: streamed to storage (staged in chunks), then attached with the batch.
                    if (attachment.Length > options.MaxAttachmentBytes)
                        throw new TooLargeException($"Attachment '{attachment.Name}' of '{attachment.DocumentId}' is over the limit of {options.MaxAttachmentBytes} bytes (MaxAttachmentBytes).");
                    await using var content = new PipeSliceStream(pipe, attachment.Length);
                    var staged = await AttachmentUpload.StageAsync(content, db.Merger, attachment.Length, cts.Token).ConfigureAwait(false);
                    if (staged.Size != attachment.Length)
                        throw new BadRequestException($"The bulk insert stream ended inside attachment '{attachment.Name}' of '{attachment.DocumentId}' ({staged.Size} of {attachment.Length} bytes).");
                    parser.AttachmentRead();
                    (batch ??= new BulkInsertBatch(skipUnchanged)).Add(attachment, staged);
                }
                if (batch != null && (batch.Count >= options.BulkInsertBatchDocuments || batch.Bytes >= options.BulkInsertBatchBytes))
                {
                    await SubmitAsync(db, batch, inFlight, state, memory).ConfigureAwait(false);
                    batch = null;
                }
            }
            if (batch is { Count: > 0 })
                await SubmitAsync(db, batch, inFlight, state, memory).ConfigureAwait(false);
            else
                batch?.Dispose(); // only heartbeats since the last batch: give its memory back
            batch = null;
            while (inFlight.Count > 0)
                await CompleteOldestAsync(inFlight, state, memory).ConfigureAwait(false);
            state.Complete();
            db.Operations.Finished(state);
            context.Response.Headers.Connection = "close";
            await JsonResponse.EmptyAsync(context, 201).ConfigureAwait(false);
        }
        catch (Exception e)
        {
            // Attachment contents staged for a batch that will never run (those of a failed batch in flight are swept when the database opens).
            foreach (var staged in batch?.StagedContents ?? [])
                await AttachmentUpload.DiscardAsync(db.Merger, staged.ContentId, staged.Size).ConfigureAwait(false);
            batch?.Dispose();
            // Batches already handed over either commit whole or not at all; wait so the state is exact.
            while (inFlight.Count > 0)
            {
                try
                {
                    await CompleteOldestAsync(inFlight, state, memory).ConfigureAwait(false);
                }
                catch (Exception)
                {
                    // The first failure is the one reported.
                }
            }
            RequestMemory.Release(context); // every batch is done with; the error answer is small
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
            // Read the rest of what the client is sending, then answer: it gets the error, not a broken pipe.
            // (Not after a kill: the client asked to abort and stops sending; it is answered at once.)
            var drainer = killed ? null : parser != null ? parser.BeginDrain() : BodyDrainer.FromStart();
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
    }

    /// <summary>True for a failure to read the body because the client went away (reset, or the body cut short).</summary>
    private static bool IsClientGone(Exception e) => e switch
    {
        Microsoft.AspNetCore.Connections.ConnectionResetException => true,
        BadHttpRequestException b => b.Message.Contains("Unexpected end of request content", StringComparison.OrdinalIgnoreCase),
        IOException io => io.InnerException is Microsoft.AspNetCore.Connections.ConnectionResetException || io.Message.Contains("reset", StringComparison.OrdinalIgnoreCase),
        _ => false,
    };

    private static async Task SubmitAsync(Database db, BulkInsertBatch batch, Queue<BulkInsertBatch> inFlight, OperationState state, MemoryBudget.Lease? memory)
    {
        while (inFlight.Count >= MaxBatchesInFlight)
            await CompleteOldestAsync(inFlight, state, memory).ConfigureAwait(false);
        // 503 when the budget has no room: the batch is not handed over (the caller disposes it).
        memory?.Add(batch.Bytes, $"A bulk insert holds up to {MaxBatchesInFlight} batches of BulkInsertBatchBytes while they commit: run fewer bulk inserts at once, or lower BulkInsertBatchBytes.");
        _ = db.Merger.EnqueueAsync(batch);
        inFlight.Enqueue(batch);
    }

    private static async Task CompleteOldestAsync(Queue<BulkInsertBatch> inFlight, OperationState state, MemoryBudget.Lease? memory)
    {
        var oldest = inFlight.Dequeue();
        try
        {
            await oldest.Completion.ConfigureAwait(false);
            state.AddProcessed(oldest.Count);
            state.AddSkipped(oldest.Skipped);
        }
        finally
        {
            memory?.Remove(oldest.Bytes);
            oldest.Dispose();
        }
    }
}
