using System.Diagnostics;
using System.Globalization;
using System.Net;

namespace RavenLite.Bench;

/// <summary>
/// Issue 29's soak: 64 clients PUT documents (random ids over a fixed set of 100,000, so the data stops growing once
/// the set is written) and 8 clients GET random ones, for <c>minutes</c> (30 by default). The server runs as a child
/// process; its resident set (VmRSS) is sampled every 5 s, and each minute's PUT and GET latencies are kept. After a
/// warm-up (a fifth of the run, at least 2 minutes when the run is long enough) the RSS may grow by at most 5%
/// (mean of the last minute against the first minute after warm-up), and each minute's p99 must stay within 2x of the
/// first minute's. Any error answer fails the run. <see cref="Report"/> prints the minutes and the verdict.
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
        var result = Soak(http, server, duration);
        Report(result, Console.WriteLine);
        yield return new BenchResult("soak", "soak-writes", "ravenlite", "sync", result.Writes, duration.TotalSeconds, result.Writes / duration.TotalSeconds,
            null, null, null, null, null, result.Minutes[^1].WriteP50, result.Minutes[^1].WriteP99, (long)result.RssAfterWarmup);
        yield return new BenchResult("soak", "soak-reads", "ravenlite", "sync", result.Reads, duration.TotalSeconds, result.Reads / duration.TotalSeconds,
            null, null, null, null, null, result.Minutes[^1].ReadP50, result.Minutes[^1].ReadP99, (long)result.RssAtEnd);
        if (result.Failures.Count > 0)
            throw new InvalidOperationException("soak failed: " + string.Join("; ", result.Failures));
    }

    /// <summary>One minute (or one interval) of the run.</summary>
    public sealed record Minute(int Index, long Writes, long Reads, double WriteP50, double WriteP99, double ReadP50, double ReadP99, double RssMb);

    /// <summary>What a soak saw.</summary>
    public sealed record Result(List<Minute> Minutes, long Writes, long Reads, long Errors, string? FirstError, int WarmupIntervals, double RssAfterWarmup, double RssAtEnd, double RssGrowth, double WorstP99Ratio, List<string> Failures);

    /// <summary>
    /// Runs the load against <paramref name="http"/> (database <c>soak</c>) for <paramref name="duration"/>, reading the
    /// RSS of <paramref name="server"/>; intervals of a minute (or a tenth of the run when that is shorter).
    /// </summary>
    public static Result Soak(HttpClient http, ServerProcess server, TimeSpan duration)
    {
        var interval = TimeSpan.FromSeconds(Math.Min(60, duration.TotalSeconds / 10));
        int intervals = (int)Math.Round(duration / interval);
        var writeLat = new List<double>[intervals];
        var readLat = new List<double>[intervals];
        var rss = new List<double>[intervals];
        for (int i = 0; i < intervals; i++)
        {
            writeLat[i] = [];
            readLat[i] = [];
            rss[i] = [];
        }
        long errors = 0;
        string? firstError = null;
        var clock = Stopwatch.StartNew();
        int Slot() => Math.Min(intervals - 1, (int)(clock.Elapsed / interval));
        using var stop = new CancellationTokenSource(duration);
        string pad = new('s', 600);

        async Task Client(bool writer, int seed)
        {
            var rnd = new Random(seed);
            while (!stop.IsCancellationRequested)
            {
                int id = rnd.Next(Ids);
                long t0 = Stopwatch.GetTimestamp();
                try
                {
                    using var r = writer
                        ? await http.PutAsync($"/databases/soak/docs?id=soak/{id}", new StringContent($$$"""{"N":{{{id}}},"At":{{{t0}}},"Pad":"{{{pad}}}","@metadata":{"@collection":"Soak"}}"""), stop.Token)
                        : await http.GetAsync($"/databases/soak/docs?id=soak/{id}", stop.Token);
                    await r.Content.ReadAsByteArrayAsync(stop.Token);
                    double ms = Stopwatch.GetElapsedTime(t0).TotalMilliseconds;
                    bool ok = writer ? r.StatusCode == HttpStatusCode.Created : r.StatusCode is HttpStatusCode.OK or HttpStatusCode.NotFound;
                    if (!ok)
                    {
                        if (Interlocked.Increment(ref errors) == 1)
                            firstError = $"{(writer ? "PUT" : "GET")} soak/{id}: {(int)r.StatusCode}";
                        continue;
                    }
                    var list = (writer ? writeLat : readLat)[Slot()];
                    lock (list)
                        list.Add(ms);
                }
                catch (OperationCanceledException) when (stop.IsCancellationRequested)
                {
                    return;
                }
                catch (HttpRequestException e)
                {
                    if (Interlocked.Increment(ref errors) == 1)
                        firstError = e.Message;
                }
            }
        }

        var clients = Enumerable.Range(0, Writers).Select(i => Task.Run(() => Client(true, i)))
            .Concat(Enumerable.Range(0, Readers).Select(i => Task.Run(() => Client(false, 1000 + i)))).ToArray();
        while (!stop.IsCancellationRequested)
        {
            rss[Slot()].Add(server.RssBytes() / 1048576.0);
            stop.Token.WaitHandle.WaitOne(TimeSpan.FromSeconds(Math.Min(5, interval.TotalSeconds / 4)));
        }
        Task.WaitAll(clients);

        var minutes = new List<Minute>();
        for (int i = 0; i < intervals; i++)
            minutes.Add(new Minute(i + 1, writeLat[i].Count, readLat[i].Count, P(writeLat[i], 0.5), P(writeLat[i], 0.99), P(readLat[i], 0.5), P(readLat[i], 0.99), rss[i].Count > 0 ? rss[i].Average() : 0));
        // Warm-up: a fifth of the run, at least 2 minutes when the run is long enough; the RSS is judged after it.
        int warmup = Math.Max((int)Math.Ceiling(intervals / 5.0), duration >= TimeSpan.FromMinutes(10) ? (int)Math.Ceiling(TimeSpan.FromMinutes(2) / interval) : 0);
        double afterWarmup = minutes[warmup].RssMb, atEnd = minutes[^1].RssMb;
        double growth = afterWarmup > 0 ? (atEnd - afterWarmup) / afterWarmup : 0;
        var first = minutes[0];
        double worst = minutes.Skip(1).Max(m => Math.Max(first.WriteP99 > 0 ? m.WriteP99 / first.WriteP99 : 0, first.ReadP99 > 0 ? m.ReadP99 / first.ReadP99 : 0));
        var failures = new List<string>();
        if (errors > 0)
            failures.Add($"{errors} error answers (first: {firstError})");
        if (growth > 0.05)
            failures.Add(string.Create(CultureInfo.InvariantCulture, $"RSS grew {growth:P1} after warm-up ({afterWarmup:F0} -> {atEnd:F0} MB), more than 5%"));
        if (worst > 2)
            failures.Add(string.Create(CultureInfo.InvariantCulture, $"a later interval's p99 was {worst:F2}x the first interval's, more than 2x"));
        return new Result(minutes, minutes.Sum(m => m.Writes), minutes.Sum(m => m.Reads), errors, firstError, warmup, afterWarmup, atEnd, growth, worst, failures);
    }

    /// <summary>Prints each interval and the verdict.</summary>
    public static void Report(Result r, Action<string> write)
    {
        var c = CultureInfo.InvariantCulture;
        write("#   interval      PUTs    PUT p50/p99 ms      GETs    GET p50/p99 ms    server RSS MB");
        foreach (var m in r.Minutes)
            write(string.Create(c, $"#   {m.Index,8}  {m.Writes,8:N0}  {m.WriteP50,7:F2} / {m.WriteP99,6:F2}  {m.Reads,8:N0}  {m.ReadP50,7:F2} / {m.ReadP99,6:F2}  {m.RssMb,10:F0}"));
        write(string.Create(c, $"#   {r.Writes:N0} PUTs, {r.Reads:N0} GETs, {r.Errors} errors; warm-up {r.WarmupIntervals} intervals; RSS {r.RssAfterWarmup:F0} MB after warm-up -> {r.RssAtEnd:F0} MB at the end ({r.RssGrowth:P1}); worst p99 vs the first interval {r.WorstP99Ratio:F2}x; {(r.Failures.Count == 0 ? "PASS" : "FAIL: " + string.Join("; ", r.Failures))}"));
    }

    private static double P(List<double> values, double q)
    {
        if (values.Count == 0)
            return 0;
        values.Sort();
        return values[Math.Min(values.Count - 1, (int)(q * values.Count))];
    }
}
