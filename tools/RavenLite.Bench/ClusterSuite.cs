using System.Diagnostics;
using System.Net;
using System.Text.Json;

namespace RavenLite.Bench;

/// <summary>
/// docs/benchmarks.md `cluster`: three server processes on loopback form a cluster through the HTTP API and place a
/// database on all three. (1) Compare-exchange puts of new keys from 16 clients through the leader — each a Raft
/// command committed by a majority — against the same puts into a database of a fourth, single server (the floor: no
/// Raft): rate and p50/p99. (2) The leader is killed (SIGKILL): the time until a put through a survivor succeeds again.
/// </summary>
internal sealed class ClusterSuite(bool quick, string workDir)
{
    private const int Clients = 16;

    public IEnumerable<BenchResult> Run()
    {
        var duration = TimeSpan.FromSeconds(quick ? 3 : 10);
        var nodes = Enumerable.Range(0, 3).Select(i => ServerProcess.Start(Path.Combine(workDir, "node" + i))).ToList();
        using var floor = ServerProcess.Start(Path.Combine(workDir, "alone"));
        try
        {
            var handler = new SocketsHttpHandler { MaxConnectionsPerServer = 64 };
            var http = nodes.Select(n => new HttpClient(handler, disposeHandler: false) { BaseAddress = n.Url, Timeout = TimeSpan.FromSeconds(30) }).ToList();
            using var alone = new HttpClient { BaseAddress = floor.Url, Timeout = TimeSpan.FromSeconds(30) };
            foreach (var n in nodes.Skip(1))
                Check(http[0].PutAsync($"/admin/cluster/node?url={Uri.EscapeDataString(n.Url.ToString().TrimEnd('/'))}", null).Result, HttpStatusCode.OK);
            using (var created = JsonDocument.Parse(Check(http[0].PutAsync("/admin/databases?name=kv&replicationFactor=3", null).Result, HttpStatusCode.Created)))
            {
                long index = created.RootElement.GetProperty("RaftCommandIndex").GetInt64();
                foreach (var h in http)
                    Check(h.GetAsync($"/rachis/waitfor?index={index}").Result, HttpStatusCode.OK);
            }
            Check(alone.PutAsync("/admin/databases?name=kv", null).Result, HttpStatusCode.Created);

            var raft = Puts(http[0], "raft", duration);
            var single = Puts(alone, "alone", duration);
            yield return new BenchResult("cluster", "cmpxchg-put-16-clients", "ravenlite", "sync", raft.Ops, raft.Seconds, raft.Ops / raft.Seconds, null, null, null, null, null, raft.P50, raft.P99, null);
            yield return new BenchResult("cluster", "cmpxchg-put-16-clients", "single-node", "sync", single.Ops, single.Seconds, single.Ops / single.Seconds, null, null, null, null, null, single.P50, single.P99, null);

            // The leader (node 0, which formed the cluster) is killed; a survivor is asked until a put succeeds.
            var sw = Stopwatch.StartNew();
            nodes[0].Kill();
            int attempts = 0;
            while (true)
            {
                attempts++;
                try
                {
                    using var r = http[1].PutAsync($"/databases/kv/cmpxchg?key=after-kill-{attempts}&index=0", new StringContent("{\"Object\":1}")).Result;
                    if (r.StatusCode == HttpStatusCode.OK)
                        break;
                }
                catch (AggregateException e) when (e.InnerException is HttpRequestException or TaskCanceledException)
                {
                }
                if (sw.Elapsed > TimeSpan.FromSeconds(60))
                    throw new TimeoutException("no put succeeded within 60 s of the leader's kill");
                Thread.Sleep(5);
            }
            double seconds = sw.Elapsed.TotalSeconds;
            Console.WriteLine($"#   leader killed: first successful put through a survivor after {seconds * 1000:F0} ms ({attempts} attempts)");
            yield return new BenchResult("cluster", "reelection-to-first-write", "ravenlite", "sync", 1, seconds, 1 / seconds, null, null, null, null, null, seconds * 1000, seconds * 1000, null);
            foreach (var h in http)
                h.Dispose();
        }
        finally
        {
            foreach (var n in nodes)
                n.Dispose();
        }
    }

    /// <summary>16 clients put new compare-exchange keys for <paramref name="duration"/>: operations, seconds, p50 and p99 (ms).</summary>
    internal static (long Ops, double Seconds, double P50, double P99) Puts(HttpClient http, string prefix, TimeSpan duration) =>
        Load(duration, HttpStatusCode.OK, (c, i) => http.PutAsync($"/databases/kv/cmpxchg?key={prefix}-{c}-{i}&index=0", new StringContent("{\"Object\":{\"n\":" + i + "}}")));

    /// <summary>
    /// 16 clients each send <paramref name="send"/>(client, i) in a loop for <paramref name="duration"/>, each answer
    /// expected to be <paramref name="expected"/>: operations, seconds, p50 and p99 (ms).
    /// </summary>
    internal static (long Ops, double Seconds, double P50, double P99) Load(TimeSpan duration, HttpStatusCode expected, Func<int, int, Task<HttpResponseMessage>> send)
    {
        var latencies = new List<double>[Clients];
        var sw = Stopwatch.StartNew();
        var tasks = Enumerable.Range(0, Clients).Select(c => Task.Run(async () =>
        {
            var mine = latencies[c] = new List<double>(100_000);
            for (int i = 0; sw.Elapsed < duration; i++)
            {
                long start = Stopwatch.GetTimestamp();
                using var r = await send(c, i);
                if (r.StatusCode != expected)
                    throw new InvalidOperationException($"{r.RequestMessage?.Method} {r.RequestMessage?.RequestUri} answered {(int)r.StatusCode}: {await r.Content.ReadAsStringAsync()}");
                mine.Add(Stopwatch.GetElapsedTime(start).TotalMilliseconds);
            }
        })).ToArray();
        Task.WaitAll(tasks);
        double seconds = sw.Elapsed.TotalSeconds;
        var all = latencies.SelectMany(l => l).Order().ToArray();
        return (all.Length, seconds, all[all.Length / 2], all[Math.Min(all.Length - 1, (int)(all.Length * 0.99))]);
    }

    internal static string Check(HttpResponseMessage r, HttpStatusCode expected)
    {
        string body = r.Content.ReadAsStringAsync().Result;
        if (r.StatusCode != expected)
            throw new InvalidOperationException($"{r.RequestMessage?.Method} {r.RequestMessage?.RequestUri} answered {(int)r.StatusCode}: {body}");
        return body;
    }
}
