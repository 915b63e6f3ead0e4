using RavenLite.Server.Databases;
using RavenLite.Server.Queries;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Operations;

/// <summary>
/// Operations by query (RavenDB's <c>PatchByQueryOperation</c> and <c>DeleteByQueryOperation</c>) run in the
/// background: the ids the query matches are collected first, then processed in batches, each one merged
/// transaction, so other writes go on between them. A patch runs its script on a snapshot outside the merger and
/// writes only documents it changed, each only if nobody changed it meanwhile (else it is patched again from its new
/// version). A pace (documents per second) limits both.
/// </summary>
public static class ByQueryOperation
{
    private const int PatchBatch = 256;
    private const int DeleteBatch = 1024;

    /// <summary>
    /// Starts operation <paramref name="kind"/> in the background: collects the ids <paramref name="query"/> matches
    /// (<paramref name="options"/> say how stale its index may be), then runs <paramref name="work"/> over them; the
    /// state's result or fault says how it ended (never left in progress). <paramref name="done"/> runs at the end.
    /// </summary>
    /// <exception cref="UnavailableException">The database is closing.</exception>
    public static OperationState Start(Database db, string kind, RqlQuery query, JsonElement parameters, QueryOptions options,
        Func<OperationState, List<string>, CancellationToken, Task> work, Action? done) =>
        BackgroundOperation.Start(db, kind, async state =>
        {
            var ids = await QueryRunner.MatchingIdsAsync(db, query, parameters, options, state.Token).ConfigureAwait(false);
            state.Total = ids.Count;
            await work(state, ids, state.Token).ConfigureAwait(false);
        }, done);

    /// <summary>Patch by query: <paramref name="script"/> over what <paramref name="query"/> matches, at most <paramref name="maxOpsPerSecond"/> documents a second.</summary>
    internal static OperationState StartPatch(Database db, RqlQuery query, JsonElement parameters, QueryOptions options, PatchScript script, int? maxOpsPerSecond) =>
        Start(db, "UpdateByQuery", query, parameters, options, (state, ids, ct) => PatchAll(db, state, ids, script, maxOpsPerSecond, ct), script.Dispose);

    /// <summary>Delete by query: deletes what <paramref name="query"/> matches, at most <paramref name="maxOpsPerSecond"/> documents a second.</summary>
    public static OperationState StartDelete(Database db, RqlQuery query, JsonElement parameters, QueryOptions options, int? maxOpsPerSecond) =>
        Start(db, "DeleteByQuery", query, parameters, options, (state, ids, ct) => DeleteAll(db, state, ids, maxOpsPerSecond, ct), null);

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
            var patched = new List<(string Id, string ChangeVector, byte[]? Json, List<PatchEffect> Effects)>();
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
                    var json = script.Run(doc, other => db.Documents.Get(tx, other),
                        (other, name) => db.Documents.Get(tx, other) is { } d ? Counters.CountersStore.Get(tx, db.Documents.KeyOf(d.Id), name)?.Value : null);
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
                    DocumentPatch.ApplyEffects(ctx, effects); // its put()/del() in the same transaction
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
