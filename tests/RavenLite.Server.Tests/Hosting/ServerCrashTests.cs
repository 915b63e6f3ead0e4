using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Hosting;

/// <summary>
/// docs/reliability.md R1: the server process is SIGKILLed at a random moment during bulk inserts and
/// concurrent PUTs, restarted on the same data dir and audited: every acknowledged document must
/// be there with its acknowledged content. Rounds: RAVENLITE_CRASH_ROUNDS (CI default 3; run long
/// with tools/crash-server.sh).
/// </summary>
public sealed class ServerCrashTests(ITestOutputHelper output)
{
    [Fact]
    public async Task Sigkill_during_bulk_insert_and_concurrent_puts_loses_no_acknowledged_document()
    {
        int rounds = int.Parse(Environment.GetEnvironmentVariable("RAVENLITE_CRASH_ROUNDS") ?? "3", CultureInfo.InvariantCulture);
        using var dir = new TempDirectory("ravenlite-crash");
        var acked = new ConcurrentDictionary<string, int>(); // id -> acknowledged value
        int seed = TestSeed.For(4242)[^1];
        var rnd = new Random(seed);
        output.WriteLine($"seed {seed} (RAVENLITE_TEST_SEED to replay), {rounds} rounds");
        long lost = 0, audited = 0;
        for (int round = 0; round < rounds; round++)
        {
            using var server = await ServerProcess.StartAsync(dir.Path);
            using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(30) };
            var recovery = Stopwatch.StartNew();
            if (round == 0)
                Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/admin/databases?name=crash", Json(""))).StatusCode);
            else
                (lost, audited) = await AuditAsync(http, acked, lost, audited, round, recovery);

            using var stop = new CancellationTokenSource();
            int ackedBefore = acked.Count;
            var workers = new List<Task>();
            for (int w = 0; w < 4; w++)
            {
                int worker = w;
                workers.Add(Task.Run(() => PutLoopAsync(http, acked, round, worker, stop.Token)));
            }
            workers.Add(Task.Run(() => BulkLoopAsync(http, acked, round, stop.Token)));
            // Kill while writes are flowing: once the fresh process acknowledged its first write (its first requests
            // compile the write path, which took over 1.5 s on a slow day), then after a random moment.
            var flowing = Stopwatch.StartNew();
            while (acked.Count == ackedBefore && flowing.Elapsed < TimeSpan.FromSeconds(30))
                await Task.Delay(10);
            await Task.Delay(rnd.Next(300, 1500));
            server.Kill();
            await stop.CancelAsync();
            await Task.WhenAll(workers);
        }
        using (var last = await ServerProcess.StartAsync(dir.Path))
        {
            using var http = new HttpClient { BaseAddress = last.Url, Timeout = TimeSpan.FromSeconds(30) };
            (lost, audited) = await AuditAsync(http, acked, lost, audited, rounds, Stopwatch.StartNew());
        }
        output.WriteLine($"crashes {rounds}, acknowledged documents {acked.Count}, audited {audited}, lost {lost}");
        Assert.Equal(0, lost);
        Assert.False(acked.IsEmpty, "the workload acknowledged nothing before the kills");
    }

    private async Task<(long Lost, long Audited)> AuditAsync(HttpClient http, ConcurrentDictionary<string, int> acked, long lost, long audited, int round, Stopwatch recovery)
    {
        // The first request opens the database: recovery runs then.
        var first = await http.GetAsync("/databases/crash/stats");
        Assert.Equal(HttpStatusCode.OK, first.StatusCode);
        output.WriteLine($"round {round}: reopened and recovered in {recovery.ElapsedMilliseconds} ms");
        foreach (var chunk in acked.Keys.Chunk(200))
        {
            var r = await http.PostAsync("/databases/crash/docs", Json(System.Text.Json.JsonSerializer.Serialize(new { Ids = chunk })));
            var results = (await ReadJson(r)).GetProperty("Results");
            for (int i = 0; i < chunk.Length; i++)
            {
                audited++;
                var d = results[i];
                if (d.ValueKind == System.Text.Json.JsonValueKind.Null || d.GetProperty("V").GetInt32() < acked[chunk[i]])
                    lost++;
            }
        }
        return (lost, audited);
    }

    private static async Task PutLoopAsync(HttpClient http, ConcurrentDictionary<string, int> acked, int round, int worker, CancellationToken stop)
    {
        for (int i = 0; !stop.IsCancellationRequested; i++)
        {
            string id = $"puts/{round}-{worker}-{i % 50}";
            int value = i;
            try
            {
                var r = await http.PutAsync($"/databases/crash/docs?id={id}", Json($$$"""{"V":{{{value}}},"Pad":"{{{new string('p', 200)}}}"}"""), stop);
                if (r.StatusCode == HttpStatusCode.Created)
                    acked.AddOrUpdate(id, value, (_, old) => Math.Max(old, value));
            }
            catch (Exception e) when (e is HttpRequestException or OperationCanceledException or IOException)
            {
                return; // the server is gone
            }
        }
    }

    private static async Task BulkLoopAsync(HttpClient http, ConcurrentDictionary<string, int> acked, int round, CancellationToken stop)
    {
        for (int op = 0; !stop.IsCancellationRequested; op++)
        {
            var sb = new StringBuilder("[");
            var ids = new List<string>();
            for (int i = 0; i < 500; i++)
            {
                string id = $"bulk/{round}-{op}-{i}";
                ids.Add(id);
                sb.Append(i == 0 ? "" : ",").Append($$$$"""{"Id":"{{{{id}}}}","Type":"PUT","Document":{"V":1,"Pad":"{{{{new string('b', 300)}}}}","@metadata":{"@collection":"Bulk"}}}""");
            }
            sb.Append(']');
            try
            {
                var r = await http.PostAsync($"/databases/crash/bulk_insert?id={(round * 100_000) + op + 1}", Json(sb.ToString()), stop);
                if (r.StatusCode == HttpStatusCode.Created)
                    foreach (string id in ids)
                        acked[id] = 1;
            }
            catch (Exception e) when (e is HttpRequestException or OperationCanceledException or IOException)
            {
                return;
            }
        }
    }
}
