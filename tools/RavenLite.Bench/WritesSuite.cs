using System.Diagnostics;
using System.Net;
using Npgsql;

namespace RavenLite.Bench;

/// <summary>
/// docs/benchmarks.md `writes`: single-document PUTs from 1, 16 and 64 concurrent clients for a fixed
/// time (10 s, 3 s with --quick), each answered only once durable; req/s, p50/p99 latency and
/// documents per storage transaction (the merger's batching). Peer: PostgreSQL single-row INSERT
/// per connection (autocommit, synchronous_commit on), same concurrency, same documents.
/// </summary>
internal sealed class WritesSuite(bool quick, string workDir, bool withPeer = true, int[]? clientCounts = null)
{
    private readonly int[] Clients = clientCounts ?? [1, 16, 64];

    public IEnumerable<BenchResult> Run()
    {
        var duration = TimeSpan.FromSeconds(quick ? 3 : 10);
        var docs = new OrderDocuments(20_000, seed: 7);
        var results = new List<BenchResult>();
        using (var server = ServerProcess.Start(Path.Combine(workDir, "ravenlite-writes")))
        {
            var handler = new SocketsHttpHandler { MaxConnectionsPerServer = 256, PooledConnectionLifetime = TimeSpan.FromMinutes(10) };
            using var http = new HttpClient(handler) { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(60) };
            if (http.PutAsync("/admin/databases?name=bench", new StringContent("")).Result.StatusCode != HttpStatusCode.Created)
                throw new InvalidOperationException("could not create the database");
            foreach (int clients in Clients)
            {
                var before = ServerProcess.StatsAsync(http, "bench").Result;
                double cpuBefore = server.CpuSeconds();
                var (ops, seconds, p50, p99) = Drive(clients, duration, async (client, i) =>
                {
                    var body = new ReadOnlyMemoryContent(docs.Document((client * 7919 + i) % docs.Count));
                    using var r = await http.PutAsync($"/databases/bench/docs?id=w/{clients}/{client}/{i}", body);
                    if (r.StatusCode != HttpStatusCode.Created)
                        throw new InvalidOperationException($"PUT answered {(int)r.StatusCode}");
                });
                double cpu = server.CpuSeconds() - cpuBefore;
                var after = ServerProcess.StatsAsync(http, "bench").Result;
                long tx = after.Transactions - before.Transactions;
                Console.WriteLine($"#   ravenlite {clients} clients: {(after.Operations - before.Operations) / (double)Math.Max(1, tx):N1} documents per transaction, server CPU {cpu * 1e6 / Math.Max(1, ops):N0} µs per request ({cpu / seconds * 100:N0}% of one core)");
                results.Add(new BenchResult("writes", $"put-{clients}-clients", "ravenlite", "sync", ops, seconds, ops / seconds, after.JournalBytes - before.JournalBytes, null, null, null, tx, p50, p99, server.PeakRssBytes()));
            }
        }
        foreach (var r in results)
            yield return r;
        if (!withPeer)
            yield break;

        using var pg = PostgresPeer.Start(workDir);
        using var ds = NpgsqlDataSource.Create(pg.ConnectionString);
        using (var c = ds.CreateCommand("CREATE TABLE docs(id text PRIMARY KEY, body jsonb NOT NULL)"))
            c.ExecuteNonQuery();
        foreach (int clients in Clients)
        {
            var connections = Enumerable.Range(0, clients).Select(_ => ds.OpenConnection()).ToArray();
            var (ops, seconds, p50, p99) = Drive(clients, duration, async (client, i) =>
            {
                await using var cmd = new NpgsqlCommand("INSERT INTO docs(id, body) VALUES ($1, $2::jsonb)", connections[client]);
                cmd.Parameters.AddWithValue($"w/{clients}/{client}/{i}");
                cmd.Parameters.AddWithValue(System.Text.Encoding.UTF8.GetString(docs.Document((client * 7919 + i) % docs.Count).Span));
                await cmd.ExecuteNonQueryAsync();
            });
            foreach (var c in connections)
                c.Dispose();
            Console.WriteLine($"#   {pg.Version} {clients} clients done");
            yield return new BenchResult("writes", $"put-{clients}-clients", "postgres", "sync", ops, seconds, ops / seconds, null, null, null, null, ops, p50, p99, null);
        }
    }

    /// <summary>Runs <paramref name="clients"/> loops of <paramref name="op"/> for <paramref name="duration"/>; returns ops, seconds, p50 and p99 in ms.</summary>
    internal static (long Ops, double Seconds, double P50, double P99) Drive(int clients, TimeSpan duration, Func<int, int, Task> op)
    {
        var latencies = new List<double>[clients];
        var sw = Stopwatch.StartNew();
        var tasks = Enumerable.Range(0, clients).Select(client => Task.Run(async () =>
        {
            var mine = latencies[client] = new List<double>(100_000);
            for (int i = 0; sw.Elapsed < duration; i++)
            {
                long t0 = Stopwatch.GetTimestamp();
                await op(client, i);
                mine.Add(Stopwatch.GetElapsedTime(t0).TotalMilliseconds);
            }
        })).ToArray();
        Task.WaitAll(tasks);
        sw.Stop();
        var all = latencies.SelectMany(l => l).Order().ToArray();
        double P(double q) => all.Length == 0 ? 0 : all[Math.Min(all.Length - 1, (int)(q * all.Length))];
        return (all.Length, sw.Elapsed.TotalSeconds, P(0.50), P(0.99));
    }
}
