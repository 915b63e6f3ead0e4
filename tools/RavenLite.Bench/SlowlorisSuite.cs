using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;

namespace RavenLite.Bench;

/// <summary>
/// Slow clients: a normal client's request latency (one PUT then one GET of it, back to back, for the run's
/// length) with no other load, then while 500 connections trickle their headers one byte a second (slowloris). Kestrel's
/// limits (RequestHeadersTimeoutSeconds, default 10 s) close those; the attackers reconnect at once, so 500 stay open
/// all along. Reports p50/p99 of both runs, and how many slow connections the server closed.
/// </summary>
internal sealed class SlowlorisSuite(bool quick, string workDir)
{
    private const int Attackers = 500;

    public IEnumerable<BenchResult> Run()
    {
        var duration = TimeSpan.FromSeconds(quick ? 10 : 60);
        using var server = ServerProcess.Start(Path.Combine(workDir, "slowloris"));
        using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(30) };
        if (http.PutAsync("/admin/databases?name=bench", new StringContent("")).Result.StatusCode != HttpStatusCode.Created)
            throw new InvalidOperationException("could not create the database");
        var quiet = Normal(http, duration);
        Console.WriteLine($"#   alone: {quiet.Count:N0} requests, p50 {P(quiet, 0.5):F2} ms, p99 {P(quiet, 0.99):F2} ms");

        using var stop = new CancellationTokenSource();
        long closedByServer = 0, opened = 0;
        var attackers = Enumerable.Range(0, Attackers).Select(_ => Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                using var c = new TcpClient();
                try
                {
                    await c.ConnectAsync(IPAddress.Loopback, server.Url.Port, stop.Token);
                    Interlocked.Increment(ref opened);
                    var s = c.GetStream();
                    await s.WriteAsync(Encoding.ASCII.GetBytes("GET /databases/bench/docs?id=x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "), stop.Token);
                    while (!stop.IsCancellationRequested)
                    {
                        await Task.Delay(1000, stop.Token);
                        await s.WriteAsync("a"u8.ToArray(), stop.Token);
                    }
                }
                catch (Exception e) when (e is IOException or SocketException)
                {
                    Interlocked.Increment(ref closedByServer); // the server closed it: open another
                }
                catch (OperationCanceledException)
                {
                    return;
                }
            }
        })).ToArray();
        Thread.Sleep(2000); // all connected and trickling
        var attacked = Normal(http, duration);
        stop.Cancel();
        Task.WaitAll(attackers);
        Console.WriteLine($"#   with {Attackers} slowloris connections: {attacked.Count:N0} requests, p50 {P(attacked, 0.5):F2} ms, p99 {P(attacked, 0.99):F2} ms; {opened:N0} slow connections opened, {closedByServer:N0} closed by the server; peak RSS {server.PeakRssBytes() >> 20} MB");
        yield return new BenchResult("slowloris", "normal-requests-alone", "ravenlite", "sync", quiet.Count, duration.TotalSeconds, quiet.Count / duration.TotalSeconds, null, null, null, null, null, P(quiet, 0.5), P(quiet, 0.99), null);
        yield return new BenchResult("slowloris", $"normal-requests-{Attackers}-slowloris", "ravenlite", "sync", attacked.Count, duration.TotalSeconds, attacked.Count / duration.TotalSeconds, null, null, null, null, closedByServer, P(attacked, 0.5), P(attacked, 0.99), server.PeakRssBytes());
    }

    private static List<double> Normal(HttpClient http, TimeSpan duration)
    {
        var latencies = new List<double>();
        var sw = Stopwatch.StartNew();
        for (int i = 0; sw.Elapsed < duration; i++)
        {
            long t0 = Stopwatch.GetTimestamp();
            using (var r = http.PutAsync($"/databases/bench/docs?id=n/{i % 1000}", new StringContent($$"""{"N":{{i}}}""")).Result)
                if (r.StatusCode != HttpStatusCode.Created)
                    throw new InvalidOperationException($"PUT answered {(int)r.StatusCode}");
            latencies.Add(Stopwatch.GetElapsedTime(t0).TotalMilliseconds);
            t0 = Stopwatch.GetTimestamp();
            using (var r = http.GetAsync($"/databases/bench/docs?id=n/{i % 1000}").Result)
                if (r.StatusCode != HttpStatusCode.OK)
                    throw new InvalidOperationException($"GET answered {(int)r.StatusCode}");
            latencies.Add(Stopwatch.GetElapsedTime(t0).TotalMilliseconds);
        }
        return latencies;
    }

    private static double P(List<double> values, double q)
    {
        var sorted = values.Order().ToArray();
        return sorted.Length == 0 ? 0 : sorted[Math.Min(sorted.Length - 1, (int)(q * sorted.Length))];
    }
}
