using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Logging;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Etl;

/// <summary>
/// One transformation of one ETL task, running (docs/etl.md "Running"): woken by every commit, it reads the changes
/// after its position in etag order from a snapshot — a batch bounded by <see cref="Configuration.ServerOptions.EtlBatchItems"/>
/// and <see cref="Configuration.ServerOptions.EtlBatchMilliseconds"/> —, runs the script on each document of its
/// collections, loads the batch in one destination transaction, then stores the new position. A destination that
/// fails is retried with back-off from the same position (100 ms doubling to 30 s); a script that fails stops the
/// process with the error (it starts again when the task changes or is reset).
/// </summary>
internal sealed class EtlProcess : IDisposable
{
    private readonly Database _db;
    private readonly IEtlDestination _destination;
    private readonly ILogger _logger;
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _loop;
    private readonly EtlExtraction _extraction;
    private const int ChunkChanges = 256; // changes read before the scripts run on them (split between the engines)
    private TaskCompletionSource _wake = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private Task? _loading; // the previous batch's load, while the next one is read
    private long _readUpTo; // the last etag read into a batch that is loading

    public EtlProcess(Database db, EtlTask task, EtlTransformation transformation, IEtlDestination destination, ILogger logger)
    {
        _db = db;
        Task = task;
        Transformation = transformation;
        _destination = destination;
        _logger = logger;
        using (var tx = db.Environment.ReadTransaction())
            LastProcessedEtag = EtlPositions.Read(tx, task.TaskId, transformation.Name);
        _extraction = new EtlExtraction(task, transformation, db.Environment, db.Documents, TimeSpan.FromMilliseconds(db.Options.EtlBatchMilliseconds));
        _loop = System.Threading.Tasks.Task.Run(() => RunAsync(_stop.Token));
    }

    public EtlTask Task { get; }

    public EtlTransformation Transformation { get; }

    /// <summary>The last etag loaded (durably at the destination).</summary>
    public long LastProcessedEtag { get; private set; }

    /// <summary>Running, Reconnect (the destination failed: retrying) or Error (the script failed: stopped).</summary>
    public string State { get; private set; } = "Running";

    /// <summary>Why the last batch failed (null while it works).</summary>
    public string? Error { get; private set; }

    /// <summary>When the destination last committed a batch (UTC).</summary>
    public DateTime? LastBatchAt { get; private set; }

    /// <summary>Documents (and deletions) loaded since the process started.</summary>
    public long Loaded => Interlocked.Read(ref _loaded);

    private long _loaded;

    /// <summary>Batches the destination refused or failed since the process started.</summary>
    public long Failures => Interlocked.Read(ref _failures);

    private long _failures;

    /// <summary>Wakes the process: the database committed writes.</summary>
    public void Notify() => Interlocked.Exchange(ref _wake, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();

    private async Task RunAsync(CancellationToken stop)
    {
        try
        {
            await LoopAsync(stop).ConfigureAwait(false);
        }
        finally
        {
            // A batch still loading when the process stops or fails ends first (its position is stored if it commits).
            try
            {
                await FinishLoadingAsync().ConfigureAwait(false);
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                Log.EtlLoadFailed(_logger, _db.Name, Task.Name, Transformation.Name, e.Message);
            }
        }
    }

    private async Task LoopAsync(CancellationToken stop)
    {
        int failures = 0;
        while (!stop.IsCancellationRequested)
        {
            var wake = Volatile.Read(ref _wake).Task;
            try
            {
                if (await RunBatchAsync(stop).ConfigureAwait(false))
                {
                    failures = 0;
                    continue;
                }
                failures = 0;
                State = "Running";
                Error = null;
                // Caught up: the next commit wakes it — or the batch still loading ending, so that its failure shows and is retried at once.
                var idle = System.Threading.Tasks.Task.Delay(TimeSpan.FromSeconds(5), stop);
                await System.Threading.Tasks.Task.WhenAny(wake, idle, _loading ?? idle).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (stop.IsCancellationRequested)
            {
                return;
            }
            catch (EtlScriptException e)
            {
                State = "Error";
                Error = e.Message;
                Log.EtlStopped(_logger, _db.Name, Task.Name, Transformation.Name, e.Message);
                return;
            }
            catch (Exception e)
            {
                // The destination failed (EtlLoadException), or something unforeseen did: either way the batch is
                // retried from the same position, the error shown, rather than the task dying silently.
                State = "Reconnect";
                Error = e is EtlLoadException ? e.Message : $"{e.GetType().Name}: {e.Message}";
                failures++;
                Interlocked.Increment(ref _failures);
                Log.EtlLoadFailed(_logger, _db.Name, Task.Name, Transformation.Name, e.Message);
                var backoff = TimeSpan.FromMilliseconds(Math.Min(30_000, 100 * (1 << Math.Min(failures, 9))));
                try
                {
                    await System.Threading.Tasks.Task.Delay(backoff, stop).ConfigureAwait(false);
                }
                catch (OperationCanceledException)
                {
                    return;
                }
            }
        }
    }

    /// <summary>
    /// Reads one batch and starts loading it; true when it was full (more may be waiting). The scripts run on a chunk
    /// of changes while this thread reads the next chunk and adds the previous one's results to the batch. A batch's
    /// load runs while the next batch is read (its read transaction lives until the load ends); batches are loaded one
    /// at a time, in order. A failed load throws from the next call, and reading starts again after the last batch loaded.
    /// </summary>
    private async Task<bool> RunBatchAsync(CancellationToken stop)
    {
        var options = _db.Options;
        var started = Stopwatch.GetTimestamp();
        long from = _loading == null ? LastProcessedEtag : _readUpTo;
        long last = from;
        bool full = false;
        var tx = _db.Environment.ReadTransaction();
        var batch = _destination.NewBatch(tx);
        try
        {
            _extraction.BeginBatch(tx);
            var chunk = new List<EtagItem>(ChunkChanges);
            (Task<EtlItem?[]> Items, long Last, int Count)? running = null;
            void Add(EtlItem?[] items, long lastEtag)
            {
                foreach (var item in items)
                    if (item != null)
                        batch.Add(item);
                last = lastEtag;
            }
            void Dispatch()
            {
                // The engines take one chunk at a time: the previous chunk's results first, then this chunk starts,
                // and the previous results are added to the batch while it runs.
                var previous = running;
                var done = previous?.Items.GetAwaiter().GetResult();
                running = (_extraction.Start(chunk), chunk[^1].Etag, chunk.Count);
                chunk = new List<EtagItem>(ChunkChanges);
                if (done != null)
                    Add(done, previous!.Value.Last);
            }
            try
            {
                foreach (var change in _db.Documents.ScanByEtag(tx, from))
                {
                    chunk.Add(change);
                    // A chunk never takes the batch past EtlBatchItems (counting every change running as an item).
                    if (chunk.Count < ChunkChanges && batch.Count + (running?.Count ?? 0) + chunk.Count < options.EtlBatchItems)
                        continue;
                    Dispatch();
                    if (batch.Count + running!.Value.Count >= options.EtlBatchItems || Stopwatch.GetElapsedTime(started).TotalMilliseconds >= options.EtlBatchMilliseconds)
                    {
                        full = true;
                        break;
                    }
                }
                if (chunk.Count > 0)
                    Dispatch();
                if (running is { } lastRun)
                {
                    var done = lastRun.Items.GetAwaiter().GetResult();
                    running = null;
                    Add(done, lastRun.Last);
                }
            }
            finally
            {
                // A chunk still running (the batch failed or stops) ends before its engines' transactions do.
                if (running is { } r)
                    await System.Threading.Tasks.Task.WhenAny(r.Items).ConfigureAwait(false); // its failure, if any, is not this one's
                _extraction.EndBatch();
            }
            stop.ThrowIfCancellationRequested();
            await FinishLoadingAsync().ConfigureAwait(false);
        }
        catch
        {
            batch.Dispose();
            tx.Dispose();
            throw;
        }
        if (last == from)
        {
            batch.Dispose();
            tx.Dispose();
            return false;
        }
        _readUpTo = last;
        _loading = System.Threading.Tasks.Task.Run(() => LoadAsync(batch, tx, last, stop), CancellationToken.None);
        return full;
    }

    /// <summary>Loads a batch read in <paramref name="tx"/> (both disposed after), then stores the position <paramref name="last"/>.</summary>
    private async Task LoadAsync(IEtlBatch batch, Storage.Transactions.ReadTransaction tx, long last, CancellationToken stop)
    {
        int count = batch.Count;
        try
        {
            await batch.LoadAsync(stop).ConfigureAwait(false);
        }
        finally
        {
            batch.Dispose();
            tx.Dispose();
        }
        long id = Task.TaskId;
        string name = Transformation.Name;
        await _db.Merger.EnqueueAsync(new DelegateCommand<long>(ctx =>
        {
            EtlPositions.Write(ctx.Transaction, id, name, last);
            return 0;
        })).ConfigureAwait(false);
        LastProcessedEtag = last;
        LastBatchAt = DateTime.UtcNow;
        Interlocked.Add(ref _loaded, count);
        State = "Running";
        Error = null;
    }

    /// <summary>Waits for the batch being loaded, if any; throws what its load threw.</summary>
    private async Task FinishLoadingAsync()
    {
        var loading = _loading;
        _loading = null;
        if (loading != null)
            await loading.ConfigureAwait(false);
    }

    /// <summary>How far behind the database the process is: etags and the age of the oldest change not loaded.</summary>
    public (long Etags, double Milliseconds) Lag()
    {
        using var tx = _db.Environment.ReadTransaction();
        long lastEtag = DocumentsStorage.LastEtag(tx);
        var pending = LastProcessedEtag < lastEtag ? _db.Documents.ScanByEtag(tx, LastProcessedEtag).FirstOrDefault() : null;
        var at = pending?.Document?.LastModified ?? pending?.Tombstone?.Deleted;
        return (Math.Max(0, lastEtag - LastProcessedEtag), at is { } t && t > DateTime.MinValue ? Math.Max(0, (DateTime.UtcNow - t).TotalMilliseconds) : 0);
    }

    public void Dispose()
    {
        _stop.Cancel();
        try
        {
            _loop.Wait(TimeSpan.FromSeconds(30));
        }
        catch (AggregateException)
        {
        }
        _extraction.Dispose();
        _destination.Dispose();
        _stop.Dispose();
    }
}
