using RavenLite.Server.Configuration;
using RavenLite.Server.Errors;
using System.Diagnostics;
using System.Text.Json;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Operations;
using RavenLite.Server.Queries;
using RavenLite.Server.TransactionMerger;
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
    private const int PatchBatch = 256;
    private const int DeleteBatch = 1024;

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
        await Start(context, db, "UpdateByQuery", query, parameters, (state, ids, ct) => PatchAll(db, state, ids, script, pace, ct), () => script.Dispose()).ConfigureAwait(false);
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
        await Start(context, db, "DeleteByQuery", query, parameters, (state, ids, ct) => DeleteAll(db, state, ids, pace, ct), null).ConfigureAwait(false);
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

    /// <summary>Starts the operation in the background and answers its id.</summary>
    private static Task Start(HttpContext context, Database db, string kind, RqlQuery query, JsonElement parameters,
        Func<OperationState, List<string>, CancellationToken, Task> work, Action? done)
    {
        bool allowStale = string.Equals(RequestParsing.Query(context.Request, "allowStale"), "true", StringComparison.OrdinalIgnoreCase);
        var staleTimeout = RequestParsing.Query(context.Request, "staleTimeout") is { } t ? QueryEndpoints.ParseTimeout(JsonSerializer.SerializeToElement(t)) : null;
        var options = new QueryOptions(null, null, !allowStale, staleTimeout ?? QueryRunner.AutoIndexWait);
        if (!db.TryAcquire())
            throw new UnavailableException(RavenExceptionTypes.DatabaseLoadFailure, $"Database '{db.Name}' is closing.");
        var state = db.Operations.Start(db.Operations.NextId(), kind);
        _ = Task.Run(async () =>
        {
            try
            {
                var ids = await QueryRunner.MatchingIdsAsync(db, query, parameters, options, state.Token).ConfigureAwait(false);
                state.Total = ids.Count;
                await work(state, ids, state.Token).ConfigureAwait(false);
                state.Complete();
            }
            catch (OperationCanceledException)
            {
                state.Fault(RavenExceptionTypes.RavenException, $"Operation {state.Id} was canceled.", 400);
            }
            catch (DomainException e)
            {
                state.Fault(e.ClientType, e.Message, ErrorMapping.StatusOf(e));
            }
            catch (PatchException e)
            {
                state.Fault(RavenExceptionTypes.JavaScript, e.Message, 400);
            }
            catch (Exception e)
            {
                // Anything else (a timeout, a failed storage, a database closing) faults the operation: it never stays InProgress.
                state.Fault(RavenExceptionTypes.RavenException, e.Message, e is TimeoutException ? 408 : 500);
            }
            finally
            {
                done?.Invoke();
                db.Operations.Finished(state);
                db.Release();
            }
        });
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("OperationId", state.Id);
            w.WriteString("OperationNodeTag", ChangeVectors.NodeTag);
            w.WriteEndObject();
        });
    }

    private static async Task PatchAll(Database db, OperationState state, List<string> ids, PatchScript script, int? maxOpsPerSecond, CancellationToken ct)
    {
        var pace = Stopwatch.StartNew();
        int size = BatchSize(PatchBatch, maxOpsPerSecond);
        var pending = new Queue<string>(ids);
        int rounds = 0;
        while (pending.Count > 0)
        {
            ct.ThrowIfCancellationRequested();
            var batch = new List<string>(size);
            while (batch.Count < size && pending.TryDequeue(out string? id))
                batch.Add(id);
            // The script runs on a snapshot, outside the merger: a slow script never holds other writes.
            var patched = new List<(string Id, string ChangeVector, byte[]? Json, List<(string, byte[]?)> Effects)>();
            int unchanged = 0;
            using (var tx = db.Environment.ReadTransaction())
            {
                foreach (string id in batch)
                {
                    if (db.Documents.Get(tx, id) is not { } doc)
                    {
                        unchanged++; // deleted since the query
                        continue;
                    }
                    var json = script.Run(doc, other => db.Documents.Get(tx, other));
                    if (json != null || script.Effects.Count > 0)
                        patched.Add((doc.Id, doc.ChangeVector, json, script.Effects.ToList()));
                    else
                        unchanged++;
                }
            }
            var command = new DelegateCommand<List<string>>(ctx =>
            {
                var changed = new List<string>();
                foreach (var (id, changeVector, json, effects) in patched)
                {
                    if (ctx.Get(id) is not { } current)
                        continue;
                    if (current.ChangeVector != changeVector)
                    {
                        changed.Add(id); // written meanwhile: patched again from its new version
                        continue;
                    }
                    if (json != null)
                        ctx.Put(id, json, null);
                    Operations.DocumentPatch.ApplyEffects(ctx, effects); // its put()/del() in the same transaction
                }
                return changed;
            }, patched.Sum(p => (long)(p.Json?.Length ?? 0)));
            await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
            var moved = command.Result!;
            state.AddProcessed(batch.Count - moved.Count);
            state.AddSkipped(unchanged);
            if (moved.Count > 0 && ++rounds > 1000)
                throw new InvalidOperationException("Documents kept changing while they were patched; the patch stopped.");
            foreach (string id in moved)
                pending.Enqueue(id);
            await Pace(state.Processed, maxOpsPerSecond, pace, ct).ConfigureAwait(false);
        }
    }

    private static async Task DeleteAll(Database db, OperationState state, List<string> ids, int? maxOpsPerSecond, CancellationToken ct)
    {
        var pace = Stopwatch.StartNew();
        foreach (var chunk in ids.Chunk(BatchSize(DeleteBatch, maxOpsPerSecond)))
        {
            ct.ThrowIfCancellationRequested();
            await db.Merger.EnqueueAsync(new DelegateCommand<int>(ctx =>
            {
                foreach (string id in chunk)
                    ctx.Delete(id, null);
                return chunk.Length;
            })).ConfigureAwait(false);
            state.AddProcessed(chunk.Length);
            await Pace(state.Processed, maxOpsPerSecond, pace, ct).ConfigureAwait(false);
        }
    }

    /// <summary>Documents per batch: with <c>maxOpsPerSec</c>, a tenth of a second's worth (at least one).</summary>
    private static int BatchSize(int batch, int? maxOpsPerSecond) => maxOpsPerSecond is { } max ? Math.Clamp(max / 10, 1, batch) : batch;

    /// <summary>With <c>maxOpsPerSec</c>, waits until the documents done so far are within the allowed pace.</summary>
    private static Task Pace(long done, int? maxOpsPerSecond, Stopwatch elapsed, CancellationToken ct)
    {
        if (maxOpsPerSecond is not { } max)
            return Task.CompletedTask;
        var due = TimeSpan.FromSeconds((double)done / max) - elapsed.Elapsed;
        return due > TimeSpan.Zero ? Task.Delay(due, ct) : Task.CompletedTask;
    }
}
