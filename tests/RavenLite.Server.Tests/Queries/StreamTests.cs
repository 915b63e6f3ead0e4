using RavenLite.Server.Tests.BulkInsert;
using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Queries;

/// <summary>
/// <c>/streams/docs</c> and <c>/streams/queries</c>: every result once, in the order asked, in jsonl and in JSON;
/// bad requests answered 400 before any output; and a large stream read slowly keeping the server's live memory
/// far below the streamed size (results are not gathered before they are sent).
/// </summary>
[Collection(nameof(MemoryBoundTests))] // its memory test samples the whole process's heap: nothing may run beside it
public sealed class StreamTests
{
    private static async Task InsertAsync(TestServer s, int count, int pad, string prefix = "orders/")
    {
        string padding = new('x', pad);
        var body = new StringBuilder("[");
        for (int i = 1; i <= count; i++)
        {
            if (i > 1)
                body.Append(',');
            body.Append("{\"Id\":\"" + prefix + i + "\",\"Type\":\"PUT\",\"Document\":{\"N\":" + i + ",\"Company\":\"companies/" + (i % 5)
                + "\",\"Pad\":\"" + padding + "\",\"@metadata\":{\"@collection\":\"Orders\"}}}");
        }
        body.Append(']');
        var r = await s.Http.PostAsync("/databases/db/bulk_insert?id=1", new StringContent(body.ToString(), Encoding.UTF8, "application/json"));
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
    }

    private static List<JsonElement> Lines(string text) =>
        text.Split('\n', StringSplitOptions.RemoveEmptyEntries).Select(l => JsonDocument.Parse(l).RootElement.Clone()).ToList();

    [Fact]
    public async Task Documents_stream_by_prefix_collection_etag_and_latest_in_both_formats()
    {
        await using var s = await StartWithDatabaseAsync();
        await InsertAsync(s, 300, 10);
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/docs?id=users/1", Json("""{"Name":"Ann","@metadata":{"@collection":"Users"}}"""))).StatusCode);

        var byPrefix = Lines(await s.Http.GetStringAsync("/databases/db/streams/docs?format=jsonl&startsWith=orders/"));
        Assert.Equal(300, byPrefix.Count);
        var ids = byPrefix.Select(d => d.GetProperty("@metadata").GetProperty("@id").GetString()!).ToList();
        Assert.Equal(ids.OrderBy(x => x, StringComparer.Ordinal), ids);
        Assert.Equal(300, ids.Distinct().Count());

        var paged = Lines(await s.Http.GetStringAsync("/databases/db/streams/docs?format=jsonl&startsWith=orders/&startAfter=orders/290&start=1&pageSize=2"));
        Assert.Equal(["orders/292", "orders/293"], paged.Select(d => d.GetProperty("@metadata").GetProperty("@id").GetString()));
        var matched = Lines(await s.Http.GetStringAsync("/databases/db/streams/docs?format=jsonl&startsWith=orders/&matches=1*&exclude=1?"));
        Assert.Equal(1 + 100, matched.Count); // 1, 100-199 (not 10-19)

        var byCollection = Lines(await s.Http.GetStringAsync("/databases/db/streams/docs?format=jsonl&collection=users"));
        Assert.Equal("Ann", Assert.Single(byCollection).GetProperty("Name").GetString());
        var afterEtag = Lines(await s.Http.GetStringAsync("/databases/db/streams/docs?format=jsonl&etag=298"));
        Assert.Equal([299, 300], afterEtag.Take(2).Select(d => d.GetProperty("N").GetInt32()));
        Assert.Equal(3, afterEtag.Count);

        var r = await s.Http.GetAsync("/databases/db/streams/docs?pageSize=3");
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        var latest = (await ReadJson(r)).GetProperty("Results");
        Assert.Equal("users/1", latest[0].GetProperty("@metadata").GetProperty("@id").GetString());
        Assert.Equal(300, latest[1].GetProperty("N").GetInt32());
        Assert.Equal(3, latest.GetArrayLength());
        var empty = await s.Http.GetAsync("/databases/db/streams/docs?startsWith=none/");
        Assert.Equal("""{"Results":[]}""", await empty.Content.ReadAsStringAsync());

        foreach (string bad in new[] { "matches=1*", "startsWith=orders/&collection=Orders", "startsWith=orders/&etag=5" })
        {
            var b = await s.Http.GetAsync("/databases/db/streams/docs?" + bad);
            Assert.True(b.StatusCode == HttpStatusCode.BadRequest, bad + " → " + b.StatusCode);
        }
        Assert.Equal(HttpStatusCode.ServiceUnavailable, (await s.Http.GetAsync("/databases/nope/streams/docs")).StatusCode);
    }

    [Fact]
    public async Task Query_streams_write_stats_then_every_result_and_refuse_bad_queries_before_output()
    {
        await using var s = await StartWithDatabaseAsync();
        await InsertAsync(s, 500, 10);
        var r = await s.Http.PostAsync("/databases/db/streams/queries?format=jsonl", Json("""{"Query":"from Orders where Company = $c","QueryParameters":{"c":"companies/2"}}"""));
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        var lines = Lines(await r.Content.ReadAsStringAsync());
        var stats = lines[0].GetProperty("Stats");
        Assert.StartsWith("Auto/Orders/By", stats.GetProperty("IndexName").GetString());
        Assert.Equal(100, stats.GetProperty("TotalResults").GetInt64());
        Assert.Equal(500, stats.GetProperty("ResultEtag").GetInt64());
        var items = lines.Skip(1).Select(l => l.GetProperty("Item")).ToList();
        Assert.Equal(100, items.Count);
        Assert.All(items, i => Assert.Equal("companies/2", i.GetProperty("Company").GetString()));
        Assert.Equal(100, items.Select(i => i.GetProperty("N").GetInt32()).Distinct().Count());

        // A whole collection, projected, paged; ordered (ranked first, then written); GET; the JSON format.
        var scan = Lines(await (await s.Http.PostAsync("/databases/db/streams/queries?format=jsonl", Json("""{"Query":"from Orders select N limit 490, 100"}"""))).Content.ReadAsStringAsync());
        Assert.Equal(500, scan[0].GetProperty("Stats").GetProperty("TotalResults").GetInt64());
        Assert.Equal(Enumerable.Range(491, 10), scan.Skip(1).Select(l => l.GetProperty("Item").GetProperty("N").GetInt32()));
        Assert.False(scan[1].GetProperty("Item").TryGetProperty("Pad", out _));
        var ordered = Lines(await s.Http.GetStringAsync("/databases/db/streams/queries?format=jsonl&query=" + Uri.EscapeDataString("from Orders order by N as long desc limit 3")));
        Assert.Equal([500, 499, 498], ordered.Skip(1).Select(l => l.GetProperty("Item").GetProperty("N").GetInt32()));
        var json = await ReadJson(await s.Http.PostAsync("/databases/db/streams/queries", Json("""{"Query":"from Orders where Company = 'companies/1' limit 4"}""")));
        Assert.Equal(4, json.GetProperty("Results").GetArrayLength());
        Assert.True(json.TryGetProperty("IndexName", out _));

        foreach (var (body, type) in new[]
        {
            ("""{"Query":"from Orders where"}""", "InvalidQueryException"),
            ("""{"Query":"from index 'Missing'"}""", "IndexDoesNotExistException"),
            ("""{"Query":"from Orders select facet(Company)"}""", "InvalidQueryException"),
            ("""{"Query":"from Orders","WaitForNonStaleResults":true}""", "BadRequestException"),
            ("""{"Query":"from Orders where Company = $missing"}""", "InvalidQueryException"),
            ("""{"Query":"from Orders update { this.N = 1 }"}""", "InvalidQueryException"),
        })
        {
            var b = await s.Http.PostAsync("/databases/db/streams/queries?format=jsonl", Json(body));
            string text = await b.Content.ReadAsStringAsync();
            Assert.True((int)b.StatusCode is 400 or 404 or 500, body + " → " + b.StatusCode + " " + text); // 500: IndexDoesNotExistException, as RavenDB
            Assert.Contains(type, text);
        }
        // Nothing was changed by the refused update.
        var one = await ReadJson(await s.Http.GetAsync("/databases/db/docs?id=orders/7"));
        Assert.Equal(7, one.GetProperty("Results")[0].GetProperty("N").GetInt32());
    }

    [Fact]
    public async Task A_large_stream_read_slowly_keeps_server_memory_flat()
    {
        const int count = 40_000, pad = 3000; // ≈ 120 MB of documents
        using var dir = new RavenLite.TestKit.TempDirectory("rl-stream");
        await using (var writer = await StartWithDatabaseAsync(dataDir: dir.Path))
            await InsertAsync(writer, count, pad);
        // A fresh server on those files: what the writes left in memory (journal buffers, pages not yet flushed) is gone.
        await using var s = await StartAsync(dataDir: dir.Path);
        long baseline = GC.GetTotalMemory(forceFullCollection: true);
        long peak = 0;
        using var response = await s.Http.GetAsync("/databases/db/streams/docs?format=jsonl&startsWith=orders/", HttpCompletionOption.ResponseHeadersRead);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        await using var body = await response.Content.ReadAsStreamAsync();
        var buffer = new byte[256 * 1024];
        long total = 0, lines = 0, reads = 0;
        int n;
        while ((n = await body.ReadAsync(buffer)) > 0)
        {
            total += n;
            lines += buffer.AsSpan(0, n).Count((byte)'\n');
            if (++reads == 4)
            {
                // A reader that stops: the server waits for the socket instead of gathering what it has not sent
                // (in this pause it would have read every document).
                await Task.Delay(1500);
                peak = Math.Max(peak, GC.GetTotalMemory(forceFullCollection: true) - baseline);
            }
            else if (reads % 64 == 0)
            {
                peak = Math.Max(peak, GC.GetTotalMemory(forceFullCollection: true) - baseline);
            }
        }
        Assert.Equal(count, lines);
        Assert.True(total > 110_000_000, $"streamed {total} bytes");
        Assert.True(peak < 40_000_000, $"live memory grew by {peak / 1_000_000.0:F1} MB while streaming {total / 1_000_000.0:F0} MB");
    }
}
