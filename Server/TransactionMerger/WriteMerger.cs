using System.Diagnostics;
using System.Threading.Channels;
using RavenLite.Server.Documents;
using RavenLite.Storage;

namespace RavenLite.Server.TransactionMerger;

/// <summary>
/// The transaction merger of one database (DESIGN.md "Writes"): every write request is queued here;
/// one dedicated thread drains the queue into one storage write transaction, commits it once (one
/// journal write, one fsync) and only then completes every request in it.
/// Invariants:
/// 1. A command's <see cref="MergedCommand.Completion"/> succeeds only after the transaction holding
///    its writes committed durably (per the environment's durability mode).
/// 2. A command that throws never leaves writes behind: the shared transaction is rolled back and
///    every command of the batch is re-run alone, so one failing request does not fail the others.
/// 3. A batch closes when the queue is empty or it reaches the operation or byte bound.
/// Thread-safety: <see cref="EnqueueAsync"/> from any thread; everything else on the merger thread.
/// </summary>
public sealed class WriteMerger : IDisposable
{
    private readonly DocumentsStorage _storage;
    private readonly int _maxOperations;
    private readonly long _maxBytes;
    private readonly Channel<MergedCommand> _queue = Channel.CreateUnbounded<MergedCommand>(new UnboundedChannelOptions { SingleReader = true });
    private readonly Thread _thread;
    private long _transactions, _operations, _commands, _maxBatch, _lastBatch, _commitTicks;

    /// <summary>Starts the merger thread for <paramref name="storage"/>.</summary>
    public WriteMerger(DocumentsStorage storage, string databaseName, int maxOperations, long maxBytes)
    {
        _storage = storage;
        _maxOperations = maxOperations;
        _maxBytes = maxBytes;
        _thread = new Thread(Run) { IsBackground = true, Name = "RavenLite merger " + databaseName };
        _thread.Start();
    }

    /// <summary>Queues a command and returns its completion (see <see cref="MergedCommand.Completion"/>).</summary>
    public Task EnqueueAsync(MergedCommand command)
    {
        ArgumentNullException.ThrowIfNull(command);
        if (!_queue.Writer.TryWrite(command))
            command.Fail(new ObjectDisposedException("The database is shutting down."));
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
        var batch = new List<MergedCommand>();
        while (reader.WaitToReadAsync().AsTask().GetAwaiter().GetResult())
        {
            batch.Clear();
            try
            {
                RunBatch(reader, batch);
            }
            catch (Exception e)
            {
                // Commit failed (I/O, storage failed): nothing in the batch is durable.
                foreach (var c in batch)
                    c.Fail(e);
            }
        }
    }

    private void RunBatch(ChannelReader<MergedCommand> reader, List<MergedCommand> batch)
    {
        long ops = 0, bytes = 0;
        bool failed = false;
        using (var tx = _storage.Environment.WriteTransaction())
        {
            var context = _storage.BeginWrite(tx);
            while (ops < _maxOperations && bytes < _maxBytes && reader.TryRead(out var command))
            {
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
                long t0 = Stopwatch.GetTimestamp();
                tx.Commit();
                Interlocked.Add(ref _commitTicks, Stopwatch.GetTimestamp() - t0);
                Record(batch.Count, ops);
                foreach (var c in batch)
                    c.Succeed();
                return;
            }
        }
        // One command threw: the shared transaction is rolled back; re-run each alone so only the culprit fails.
        foreach (var c in batch)
            RunAlone(c);
    }

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
            command.Succeed();
        }
        catch (Exception e)
        {
            command.Fail(e);
        }
    }

    private void Record(int commands, long ops)
    {
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
        _thread.Join();
    }
}

/// <summary>Merger counters for stats.</summary>
public sealed record MergerStats(long Transactions, long Operations, long Commands, double AverageOperationsPerTransaction, long LargestTransaction, long LastTransaction, double AverageCommitMs);
