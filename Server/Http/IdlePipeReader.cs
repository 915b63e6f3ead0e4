using System.IO.Pipelines;

namespace RavenLite.Server.Http;

/// <summary>
/// A request body reader that gives up when the client sends nothing for the idle time while the server waits
/// for it: the pending read is cancelled and <see cref="ReadAsync"/> throws <see cref="TimeoutException"/>. Only time
/// spent waiting counts (not the server's own work between reads). For streams exempt from Kestrel's minimum data
/// rate (bulk insert), whose clients send heartbeats when they have nothing else to send.
/// </summary>
internal sealed class IdlePipeReader : PipeReader, IDisposable
{
    private readonly PipeReader _inner;
    private readonly TimeSpan _idle;
    private readonly CancellationTokenSource _timer = new();
    private readonly CancellationTokenRegistration _registration;

    public IdlePipeReader(PipeReader inner, TimeSpan idle)
    {
        _inner = inner;
        _idle = idle;
        _registration = _timer.Token.Register(static r => ((PipeReader)r!).CancelPendingRead(), inner);
    }

    /// <summary>True once the client stayed silent too long.</summary>
    public bool TimedOut => _timer.IsCancellationRequested;

    public override async ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default)
    {
        if (_inner.TryRead(out var ready))
            return ready;
        _timer.CancelAfter(_idle);
        var result = await _inner.ReadAsync(cancellationToken).ConfigureAwait(false);
        if (TimedOut)
            throw new TimeoutException($"The client sent nothing for {_idle.TotalSeconds:N0} s.");
        _timer.CancelAfter(Timeout.InfiniteTimeSpan);
        return result;
    }

    public override bool TryRead(out ReadResult result) => _inner.TryRead(out result);

    public override void AdvanceTo(SequencePosition consumed) => _inner.AdvanceTo(consumed);

    public override void AdvanceTo(SequencePosition consumed, SequencePosition examined) => _inner.AdvanceTo(consumed, examined);

    public override void CancelPendingRead() => _inner.CancelPendingRead();

    public override void Complete(Exception? exception = null) => _inner.Complete(exception);

    public void Dispose()
    {
        _registration.Dispose();
        _timer.Dispose();
    }
}
