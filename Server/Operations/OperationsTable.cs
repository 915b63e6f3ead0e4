using System.Collections.Concurrent;

namespace RavenLite.Server.Operations;

/// <summary>
/// Long-running operations of one database (bulk inserts): ids from <see cref="NextId"/>, state per
/// id for <c>operations/state</c>, cancellation for <c>operations/kill</c>. Finished operations are
/// kept (the most recent 1,000) so a client can ask why one failed. Thread-safe.
/// </summary>
public sealed class OperationsTable
{
    private const int KeepFinished = 1000;
    private readonly ConcurrentDictionary<long, OperationState> _states = new();
    private readonly ConcurrentQueue<long> _finished = new();
    private long _lastId;

    /// <summary>A fresh operation id.</summary>
    public long NextId() => Interlocked.Increment(ref _lastId);

    /// <summary>Registers a running operation under <paramref name="id"/> (an id a client got from <see cref="NextId"/>, or a new one when taken).</summary>
    public OperationState Start(long id, string kind)
    {
        var state = new OperationState(id, kind);
        if (!_states.TryAdd(id, state))
        {
            state = new OperationState(NextId(), kind);
            _states[state.Id] = state;
        }
        // Keep the counter ahead of ids clients chose themselves.
        long seen;
        while ((seen = Interlocked.Read(ref _lastId)) < state.Id && Interlocked.CompareExchange(ref _lastId, state.Id, seen) != seen)
        {
        }
        return state;
    }

    /// <summary>Marks an operation finished, trimming old finished ones.</summary>
    public void Finished(OperationState state)
    {
        OnFinished?.Invoke(state);
        _finished.Enqueue(state.Id);
        while (_finished.Count > KeepFinished && _finished.TryDequeue(out long old))
        {
            if (_states.TryRemove(old, out var removed))
                removed.Dispose();
        }
    }

    /// <summary>
    /// Runs <paramref name="work"/> in the background as operation <paramref name="state"/>: its result JSON completes
    /// the operation; an exception faults it as <see cref="ErrorMapping"/> classifies it (a domain error with its type and
    /// status), a 500 named by <paramref name="failure"/>. The operation is marked finished either way.
    /// </summary>
    public void RunInBackground(OperationState state, Func<Task<byte[]>> work, string failure)
    {
        ArgumentNullException.ThrowIfNull(state);
        ArgumentNullException.ThrowIfNull(work);
        _ = Task.Run(async () =>
        {
            try
            {
                state.ResultJson = await work().ConfigureAwait(false);
                state.Complete();
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                // Classified as an HTTP answer would be: bad input (a domain error, JSON that reads wrong) is the
                // caller's 4xx; only the server's own failures are 500s, named by what did not complete.
                var (status, type, message) = ErrorMapping.Classify(e);
                state.Fault(type, status >= 500 && e is not DomainException ? $"{failure}: {message}" : message, status);
            }
            finally
            {
                Finished(state);
            }
        });
    }

    /// <summary>Told of each operation that ended (the changes API's operation notifications).</summary>
    public Action<OperationState>? OnFinished { get; set; }

    /// <summary>The state of an operation, or null when unknown (never started, or forgotten).</summary>
    public OperationState? Get(long id) => _states.TryGetValue(id, out var s) ? s : null;

    /// <summary>Cancels every running operation (shutdown, delete).</summary>
    public void CancelAll()
    {
        foreach (var s in _states.Values)
            s.Cancel();
    }
}

/// <summary>Status values as the clients know them.</summary>
public enum OperationStatus
{
    /// <summary>Running.</summary>
    InProgress,

    /// <summary>Finished successfully.</summary>
    Completed,

    /// <summary>Failed; <see cref="OperationState.Error"/> says why.</summary>
    Faulted,

    /// <summary>Killed by <c>operations/kill</c> or shutdown.</summary>
    Canceled,
}

/// <summary>One operation's progress and outcome. Updated by its owner, read by state requests.</summary>
public sealed class OperationState(long id, string kind) : IDisposable
{
    private readonly CancellationTokenSource _cts = new();
    private long _processed;
    private long _skipped;

    /// <summary>The operation id.</summary>
    public long Id { get; } = id;

    /// <summary>What it is (<c>BulkInsert</c>).</summary>
    public string Kind { get; } = kind;

    /// <summary>Current status.</summary>
    public OperationStatus Status { get; private set; } = OperationStatus.InProgress;

    /// <summary>Documents committed so far.</summary>
    public long Processed => Interlocked.Read(ref _processed);

    /// <summary>Why it failed (status Faulted or Canceled), or null.</summary>
    public string? Error { get; private set; }

    /// <summary>Client exception type of the failure.</summary>
    public string? ErrorType { get; private set; }

    /// <summary>HTTP status the failure was answered with.</summary>
    public int ErrorStatus { get; private set; }

    /// <summary>Cancelled by kill or shutdown.</summary>
    public CancellationToken Token => _cts.Token;

    /// <summary>Documents the operation will process when known (operations by query), else -1.</summary>
    public long Total { get; set; } = -1;

    /// <summary>Adds committed documents.</summary>
    public void AddProcessed(long n) => Interlocked.Add(ref _processed, n);

    /// <summary>Items processed but left as they were (bulk insert's <c>skipOverwriteIfUnchanged</c>); part of <see cref="Processed"/>.</summary>
    public long Skipped => Interlocked.Read(ref _skipped);

    /// <summary>Adds to <see cref="Skipped"/>.</summary>
    public void AddSkipped(long n) => Interlocked.Add(ref _skipped, n);

    /// <summary>Sets status Completed.</summary>
    public void Complete() => Status = OperationStatus.Completed;

    /// <summary>The result a completed operation reports when it is not a bulk operation's counts (an import's or export's), as JSON.</summary>
    public byte[]? ResultJson { get; set; }

    /// <summary>Sets status Faulted (or Canceled when it was killed) with the error.</summary>
    public void Fault(string type, string message, int status)
    {
        ErrorType = type;
        Error = message;
        ErrorStatus = status;
        Status = _cts.IsCancellationRequested ? OperationStatus.Canceled : OperationStatus.Faulted;
    }

    /// <summary>Releases the cancellation source.</summary>
    public void Dispose() => _cts.Dispose();

    /// <summary>Requests cancellation.</summary>
    public void Cancel()
    {
        try
        {
            _cts.Cancel();
        }
        catch (ObjectDisposedException)
        {
        }
    }
}
