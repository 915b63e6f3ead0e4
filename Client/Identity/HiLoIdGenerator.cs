using RavenLite.Client.Commands;
using RavenLite.Client.Http;

namespace RavenLite.Client.Identity;

/// <summary>
/// Generates ids <c>{prefix}/{n}-{node}</c> for one collection tag of one database from ranges
/// reserved with <c>hilo/next</c> (docs/protocol.md §10.1): most ids cost no request. Thread-safe;
/// ranges are fetched one at a time.
/// </summary>
internal sealed class HiLoIdGenerator(string tag, string database, RequestExecutor executor, char separator) : IDisposable
{
    private readonly SemaphoreSlim _fetch = new(1, 1);
    private volatile Window? _window;

    public async Task<string> NextIdAsync(CancellationToken cancellationToken)
    {
        while (true)
        {
            var w = _window;
            if (w != null)
            {
                long n = Interlocked.Increment(ref w.Current);
                if (n <= w.Range.High)
                    return w.Range.Prefix + n.ToString(System.Globalization.CultureInfo.InvariantCulture) + "-" + w.Range.ServerTag;
            }
            await _fetch.WaitAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                if (ReferenceEquals(_window, w))
                {
                    var range = await executor.ExecuteAsync(new HiLoNextCommand(tag, w?.Range.LastSize ?? 0, w?.Range.LastRangeAt, separator, w?.Range.High ?? 0), database, cancellationToken).ConfigureAwait(false);
                    _window = new Window(range) { Current = range.Low - 1 };
                }
            }
            finally
            {
                _fetch.Release();
            }
        }
    }

    /// <summary>Hands the unused rest of the current range back (store disposal), so the next store continues without a gap.</summary>
    public async Task ReturnUnusedAsync(CancellationToken cancellationToken)
    {
        var w = _window;
        if (w == null)
            return;
        long used = Math.Min(Interlocked.Read(ref w.Current), w.Range.High);
        if (used < w.Range.High)
            await executor.ExecuteAsync(new HiLoReturnCommand(tag, w.Range.High, used), database, cancellationToken).ConfigureAwait(false);
    }

    public void Dispose() => _fetch.Dispose();

    private sealed class Window(HiLoRange range)
    {
        public HiLoRange Range { get; } = range;
#pragma warning disable CA1051 // a field so Interlocked can increment it
        public long Current;
#pragma warning restore CA1051
    }
}
