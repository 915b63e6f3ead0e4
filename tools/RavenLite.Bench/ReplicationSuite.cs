using System.Diagnostics;
using System.Net;
using System.Text.Json;

namespace RavenLite.Bench;

/// <summary>
/// docs/benchmarks.md `replication`: two server processes on loopback (source A, destination B, own data dirs).
/// (1) Single-document PUTs from 64 clients for a fixed time into a database that replicates to B, against the same
/// load into a database of the same source that does not (the floor: the source alone), alternating runs; meanwhile
/// one more client writes a probe every 20 ms and watches B until it is there: commit-to-visible lag p50/p99.
/// (2) A new destination catching up 1M orders (100k with --quick) by replication, against importing the same orders
/// from a .ravendbdump into a new database on the same machine. Peak RSS of both processes is reported (the sender holds
/// one batch at a time).
/// </summary>
internal sealed class ReplicationSuite(bool quick, string workDir, int repeats)
{
    private const int Clients = 64;

    public IEnumerable<BenchResult> Run()
    {
        var duration = TimeSpan.FromSeconds(quick ? 3 : 10);
        var docs = new OrderDocuments(20_000, seed: 7);
        var results = new List<BenchResult>();
        using var source = ServerProcess.Start(Path.Combine(workDir, "source"), ["--NodeTag", "A"]);
        using var destination = ServerProcess.Start(Path.Combine(workDir, "destination"), ["--NodeTag", "B"]);
        var handler = new SocketsHttpHandler { MaxConnectionsPerServer = 256, PooledConnectionLifetime = TimeSpan.FromMinutes(10) };
        using var http = new HttpClient(handler) { BaseAddress = source.Url, Timeout = TimeSpan.FromMinutes(30) };
        using var dest = new HttpClient { BaseAddress = destination.Url, Timeout = TimeSpan.FromMinutes(30) };
        foreach (string db in new[] { "alone", "replicated" })
            Check(http.PutAsync($"/admin/databases?name={db}", new StringContent("")).Result, HttpStatusCode.Created);
        Check(dest.PutAsync("/admin/databases?name=replicated", new StringContent("")).Result, HttpStatusCode.Created);
        Replicate(http, "replicated", destination.Url, "replicated");

        var alone = new List<(long Ops, double Seconds, double P50, double P99)>();
        var replicated = new List<(long Ops, double Seconds, double P50, double P99)>();
        var lags = new List<double>();
        for (int run = 0; run < repeats; run++)
        {
            alone.Add(Writes(http, "alone", $"a{run}", docs, duration, null, null));
            replicated.Add(Writes(http, "replicated", $"r{run}", docs, duration, dest, lags));
            WaitCaughtUp(http, "replicated");
        }
        var a = alone.OrderBy(x => x.Ops / x.Seconds).ElementAt(alone.Count / 2);
        var r = replicated.OrderBy(x => x.Ops / x.Seconds).ElementAt(replicated.Count / 2);
        results.Add(new BenchResult("replication", "put-64-clients", "ravenlite", "sync", r.Ops, r.Seconds, r.Ops / r.Seconds, null, null, null, null, null, r.P50, r.P99, source.PeakRssBytes()) { Repeats = repeats });
        results.Add(new BenchResult("replication", "put-64-clients", "source-alone", "sync", a.Ops, a.Seconds, a.Ops / a.Seconds, null, null, null, null, null, a.P50, a.P99, source.PeakRssBytes()) { Repeats = repeats });
        var sorted = lags.Order().ToArray();
        double P(double q) => sorted.Length == 0 ? double.NaN : sorted[Math.Min(sorted.Length - 1, (int)(q * sorted.Length))];
        Console.WriteLine($"#   commit-to-visible lag under 64 writers: {sorted.Length} probes, p50 {P(0.5):F1} ms, p99 {P(0.99):F1} ms, max {P(1):F1} ms");
        results.Add(new BenchResult("replication", "lag-under-64-clients", "ravenlite", "sync", sorted.Length, repeats * duration.TotalSeconds, sorted.Length / (repeats * duration.TotalSeconds), null, null, null, null, null, P(0.5), P(0.99), destination.PeakRssBytes()));

        results.AddRange(CatchUp(http, dest, source, destination));
        return results;
    }

    /// <summary>64 clients PUT for <paramref name="duration"/>; with <paramref name="lags"/>, a probe every 20 ms is timed until <paramref name="watch"/> has it.</summary>
    private static (long Ops, double Seconds, double P50, double P99) Writes(HttpClient http, string db, string prefix, OrderDocuments docs, TimeSpan duration, HttpClient? watch, List<double>? lags)
    {
        using var stop = new CancellationTokenSource();
        var probes = lags == null ? Task.CompletedTask : Task.Run(async () =>
        {
            for (int n = 0; !stop.IsCancellationRequested; n++)
            {
                string id = $"probe/{prefix}/{n}";
                using (var put = await http.PutAsync($"/databases/{db}/docs?id={id}", new StringContent("{\"@metadata\":{\"@collection\":\"Probes\"}}")))
                    Check(put, HttpStatusCode.Created);
                var committed = Stopwatch.GetTimestamp();
                while (true)
                {
                    using var get = await watch!.GetAsync($"/databases/{db}/docs?id={id}&metadataOnly=true");
                    if (get.StatusCode == HttpStatusCode.OK)
                        break;
                    await Task.Delay(1);
                }
                lock (lags)
                    lags.Add(Stopwatch.GetElapsedTime(committed).TotalMilliseconds);
                await Task.Delay(20);
            }
        });
        var result = WritesSuite.Drive(Clients, duration, async (client, i) =>
        {
            using var r = await http.PutAsync($"/databases/{db}/docs?id=w/{prefix}/{client}/{i}", new ReadOnlyMemoryContent(docs.Document((client * 7919 + i) % docs.Count)));
            if (r.StatusCode != HttpStatusCode.Created)
                throw new InvalidOperationException($"PUT answered {(int)r.StatusCode}");
        });
        stop.Cancel();
        probes.Wait();
        Console.WriteLine($"#   {db} run {prefix}: {result.Ops / result.Seconds:N0} PUT/s");
        return result;
    }

    /// <summary>1M orders into a database; then the time to import them from a dump into a new database on the destination, and the time a new replication takes to bring them there.</summary>
    private IEnumerable<BenchResult> CatchUp(HttpClient http, HttpClient dest, ServerProcess source, ServerProcess destination)
    {
        int count = quick ? 100_000 : 1_000_000;
        var orders = new OrderDocuments(count);
        Check(http.PutAsync("/admin/databases?name=orders", new StringContent("")).Result, HttpStatusCode.Created);
        Check(http.PostAsync("/databases/orders/bulk_insert?id=1", new BulkInsertSuite.BulkContent(orders)).Result, HttpStatusCode.Created);
        string file = Path.Combine(workDir, "orders.ravendbdump");
        using (var r = http.SendAsync(new HttpRequestMessage(HttpMethod.Post, "/databases/orders/smuggler/export?operationId=2001") { Content = new StringContent("{}") }, HttpCompletionOption.ResponseHeadersRead).Result)
        {
            Check(r, HttpStatusCode.OK);
            using var output = File.Create(file);
            r.Content.ReadAsStream().CopyTo(output);
        }
        Check(dest.PutAsync("/admin/databases?name=imported", new StringContent("")).Result, HttpStatusCode.Created);
        var sw = Stopwatch.StartNew();
        using (var input = File.OpenRead(file))
            Check(dest.PostAsync("/databases/imported/smuggler/import?operationId=2002", new StreamContent(input)).Result, HttpStatusCode.OK);
        double import = sw.Elapsed.TotalSeconds;
        Console.WriteLine($"#   import of {count:N0} orders from the dump: {import:N1} s");

        Check(dest.PutAsync("/admin/databases?name=orders-copy", new StringContent("")).Result, HttpStatusCode.Created);
        long rssBefore = source.PeakRssBytes();
        sw.Restart();
        Replicate(http, "orders", destination.Url, "orders-copy");
        WaitCaughtUp(http, "orders");
        double catchUp = sw.Elapsed.TotalSeconds;
        long copied = Count(dest, "orders-copy");
        Console.WriteLine($"#   replication catch-up of {copied:N0} orders: {catchUp:N1} s; peak RSS source {source.PeakRssBytes() >> 20} MB (before {rssBefore >> 20} MB), destination {destination.PeakRssBytes() >> 20} MB");
        if (copied != count)
            throw new InvalidOperationException($"the copy has {copied} of {count} orders");
        yield return new BenchResult("replication", "catch-up-1kb", "ravenlite", "sync", count, catchUp, count / catchUp, null, null, null, null, null, null, null, destination.PeakRssBytes());
        yield return new BenchResult("replication", "catch-up-1kb", "dump-import", "sync", count, import, count / import, null, null, null, null, null, null, null, null);
    }

    private static void Replicate(HttpClient http, string db, Uri destination, string destinationDb)
    {
        string cs = $$"""{"Name":"to-{{destinationDb}}","Database":"{{destinationDb}}","TopologyDiscoveryUrls":["{{destination.ToString().TrimEnd('/')}}"],"Type":"Raven"}""";
        Check(http.PutAsync($"/databases/{db}/admin/connection-strings", new StringContent(cs)).Result, HttpStatusCode.OK);
        string watcher = "{\"Watcher\":{\"Name\":\"to-" + destinationDb + "\",\"ConnectionStringName\":\"to-" + destinationDb + "\"}}";
        Check(http.PostAsync($"/databases/{db}/admin/tasks/external-replication", new StringContent(watcher)).Result, HttpStatusCode.OK);
    }

    /// <summary>Waits (up to 30 min) until the database's replication task has no etag lag.</summary>
    private static void WaitCaughtUp(HttpClient http, string db)
    {
        var deadline = DateTime.UtcNow.AddMinutes(30);
        while (true)
        {
            using var tasks = JsonDocument.Parse(http.GetStringAsync($"/databases/{db}/tasks").Result);
            var task = tasks.RootElement.GetProperty("OngoingTasks")[0];
            if (task.GetProperty("EtagLag").GetInt64() == 0 && task.GetProperty("LastAcknowledgedEtag").GetInt64() > 0)
                return;
            if (DateTime.UtcNow > deadline)
                throw new TimeoutException("replication did not catch up: " + task);
            Thread.Sleep(10);
        }
    }

    private static long Count(HttpClient http, string db)
    {
        using var stats = JsonDocument.Parse(http.GetStringAsync($"/databases/{db}/stats").Result);
        return stats.RootElement.GetProperty("CountOfDocuments").GetInt64();
    }

    private static void Check(HttpResponseMessage r, HttpStatusCode expected)
    {
        if (r.StatusCode != expected)
            throw new InvalidOperationException($"{r.RequestMessage?.Method} {r.RequestMessage?.RequestUri} answered {(int)r.StatusCode}: {r.Content.ReadAsStringAsync().Result}");
    }
}
