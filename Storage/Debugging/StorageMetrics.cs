using System.Diagnostics.Metrics;

namespace RavenLite.Storage;

/// <summary>
/// The storage engine's instruments (meter <c>RavenLite.Storage</c>; the server exports them with OpenTelemetry):
/// what only the engine sees as it happens. Counters the engine keeps anyway (commits, journal bytes, flushes) are
/// read from <see cref="StorageEnvironment.GetStats"/> when metrics are collected instead.
/// </summary>
public static class StorageMetrics
{
    /// <summary>The meter's name.</summary>
    public const string MeterName = "RavenLite.Storage";

    private static readonly Meter Meter = new(MeterName);

    /// <summary>Seconds per journal fdatasync (one per group commit in Sync mode).</summary>
    internal static readonly Histogram<double> JournalFsync = Meter.CreateHistogram<double>("ravenlite.storage.journal.fsync.duration", "s", "Time of one journal fdatasync (group commit)");
}
