namespace RavenLite.Server.Http;

/// <summary>
/// Counts requests and keeps their latencies per second in log-scale buckets (four per power of two, so a percentile
/// is within 19% of the truth), for the Studio's dashboard: total requests, and p50/p99 of the last complete second.
/// It reads ASP.NET Core's own <c>http.server.request.duration</c> instrument of this app (a MeterListener), the
/// one the Prometheus endpoint exports too, so requests are measured once. A second's buckets are cleared by the
/// first request of the next second that reuses them (a few concurrent increments may be lost then: these are
/// metrics, not accounting).
/// </summary>
public sealed class RequestMetrics : IDisposable
{
    private const int Buckets = 4 * 40; // up to 2^40 ticks
    private readonly long[][] _slots = [new long[Buckets], new long[Buckets]];
    private readonly long[] _slotSecond = [-1, -1];
    private readonly System.Diagnostics.Metrics.MeterListener _listener = new();
    private long _total;

    public RequestMetrics(System.Diagnostics.Metrics.IMeterFactory meters, Configuration.ServerOptions options, IHostApplicationLifetime lifetime)
    {
        if (!options.Metrics)
            return; // Metrics=false: no request is measured (the dashboard shows no request rates)
        // Listening only while the app runs: a started MeterListener is referenced from a static list until disposed,
        // so an app that is built but never started (or never disposed) must not have one.
        lifetime.ApplicationStarted.Register(_listener.Start);
        lifetime.ApplicationStopping.Register(_listener.Dispose);
        _listener.InstrumentPublished = (instrument, listener) =>
        {
            if (instrument.Meter.Name == "Microsoft.AspNetCore.Hosting" && instrument.Name == "http.server.request.duration" && ReferenceEquals(instrument.Meter.Scope, meters))
                listener.EnableMeasurementEvents(instrument);
        };
        _listener.SetMeasurementEventCallback<double>((_, seconds, _, _) => Record((long)(seconds * Stopwatch.Frequency)));
    }

    public void Dispose() => _listener.Dispose();
    /// <summary>Requests answered since the server started.</summary>
    public long Total => Interlocked.Read(ref _total);

    /// <summary>Records one request that took <paramref name="ticks"/> Stopwatch ticks.</summary>
    public void Record(long ticks)
    {
        Interlocked.Increment(ref _total);
        long second = Stopwatch.GetTimestamp() / Stopwatch.Frequency;
        int slot = (int)(second & 1);
        if (Volatile.Read(ref _slotSecond[slot]) != second)
        {
            lock (_slots[slot])
            {
                if (_slotSecond[slot] != second)
                {
                    Array.Clear(_slots[slot]);
                    Volatile.Write(ref _slotSecond[slot], second);
                }
            }
        }
        Interlocked.Increment(ref _slots[slot][Bucket(ticks)]);
    }

    /// <summary>Requests, p50 and p99 latency (ms) of the last complete second.</summary>
    public (long Count, double P50Ms, double P99Ms) LastSecond()
    {
        long previous = Stopwatch.GetTimestamp() / Stopwatch.Frequency - 1;
        int slot = (int)(previous & 1);
        if (Volatile.Read(ref _slotSecond[slot]) != previous)
            return (0, 0, 0);
        var counts = _slots[slot].Select(c => Interlocked.Read(ref c)).ToArray();
        long n = counts.Sum();
        return n == 0 ? (0, 0, 0) : (n, Percentile(counts, n, 0.50), Percentile(counts, n, 0.99));
    }

    private static int Bucket(long ticks)
    {
        if (ticks < 4)
            return (int)Math.Max(0, ticks);
        int log = 63 - (int)long.LeadingZeroCount(ticks); // ≥ 2
        int sub = (int)((ticks >> (log - 2)) & 3);
        return Math.Min(Buckets - 1, log * 4 + sub);
    }

    private static double UpperBoundMs(int bucket)
    {
        double ticks = bucket < 4 ? bucket + 1 : Math.Pow(2, bucket / 4) * (1 + (bucket % 4 + 1) / 4.0);
        return ticks * 1000.0 / Stopwatch.Frequency;
    }

    private static double Percentile(long[] counts, long n, double q)
    {
        long rank = (long)Math.Ceiling(q * n), seen = 0;
        for (int b = 0; b < counts.Length; b++)
        {
            seen += counts[b];
            if (seen >= rank)
                return UpperBoundMs(b);
        }
        return UpperBoundMs(counts.Length - 1);
    }
}
