using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Http;

/// <summary>
/// Memory budget: a request that builds more in memory than <c>MemoryBudgetMB</c> allows (a query's results
/// and its JSON answer, a multi_get's collected answers) gets 503 LowMemoryException saying what to do, and gives back
/// what it held; pages and streams of the same data answer; the server goes on. Small sizes; the budget here is 8 MiB.
/// </summary>
public sealed class MemoryBudgetTests(ITestOutputHelper output)
{
    [Fact]
    public async Task Requests_larger_than_the_memory_budget_get_503_while_pages_and_streams_of_the_same_data_answer()
    {
        output.WriteLine($"default MemoryBudgetMB here: {new Configuration.ServerOptions().MemoryBudgetMB}");
        await using var s = await StartWithDatabaseAsync("db", o => o.MemoryBudgetMB = 8);
        var budget = s.Services.GetService(typeof(Memory.MemoryBudget)) as Memory.MemoryBudget;
        Assert.NotNull(budget);
        string pad = new('m', 40_000);
        for (int b = 0; b < 6; b++)
        {
            var commands = new JsonArray();
            for (int i = 0; i < 50; i++)
                commands.Add(new JsonObject { ["Id"] = $"docs/{b * 50 + i}", ["Type"] = "PUT", ["Document"] = new JsonObject { ["N"] = b * 50 + i, ["Pad"] = pad, ["@metadata"] = new JsonObject { ["@collection"] = "Docs" } } });
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PostAsync("/databases/db/bulk_docs", Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        }

        // All 300 documents (12 MB) in one answer: refused, and the answer says why and what to do.
        var all = await s.Http.PostAsync("/databases/db/queries", Json("""{"Query":"from Docs"}"""));
        var error = await ReadJson(all);
        output.WriteLine(error.GetProperty("Message").GetString());
        Assert.Equal(HttpStatusCode.ServiceUnavailable, all.StatusCode);
        Assert.EndsWith(".LowMemoryException", error.GetProperty("Type").GetString(), StringComparison.Ordinal);
        Assert.Contains("MemoryBudgetMB = 8", error.GetProperty("Message").GetString(), StringComparison.Ordinal);
        Assert.Contains("/streams/queries", error.GetProperty("Message").GetString(), StringComparison.Ordinal);

        // A page of it answers; so does the stream of all of it (sent as it is read).
        var page = await ReadJson(await s.Http.PostAsync("/databases/db/queries", Json("""{"Query":"from Docs","PageSize":50}""")));
        Assert.Equal(50, page.GetProperty("Results").GetArrayLength());
        var stream = await s.Http.GetAsync("/databases/db/streams/queries?query=" + Uri.EscapeDataString("from Docs"));
        Assert.Equal(HttpStatusCode.OK, stream.StatusCode);
        using (var streamed = JsonDocument.Parse(await stream.Content.ReadAsStringAsync()))
            Assert.Equal(300, streamed.RootElement.GetProperty("Results").GetArrayLength());

        // A multi_get whose answers together pass the budget (12 x 25 documents, 12 MB): the first answer, the ones past
        // the budget 503 in their place (or the whole answer, when the last copy does not fit).
        var requests = new JsonArray();
        for (int i = 0; i < 12; i++)
            requests.Add(new JsonObject { ["Url"] = "/databases/db/queries", ["Query"] = "", ["Method"] = "POST", ["Content"] = new JsonObject { ["Query"] = "from Docs", ["Start"] = i * 25, ["PageSize"] = 25 } });
        var multi = await s.Http.PostAsync("/databases/db/multi_get", Json(new JsonObject { ["Requests"] = requests }.ToJsonString()));
        var multiJson = await ReadJson(multi);
        if (multi.StatusCode == HttpStatusCode.OK)
        {
            var statuses = multiJson.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("StatusCode").GetInt32()).ToList();
            output.WriteLine("multi_get inner statuses: " + string.Join(" ", statuses));
            Assert.Equal(200, statuses[0]);
            Assert.Contains(503, statuses);
        }
        else
        {
            output.WriteLine($"multi_get: {(int)multi.StatusCode} {multiJson.GetProperty("Message").GetString()}");
            Assert.Equal(HttpStatusCode.ServiceUnavailable, multi.StatusCode);
        }

        // Everything held was given back; the server goes on.
        var deadline = DateTime.UtcNow.AddSeconds(10);
        while (budget!.Used != 0 && DateTime.UtcNow < deadline)
            await Task.Delay(20);
        Assert.Equal(0, budget.Used);
        Assert.Equal(HttpStatusCode.OK, (await s.Http.GetAsync("/databases/db/docs?id=docs/7")).StatusCode);
        var small = await ReadJson(await s.Http.PostAsync("/databases/db/queries", Json("""{"Query":"from Docs where N = 7"}""")));
        Assert.Equal(1, small.GetProperty("Results").GetArrayLength());
    }

    private static ByteArrayContent BulkBody(int count, int pad)
    {
        string padding = new('b', pad);
        var items = Enumerable.Range(0, count).Select(i => $$$$"""{"Id":"bulk/{{{{i}}}}","Type":"PUT","Document":{"N":{{{{i}}}},"Pad":"{{{{padding}}}}","@metadata":{"@collection":"Bulk"}}}""");
        return new ByteArrayContent(System.Text.Encoding.UTF8.GetBytes("[" + string.Join(",", items) + "]"));
    }

    private static async Task WaitUntilGivenBack(Memory.MemoryBudget budget)
    {
        var deadline = DateTime.UtcNow.AddSeconds(10);
        while (budget.Used != 0 && DateTime.UtcNow < deadline)
            await Task.Delay(20);
        Assert.Equal(0, budget.Used);
    }

    [Fact]
    public async Task A_bulk_insert_charges_the_batches_it_has_in_flight()
    {
        // Batches of 1 MiB: a bulk insert holds at most two while they commit, well inside 8 MiB; 12 MB goes through.
        await using (var s = await StartWithDatabaseAsync("db", o => { o.MemoryBudgetMB = 8; o.BulkInsertBatchBytes = 1 << 20; }))
        {
            var budget = (Memory.MemoryBudget)s.Services.GetService(typeof(Memory.MemoryBudget))!;
            var r = await s.Http.PostAsync("/databases/db/bulk_insert?id=1", BulkBody(1_200, 10_000));
            Assert.True(r.StatusCode == HttpStatusCode.Created, await r.Content.ReadAsStringAsync());
            Assert.Equal(1_200, (await ReadJson(await s.Http.GetAsync("/databases/db/stats"))).GetProperty("CountOfDocuments").GetInt64());
            await WaitUntilGivenBack(budget);
        }

        // A document of 3 MB in a budget of 2 MiB: whatever batch carries it cannot be held, so the bulk insert stops
        // there with a 503 that says what to do; batches committed before it stay, and everything held is given back.
        await using (var s = await StartWithDatabaseAsync("db", o => { o.MemoryBudgetMB = 2; o.BulkInsertBatchBytes = 1 << 20; }))
        {
            var budget = (Memory.MemoryBudget)s.Services.GetService(typeof(Memory.MemoryBudget))!;
            string small = new('s', 10_000), big = new('B', 3_000_000);
            var items = Enumerable.Range(0, 211).Select(i => $$$$"""{"Id":"bulk/{{{{i}}}}","Type":"PUT","Document":{"N":{{{{i}}}},"Pad":"{{{{(i == 200 ? big : small)}}}}","@metadata":{"@collection":"Bulk"}}}""");
            var r = await s.Http.PostAsync("/databases/db/bulk_insert?id=1", new ByteArrayContent(System.Text.Encoding.UTF8.GetBytes("[" + string.Join(",", items) + "]")));
            string text = await r.Content.ReadAsStringAsync();
            Assert.True(r.StatusCode == HttpStatusCode.ServiceUnavailable, $"{(int)r.StatusCode} {text}");
            string message = JsonDocument.Parse(text).RootElement.GetProperty("Message").GetString()!;
            output.WriteLine($"{(int)r.StatusCode}: {message}");
            Assert.Contains("MemoryBudgetMB = 2", message, StringComparison.Ordinal);
            Assert.Contains("BulkInsertBatchBytes", message, StringComparison.Ordinal);
            long stored = (await ReadJson(await s.Http.GetAsync("/databases/db/stats"))).GetProperty("CountOfDocuments").GetInt64();
            output.WriteLine($"documents stored before the refusal: {stored}");
            Assert.InRange(stored, 0, 200);
            for (int i = 0; i < stored; i++) // whole batches, in order: a prefix of the stream
                Assert.Equal(HttpStatusCode.OK, (await s.Http.GetAsync($"/databases/db/docs?id=bulk/{i}")).StatusCode);
            Assert.Equal(HttpStatusCode.NotFound, (await s.Http.GetAsync("/databases/db/docs?id=bulk/200")).StatusCode);
            await WaitUntilGivenBack(budget);
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/docs?id=after", Json("""{"A":1}"""))).StatusCode);
        }
    }
}
