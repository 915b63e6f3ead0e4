using System.Net;
using RavenLite.TestKit;

namespace RavenLite.Bench;

/// <summary>
/// docs/benchmarks.md `cluster --baseline DIR`: a single server of this build against one of another build (a folder
/// with RavenLite.Server.dll — the server from before the cluster), alternating rounds on fresh data directories, the
/// same two rows each: compare-exchange puts of new keys and document PUTs (≈100 bytes), each from 16 clients, with the
/// ratio of the means. Nothing else runs meanwhile.
/// </summary>
internal sealed class SingleNodeComparison(bool quick, string workDir, string baselineDir, int rounds)
{
    private static readonly string Document = "{\"Name\":\"a customer\",\"City\":\"Lyon\",\"Total\":12.5,\"@metadata\":{\"@collection\":\"Customers\"}}";

    public IEnumerable<BenchResult> Run()
    {
        var duration = TimeSpan.FromSeconds(quick ? 3 : 10);
        var rates = new Dictionary<(string Build, string Row), List<double>>();
        for (int round = 0; round < rounds; round++)
        {
            // Alternate which build goes first, so drift in the machine's speed falls on both.
            foreach (string build in round % 2 == 0 ? new[] { "baseline", "ravenlite" } : ["ravenlite", "baseline"])
            {
                foreach (var row in Measure(build, Path.Combine(workDir, $"{build}-{round}"), duration))
                {
                    if (!rates.TryGetValue((build, row.Workload), out var list))
                        rates[(build, row.Workload)] = list = [];
                    list.Add(row.OpsPerSec);
                    yield return row;
                }
            }
        }
        foreach (string row in new[] { "single-node-cmpxchg-put-16-clients", "single-node-doc-put-16-clients" })
        {
            double now = rates[("ravenlite", row)].Average(), before = rates[("baseline", row)].Average();
            Console.WriteLine($"#   {row}: this build {now:N0}/s, baseline {before:N0}/s on the means of {rounds} rounds: {now / before:F2}x");
        }
    }

    private IEnumerable<BenchResult> Measure(string build, string dataDir, TimeSpan duration)
    {
        string? previous = Environment.GetEnvironmentVariable(ServerLauncher.ServerDirVariable);
        Environment.SetEnvironmentVariable(ServerLauncher.ServerDirVariable, build == "baseline" ? baselineDir : null);
        ServerProcess server;
        try
        {
            server = ServerProcess.Start(dataDir);
        }
        finally
        {
            Environment.SetEnvironmentVariable(ServerLauncher.ServerDirVariable, previous);
        }
        using (server)
        {
            using var http = new HttpClient(new SocketsHttpHandler { MaxConnectionsPerServer = 64 }) { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(30) };
            ClusterSuite.Check(http.PutAsync("/admin/databases?name=kv", null).Result, HttpStatusCode.Created);
            ClusterSuite.Puts(http, "warm-up", TimeSpan.FromSeconds(1));
            var cmpxchg = ClusterSuite.Puts(http, "k", duration);
            yield return new BenchResult("cluster", "single-node-cmpxchg-put-16-clients", build, "sync", cmpxchg.Ops, cmpxchg.Seconds, cmpxchg.Ops / cmpxchg.Seconds, null, null, null, null, null, cmpxchg.P50, cmpxchg.P99, null);
            var puts = ClusterSuite.Load(duration, HttpStatusCode.Created, (c, i) => http.PutAsync($"/databases/kv/docs?id=customers/{c}-{i}", new StringContent(Document)));
            yield return new BenchResult("cluster", "single-node-doc-put-16-clients", build, "sync", puts.Ops, puts.Seconds, puts.Ops / puts.Seconds, null, null, null, null, null, puts.P50, puts.P99, null);
        }
    }
}
