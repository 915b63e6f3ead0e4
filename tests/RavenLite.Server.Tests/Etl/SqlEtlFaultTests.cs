using System.Diagnostics;

namespace RavenLite.Server.Tests.Etl;

/// <summary>
/// SQL ETL through failures (docs/etl.md "Failure handling"): PostgreSQL stopped for a while and the source killed with
/// SIGKILL while the task is loading; afterwards PostgreSQL holds exactly the transform of the source — no row missing,
/// none twice.
/// </summary>
public sealed class SqlEtlFaultTests
{
    private static async Task WriteOrdersAsync(HttpClient http, IEnumerable<(int Id, int Version)> puts, IEnumerable<int>? deletes = null)
    {
        var commands = new JsonArray();
        foreach (var (id, version) in puts)
            commands.Add(new JsonObject { ["Type"] = "PUT", ["Id"] = $"orders/{id}", ["Document"] = JsonNode.Parse(EtlSetup.Order(id, version)) });
        foreach (int id in deletes ?? [])
            commands.Add(new JsonObject { ["Type"] = "DELETE", ["Id"] = $"orders/{id}" });
        var r = await http.PostAsync("/databases/shop/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()));
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
    }

    private static async Task WriteRangeAsync(HttpClient http, int from, int to, int version = 0)
    {
        for (int i = from; i < to; i += 25)
            await WriteOrdersAsync(http, Enumerable.Range(i, Math.Min(25, to - i)).Select(n => (n, version)));
    }

    [Fact]
    public async Task A_PostgreSQL_outage_and_a_kill_9_of_the_source_mid_load_leave_exactly_the_transform_of_the_source()
    {
        using var dir = new TempDirectory();
        using var pg = LocalPostgres.Start(dir.Path);
        pg.Execute(EtlSetup.Tables);
        string data = Path.Combine(dir.Path, "data");
        string[] args = ["--EtlBatchItems", "64"]; // many batches, so the kill finds one under way
        var (process, url) = await ServerLauncher.StartAsync(data, args);
        try
        {
            using var http = new HttpClient { BaseAddress = url, Timeout = TimeSpan.FromSeconds(60) };
            Assert.True((await http.PutAsync("/admin/databases?name=shop", TestServer.Json("{\"DatabaseName\":\"shop\"}"))).IsSuccessStatusCode);
            long taskId = await EtlSetup.AddSqlEtlAsync(http, "shop", pg.ConnectionString);
            await WriteRangeAsync(http, 0, 400);
            await Eventually.HoldsAsync(async () => (await EtlSetup.TransformationAsync(http, "shop", taskId)).GetProperty("EtagLag").GetInt64() == 0, "the first 400 orders loaded");

            // PostgreSQL goes away: the task shows the error and retries; the writes go on.
            pg.Stop();
            await WriteRangeAsync(http, 400, 700);
            await WriteOrdersAsync(http, Enumerable.Range(0, 50).Select(i => (i * 3, 1)), deletes: Enumerable.Range(0, 30).Select(i => 1 + i * 7));
            await Eventually.HoldsAsync(async () =>
            {
                var t = await EtlSetup.TransformationAsync(http, "shop", taskId);
                return t.GetProperty("State").GetString() == "Reconnect" && t.GetProperty("Error").GetString()!.Contains("PostgreSQL", StringComparison.Ordinal);
            }, "the task reporting PostgreSQL's outage");
            pg.Resume();

            // Back, it loads; the source is killed while it still has work.
            await WriteRangeAsync(http, 700, 1500);
            await WriteOrdersAsync(http, Enumerable.Range(0, 100).Select(i => (400 + i * 5, 2)), deletes: Enumerable.Range(0, 40).Select(i => 402 + i * 9));
            long before = (await EtlSetup.TransformationAsync(http, "shop", taskId)).GetProperty("LastProcessedEtag").GetInt64();
            await Eventually.HoldsAsync(async () => (await EtlSetup.TransformationAsync(http, "shop", taskId)).GetProperty("LastProcessedEtag").GetInt64() > before,
                "the task loading again after the outage", TimeSpan.FromSeconds(60));
            // Killed with changes still to load (more are written until the task is seen behind).
            int next = 1500, extra = 0;
            while ((await EtlSetup.TransformationAsync(http, "shop", taskId)).GetProperty("EtagLag").GetInt64() == 0)
            {
                Assert.True(extra++ < 200, "the task never fell behind the writes");
                await WriteRangeAsync(http, next, next + 25, version: 4);
                next += 25;
            }
            ServerLauncher.Kill(process);
        }
        finally
        {
            ServerLauncher.Kill(process);
            process.Dispose();
        }

        (process, url) = await ServerLauncher.StartAsync(data, args);
        try
        {
            using var http = new HttpClient { BaseAddress = url, Timeout = TimeSpan.FromSeconds(60) };
            await WriteRangeAsync(http, 1500, 1700, version: 5);
            await WriteOrdersAsync(http, Enumerable.Range(0, 60).Select(i => (i * 11, 3)), deletes: Enumerable.Range(0, 20).Select(i => 1501 + i * 4));
            long taskId = (await TestServer.ReadJson(await http.GetAsync("/databases/shop/tasks"))).GetProperty("OngoingTasks").EnumerateArray().Single().GetProperty("TaskId").GetInt64();
            await Eventually.HoldsAsync(async () =>
            {
                var t = await EtlSetup.TransformationAsync(http, "shop", taskId);
                return t.GetProperty("EtagLag").GetInt64() == 0 && t.GetProperty("State").GetString() == "Running";
            }, "the task caught up after the restart", TimeSpan.FromSeconds(120), async () => (await EtlSetup.TransformationAsync(http, "shop", taskId)).ToString());
            var (orders, lines) = await EtlSetup.ExpectedAsync(http, "shop");
            Assert.True(orders.Count > 1500, $"{orders.Count} orders");
            var actualOrders = pg.Rows(EtlSetup.OrdersSql);
            var actualLines = pg.Rows(EtlSetup.LinesSql);
            Assert.True(orders.SequenceEqual(actualOrders), "Orders: " + EtlSetup.Difference(orders, actualOrders));
            Assert.True(lines.SequenceEqual(actualLines), "OrderLines: " + EtlSetup.Difference(lines, actualLines));
        }
        finally
        {
            ServerLauncher.Kill(process);
            process.Dispose();
        }
    }
}
