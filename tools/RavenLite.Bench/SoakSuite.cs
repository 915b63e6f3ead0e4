using System.Net;
using RavenLite.TestKit;

namespace RavenLite.Bench;

/// <summary>
/// Soak: 64 clients PUT documents (random ids over a fixed set of 100,000, so the data stops growing once
/// the set is written) and 8 clients GET random ones, for <c>minutes</c> (30 by default). The server runs as a child
/// process; its resident set (VmRSS) is sampled every 5 s, and each minute's PUT and GET latencies are kept. After a
/// warm-up (a fifth of the run, at least 2 minutes when the run is long enough) the RSS may grow by at most 5%
/// (mean of the last minute against the first minute after warm-up), and each minute's p99 must stay within 2x of the
/// first minute's. Any error answer fails the run. The load and the verdict are <see cref="Soak"/>'s, which the CI
/// runs briefly (SoakTests).
/// </summary>
internal sealed class SoakSuite(bool quick, string workDir, double minutes)
{
    private const int Writers = 64, Readers = 8, Ids = 100_000;

    public IEnumerable<BenchResult> Run()
    {
        double length = quick ? Math.Min(minutes, 2) : minutes;
        var duration = TimeSpan.FromMinutes(length);
        using var server = ServerProcess.Start(Path.Combine(workDir, "soak"));
        using var http = new HttpClient(new SocketsHttpHandler { MaxConnectionsPerServer = Writers + Readers }) { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(30) };
        if (http.PutAsync("/admin/databases?name=soak", new StringContent("")).Result.StatusCode != HttpStatusCode.Created)
            throw new InvalidOperationException("could not create the database");
        var result = Soak.RunAsync(http, "soak", server.RssBytes, new Soak.Options(Writers, Readers, Ids, duration, MaxRssGrowth: 0.05, MaxP99Ratio: 2)).GetAwaiter().GetResult();
        Soak.Report(result, Console.WriteLine);
        yield return new BenchResult("soak", "soak-writes", "ravenlite", "sync", result.Writes, duration.TotalSeconds, result.Writes / duration.TotalSeconds,
            null, null, null, null, null, result.Intervals[^1].WriteP50, result.Intervals[^1].WriteP99, (long)result.RssAfterWarmup);
        yield return new BenchResult("soak", "soak-reads", "ravenlite", "sync", result.Reads, duration.TotalSeconds, result.Reads / duration.TotalSeconds,
            null, null, null, null, null, result.Intervals[^1].ReadP50, result.Intervals[^1].ReadP99, (long)result.RssAtEnd);
        if (result.Failures.Count > 0)
            throw new InvalidOperationException("soak failed: " + string.Join("; ", result.Failures));
    }
}
