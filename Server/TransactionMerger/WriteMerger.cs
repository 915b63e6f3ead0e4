using System.Threading.Channels;
using RavenLite.Server.Documents;
using RavenLite.Storage;

namespace RavenLite.Server.TransactionMerger;

/// <summary>
/// The transaction merger of one database (docs/architecture.md): every write request is queued here;
/// one dedicated thread drains the queue into one storage write transaction, commits it once (one
/// journal write, one fsync) and only then completes every request in it. Commits are async: while
/// one batch's journal write is in flight the next batch already executes on top of it.
/// Invariants:
/// 1. A command's <see cref="MergedCommand.Completion"/> succeeds only after the transaction holding
///    its writes committed durably (per the environment's durability mode).
/// 2. A command that throws never leaves writes behind: the shared transaction is rolled back and
///    every command of the batch is re-run alone, so one failing request does not fail the others.
/// 3. A batch closes when it reaches the operation or byte bound, or when the queue is empty and
///    no earlier commit is in flight; at most one commit is in flight.
/// 4. A batch's commit is queued before the requests of the previous (durable) batch are answered, so
///    answering them (on this thread for completeInline commands) overlaps the next journal write.
/// Thread-safety: <see cref="EnqueueAsync"/> from any thread; everything else on the merger thread.
/// </summary>
public sealed class WriteMerger : IDisposable
{
    /// <summary>A lone command up to this many operations commits on the merger thread when nothing else is queued (no overlap to gain).</summary>
    private const int InlineCommitMaxOperations = 16;

    private readonly DocumentsStorage _storage;
    private readonly int _maxOperations;
    private readonly long _maxBytes;
    private readonly Channel<MergedCommand> _queue = Channel.CreateUnbounded<MergedCommand>(new UnboundedChannelOptions { SingleReader = true });
    private readonly Thread _thread;
    private readonly ManualResetEventSlim _wake = new(false, spinCount: 0);
    private readonly Action _wakeUp;
    private long _transactions, _operations, _commands, _maxBatch, _lastBatch, _commitTicks;

    /// <summary>Starts the merger thread for <paramref name="storage"/>.</summary>
    public WriteMerger(DocumentsStorage storage, string databaseName, int maxOperations, long maxBytes)
    {
        _storage = storage;
        _maxOperations = maxOperations;
        _maxBytes = maxBytes;
        _wakeUp = _wake.Set;
        _thread = new Thread(Run) { IsBackground = true, Name = "RavenLite merger " + databaseName };
        _thread.Start();
    }

    /// <summary>Called on the merger thread after each durable commit (the indexes' wake-up).</summary>
    public Action? Committed { get; set; }

    /// <summary>Queues a command; the task completes when its transaction is durable (or faults with its error).</summary>
    public Task EnqueueAsync(MergedCommand command)
    {
        ArgumentNullException.ThrowIfNull(command);
        if (!_queue.Writer.TryWrite(command))
            command.Fail(new ObjectDisposedException("The database is shutting down."));
        else
            _wake.Set();
        return command.Completion;
    }

    /// <summary>Counters: transactions committed, operations and commands in them, largest and last batch.</summary>
    public MergerStats GetStats()
    {
        long tx = Interlocked.Read(ref _transactions), ops = Interlocked.Read(ref _operations);
        return new MergerStats(tx, ops, Interlocked.Read(ref _commands), tx == 0 ? 0 : (double)ops / tx,
            Interlocked.Read(ref _maxBatch), Interlocked.Read(ref _lastBatch),
            tx == 0 ? 0 : Interlocked.Read(ref _commitTicks) * 1000.0 / Stopwatch.Frequency / tx);
    }

    private void Run()
    {
        var reader = _queue.Reader;
        InFlight? inFlight = null;
        while (true)
        {
            if (!reader.TryPeek(out _))
            {
                if (inFlight != null)
                {
                    // Nothing queued: answer the in-flight commit's requests as soon as it is durable, unless work arrives first.
                    var f = inFlight;
                    WaitFor(() => f.Commit.IsCompleted || reader.TryPeek(out _));
                    if (!reader.TryPeek(out _))
                    {
                        Finish(inFlight);
                        inFlight = null;
                    }
                    continue;
                }
                if (reader.Completion.IsCompleted)
                    break;
                WaitFor(() => reader.TryPeek(out _) || reader.Completion.IsCompleted);
                continue;
            }
            var batch = new List<MergedCommand>();
            try
            {
                RunBatch(reader, batch, ref inFlight);
            }
            catch (Exception e)
            {
                // Could not begin or queue the commit (storage failed): nothing in the batch is durable.
                if (inFlight != null)
                {
                    Finish(inFlight);
                    inFlight = null;
                }
                foreach (var c in batch)
                    c.Fail(e);
            }
        }
        if (inFlight != null)
            Finish(inFlight);
    }

    /// <summary>
    /// Blocks until <paramref name="ready"/> holds, woken by enqueues, commit completions and shutdown.
    /// A kernel wait with no spinning: on a small machine a spinning merger takes the CPU the request threads need.
    /// </summary>
    private void WaitFor(Func<bool> ready)
    {
        while (true)
        {
            _wake.Reset();
            if (ready())
                return;
            _wake.Wait();
        }
    }

    /// <summary>
    /// Runs one batch in one write transaction. While the previous batch's commit is in flight the
    /// batch stays open for requests that arrive meanwhile (async commit: execution overlaps the
    /// journal write); it closes at the bounds, or when the queue is empty and nothing is in flight.
    /// Then it waits for the previous commit, answers its requests, and queues its own commit.
    /// </summary>
    private void RunBatch(ChannelReader<MergedCommand> reader, List<MergedCommand> batch, ref InFlight? inFlight)
    {
        long ops = 0, bytes = 0;
        bool failed = false;
        using (var tx = _storage.Environment.WriteTransaction())
        {
            var context = _storage.BeginWrite(tx);
            while (ops < _maxOperations && bytes < _maxBytes)
            {
                if (!reader.TryRead(out var command))
                {
                    if (inFlight == null || inFlight.Commit.IsCompleted || reader.Completion.IsCompleted)
                        break;
                    var f = inFlight;
                    WaitFor(() => f.Commit.IsCompleted || reader.TryPeek(out _) || reader.Completion.IsCompleted);
                    continue;
                }
                batch.Add(command);
                ops += command.Operations;
                bytes += command.Bytes;
                try
                {
                    command.Execute(context);
                }
                catch (Exception e) when (e is not StorageFailedException)
                {
                    failed = true;
                    break;
                }
            }
            if (!failed)
            {
                context.Complete();
                // The previous commit must be durable before this one is queued (one in flight). Its requests are
                // answered only after this commit is queued, so the journal writes and syncs this batch while this
                // thread answers them (completeInline commands send their answers here).
                InFlight? previous = null;
                if (inFlight != null)
                {
                    previous = inFlight;
                    WaitFor(() => previous.Commit.IsCompleted);
                    inFlight = null;
                    if (!previous.Commit.IsCompletedSuccessfully)
                    {
                        Finish(previous); // storage failed: the commit below fails too
                        previous = null;
                    }
                }
                try
                {
                    long t0 = Stopwatch.GetTimestamp();
                    // A lone small request with nothing queued behind it (one client): nothing to overlap, so write the
                    // journal on this thread and save the hop. Otherwise (more requests, or a bulk-insert batch whose
                    // stream keeps coming) the next batch runs during this one's compression, write and fsync.
                    bool lone = previous == null && batch.Count == 1 && ops <= InlineCommitMaxOperations && !reader.TryPeek(out _);
                    var commit = tx.CommitAsync(writeHereWhenIdle: lone, onCompleted: _wakeUp);
                    inFlight = new InFlight(commit, batch, ops, t0, context.TakeChanges());
                }
                finally
                {
                    if (previous != null)
                        Finish(previous);
                }
                return;
            }
        }
        // One command threw: the shared transaction is rolled back; re-run each alone so only the culprit fails.
        if (inFlight != null)
        {
            Finish(inFlight);
            inFlight = null;
        }
        foreach (var c in batch)
            RunAlone(c);
    }

    /// <summary>Waits for a commit to be durable, then answers its requests (or fails them with the commit's error).</summary>
    private void Finish(InFlight f)
    {
        try
        {
            f.Commit.GetAwaiter().GetResult();
        }
        catch (Exception e)
        {
            foreach (var c in f.Batch)
                c.Fail(e);
            return;
        }
        Interlocked.Add(ref _commitTicks, Stopwatch.GetTimestamp() - f.Started);
        Record(f.Batch.Count, f.Operations);
        Committed?.Invoke();
        if (f.Changes != null)
            _storage.Changes.Publish(f.Changes);
        foreach (var c in f.Batch)
            c.Succeed();
    }

    private sealed record InFlight(Task Commit, List<MergedCommand> Batch, long Operations, long Started, List<Changes.ChangeEvent>? Changes);

    private void RunAlone(MergedCommand command)
    {
        try
        {
            using var tx = _storage.Environment.WriteTransaction();
            var context = _storage.BeginWrite(tx);
            command.Execute(context);
            context.Complete();
            long t0 = Stopwatch.GetTimestamp();
            tx.Commit();
            Interlocked.Add(ref _commitTicks, Stopwatch.GetTimestamp() - t0);
            Record(1, command.Operations);
            Committed?.Invoke();
            if (context.TakeChanges() is { } changes)
                _storage.Changes.Publish(changes);
            command.Succeed();
        }
        catch (Exception e)
        {
            command.Fail(e);
        }
    }

    /// <summary>The merger's meter (exported by <see cref="Monitoring.ServerMetrics"/>).</summary>
    public const string MeterName = "RavenLite.Merger";

    private static readonly System.Diagnostics.Metrics.Meter Meter = new(MeterName);

    private static readonly System.Diagnostics.Metrics.Histogram<long> BatchSize =
        Meter.CreateHistogram<long>("ravenlite.merger.batch.size", "{operation}", "Operations per merged transaction");

    private void Record(int commands, long ops)
    {
        BatchSize.Record(ops);
        Interlocked.Increment(ref _transactions);
        Interlocked.Add(ref _operations, ops);
        Interlocked.Add(ref _commands, commands);
        Interlocked.Exchange(ref _lastBatch, ops);
        if (ops > Interlocked.Read(ref _maxBatch))
            Interlocked.Exchange(ref _maxBatch, ops);
    }

    /// <summary>Stops taking commands, finishes the queued ones, and stops the thread.</summary>
    public void Dispose()
    {
        _queue.Writer.TryComplete();
        _wake.Set();
        _thread.Join();
        // _wake is not disposed: a journal thread may still call Set after the last Finish returned (it holds no kernel handle).
    }
}

/// <summary>Merger counters for stats.</summary>
public sealed record MergerStats(long Transactions, long Operations, long Commands, double AverageOperationsPerTransaction, long LargestTransaction, long LastTransaction, double AverageCommitMs);
