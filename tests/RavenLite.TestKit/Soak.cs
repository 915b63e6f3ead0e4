using System.Diagnostics;
using System.Globalization;
using System.Net;

namespace RavenLite.TestKit;

/// <summary>
/// Soak, shared by the tool (<c>RavenLite.Bench soak</c>: 64 writers, 8 readers, 100,000 ids, 30 minutes,
/// RSS growth after warm-up at most 5%, each interval's p99 within 2x of the first's) and its short CI variant
/// (SoakTests: a smaller load for half a minute, judged on errors and gross memory growth only; a timed verdict
/// belongs to the tool). Writers PUT documents with random ids over a fixed set, so the data stops growing once the
/// set is written, and readers GET random ones; the server's resident set is sampled through <c>rssBytes</c>, and
/// each interval (a minute, or a tenth of a shorter run) keeps its PUT and GET latencies. Any error answer fails.
/// </summary>
public static class Soak
{
    /// <summary>The load and the limits it is judged by.</summary>
    public sealed record Options(int Writers, int Readers, int Ids, TimeSpan Duration, double MaxRssGrowth, double MaxP99Ratio);

    /// <summary>One interval of the run.</summary>
    public sealed record Interval(int Index, long Writes, long Reads, double WriteP50, double WriteP99, double ReadP50, double ReadP99, double RssMb);

    /// <summary>What a soak saw.</summary>
    public sealed record Result(List<Interval> Intervals, long Writes, long Reads, long Errors, string? FirstError, int WarmupIntervals, double RssAfterWarmup, double RssAtEnd, double RssGrowth, double WorstP99Ratio, List<string> Failures);

    // Kept whole: writers, readers and the sampler run together on one clock; their counters are shared locals.
    /// <summary>Runs the load against database <paramref name="database"/> through <paramref name="http"/>.</summary>
    public static async Task<Result> RunAsync(HttpClient http, string database, Func<long> rssBytes, Options o)
    {
        var duration = o.Duration;
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
                int id = rnd.Next(o.Ids);
                long t0 = Stopwatch.GetTimestamp();
                try
                {
                    using var r = writer
                        ? await http.PutAsync($"/databases/{database}/docs?id=soak/{id}", new StringContent($$$"""{"N":{{{id}}},"At":{{{t0}}},"Pad":"{{{pad}}}","@metadata":{"@collection":"Soak"}}"""), stop.Token)
                        : await http.GetAsync($"/databases/{database}/docs?id=soak/{id}", stop.Token);
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

        var clients = Enumerable.Range(0, o.Writers).Select(i => Task.Run(() => Client(true, i)))
            .Concat(Enumerable.Range(0, o.Readers).Select(i => Task.Run(() => Client(false, 1000 + i)))).ToArray();
        var sample = TimeSpan.FromSeconds(Math.Min(5, interval.TotalSeconds / 4));
        while (!stop.IsCancellationRequested)
        {
            rss[Slot()].Add(rssBytes() / 1048576.0);
            try
            {
                await Task.Delay(sample, stop.Token);
            }
            catch (OperationCanceledException)
            {
                break;
            }
        }
        await Task.WhenAll(clients);

        var list = new List<Interval>();
        for (int i = 0; i < intervals; i++)
            list.Add(new Interval(i + 1, writeLat[i].Count, readLat[i].Count, P(writeLat[i], 0.5), P(writeLat[i], 0.99), P(readLat[i], 0.5), P(readLat[i], 0.99), rss[i].Count > 0 ? rss[i].Average() : 0));
        // Warm-up: a fifth of the run, at least 2 minutes when the run is long enough; the RSS is judged after it.
        int warmup = Math.Max((int)Math.Ceiling(intervals / 5.0), duration >= TimeSpan.FromMinutes(10) ? (int)Math.Ceiling(TimeSpan.FromMinutes(2) / interval) : 0);
        double afterWarmup = list[warmup].RssMb, atEnd = list[^1].RssMb;
        double growth = afterWarmup > 0 ? (atEnd - afterWarmup) / afterWarmup : 0;
        var first = list[0];
        double worst = list.Skip(1).Max(m => Math.Max(first.WriteP99 > 0 ? m.WriteP99 / first.WriteP99 : 0, first.ReadP99 > 0 ? m.ReadP99 / first.ReadP99 : 0));
        var failures = new List<string>();
        var c = CultureInfo.InvariantCulture;
        if (errors > 0)
            failures.Add($"{errors} error answers (first: {firstError})");
        if (growth > o.MaxRssGrowth)
            failures.Add(string.Create(c, $"RSS grew {growth:P1} after warm-up ({afterWarmup:F0} -> {atEnd:F0} MB), more than {o.MaxRssGrowth:P0}"));
        if (worst > o.MaxP99Ratio)
            failures.Add(string.Create(c, $"a later interval's p99 was {worst:F2}x the first interval's, more than {o.MaxP99Ratio}x"));
        return new Result(list, list.Sum(m => m.Writes), list.Sum(m => m.Reads), errors, firstError, warmup, afterWarmup, atEnd, growth, worst, failures);
    }

    /// <summary>Prints each interval and the verdict.</summary>
    public static void Report(Result r, Action<string> write)
    {
        var c = CultureInfo.InvariantCulture;
        write("#   interval      PUTs    PUT p50/p99 ms      GETs    GET p50/p99 ms    server RSS MB");
        foreach (var m in r.Intervals)
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

    /// <summary>Resident set size of process <paramref name="pid"/> now (VmRSS), 0 once it is gone.</summary>
    public static long RssBytes(int pid)
    {
        try
        {
            foreach (string line in File.ReadLines($"/proc/{pid}/status"))
                if (line.StartsWith("VmRSS:", StringComparison.Ordinal))
                    return long.Parse(line.Split(' ', StringSplitOptions.RemoveEmptyEntries)[1], CultureInfo.InvariantCulture) * 1024;
        }
        catch (IOException)
        {
        }
        return 0;
    }
}
