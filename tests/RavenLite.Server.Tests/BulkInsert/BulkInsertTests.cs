using System.IO.Compression;
using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.BulkInsert;

public sealed class BulkInsertTests
{
    private static string Item(int i, int pad = 40) =>
        $$$$"""{"Id":"users/{{{{i}}}}-A","Type":"PUT","Document":{"Name":"user {{{{i}}}}","Age":{{{{i % 90}}}},"Pad":"{{{{new string('x', pad)}}}}","@metadata":{"@collection":"Users","Raven-Node-Type":"User"}}}""";

    private static string Body(int count, int pad = 40) => "[" + string.Join(",", Enumerable.Range(0, count).Select(i => Item(i, pad))) + "]";

    private static async Task<long> CountAsync(TestServer s) =>
        (await ReadJson(await s.Http.GetAsync("/databases/db/stats"))).GetProperty("CountOfDocuments").GetInt64();

    private static async Task<JsonElement> StateAsync(TestServer s, long id) =>
        await ReadJson(await s.Http.GetAsync($"/databases/db/operations/state?id={id}"));

    [Fact]
    public async Task Answers_201_with_empty_body_at_the_closing_bracket_while_the_body_never_ends()
    {
        await using var s = await StartAsync();
        foreach (int seed in TestSeed.For(1234))
        {
            string db = $"db{seed}";
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync($"/admin/databases?name={db}", Json(""))).StatusCode);
            var rnd = new Random(seed);
            long op = (await ReadJson(await s.Http.GetAsync($"/databases/{db}/operations/next-operation-id"))).GetProperty("Id").GetInt64();
            byte[] body = Encoding.UTF8.GetBytes(Body(5000));
            using var raw = await RawHttp.ConnectAsync(s.Url);
            await raw.StartChunkedPostAsync($"/databases/{db}/bulk_insert?id={op}&skipOverwriteIfUnchanged=false", "Content-Type: application/json\r\n");
            // Chunk boundaries at random places: inside strings, numbers, between items.
            for (int pos = 0; pos < body.Length;)
            {
                int n = Math.Min(body.Length - pos, rnd.Next(1, 20000));
                await raw.ChunkAsync(body.AsMemory(pos, n));
                pos += n;
            }
            // No terminating chunk, as the Node client does.
            var (status, headers, text) = await raw.ReadResponseAsync(TimeSpan.FromSeconds(30));
            Assert.True(201 == status, $"seed {seed} (replay with RAVENLITE_TEST_SEED={seed}): status {status} {text}");
            Assert.Equal("0", headers["content-length"]);
            Assert.Equal("", text);
            var stats = await ReadJson(await s.Http.GetAsync($"/databases/{db}/stats"));
            Assert.Equal(5000, stats.GetProperty("CountOfDocuments").GetInt64());
            var state = await ReadJson(await s.Http.GetAsync($"/databases/{db}/operations/state?id={op}"));
            Assert.Equal("Completed", state.GetProperty("Status").GetString());
            Assert.Equal(5000, state.GetProperty("Result").GetProperty("Total").GetInt64());
            var doc = await ReadJson(await s.Http.GetAsync($"/databases/{db}/docs?id=users/4321-a"));
            Assert.Equal("user 4321", doc.GetProperty("Results")[0].GetProperty("Name").GetString());
        }
    }

    [Fact]
    public async Task Strings_with_quotes_braces_and_escapes_survive_any_chunking()
    {
        await using var s = await StartWithDatabaseAsync();
        // Names that hold every byte the item scanner looks at: quotes, backslashes (also right before a quote), braces, brackets.
        string NameOf(int i) => $"u{i} \"q\" {{b}} [a] \\ \\\"{new string('\\', i % 4)}";
        string Escaped(string v) => JsonSerializer.Serialize(v);
        var items = Enumerable.Range(0, 300).Select(i =>
            "{\"Id\":\"odd/" + i + "\",\"Type\":\"PUT\",\"Document\":{\"Name\":" + Escaped(NameOf(i))
            + ",\"Nested\":{\"a\":[{\"b\":\"}\"},[\"]\"]],\"c\":\"\\\\\"},\"@metadata\":{\"@collection\":\"Odd\"}}}");
        byte[] body = Encoding.UTF8.GetBytes("[\n " + string.Join(" ,\r\n\t", items) + "\n]");
        var rnd = new Random(5);
        using var raw = await RawHttp.ConnectAsync(s.Url);
        await raw.StartChunkedPostAsync("/databases/db/bulk_insert?id=3");
        for (int pos = 0; pos < body.Length;)
        {
            int n = Math.Min(body.Length - pos, rnd.Next(1, 9));
            await raw.ChunkAsync(body.AsMemory(pos, n));
            pos += n;
        }
        var (status, _, text) = await raw.ReadResponseAsync(TimeSpan.FromSeconds(60));
        Assert.True(201 == status, $"{status} {text}");
        Assert.Equal(300, await CountAsync(s));
        foreach (int i in new[] { 0, 1, 2, 3, 150, 299 })
        {
            var doc = (await ReadJson(await s.Http.GetAsync($"/databases/db/docs?id=odd/{i}"))).GetProperty("Results")[0];
            Assert.Equal(NameOf(i), doc.GetProperty("Name").GetString());
            Assert.Equal("}", doc.GetProperty("Nested").GetProperty("a")[0].GetProperty("b").GetString());
            Assert.Equal("\\", doc.GetProperty("Nested").GetProperty("c").GetString());
        }
    }

    [Fact]
    public async Task An_item_finished_by_a_short_last_piece_is_answered_although_the_body_never_ends()
    {
        // Most of an item arrives, the server tries it and waits; then a piece much shorter than what it already
        // has completes the item and the array, and the client (like the Node client) never ends the body.
        await using var s = await StartWithDatabaseAsync();
        byte[] body = Encoding.UTF8.GetBytes("[" + Item(1, pad: 4000) + "]");
        using var raw = await RawHttp.ConnectAsync(s.Url);
        await raw.StartChunkedPostAsync("/databases/db/bulk_insert?id=4");
        await raw.ChunkAsync(body.AsMemory(0, body.Length - 20));
        await Task.Delay(300); // let the server read and try the partial item
        await raw.ChunkAsync(body.AsMemory(body.Length - 20));
        var (status, _, text) = await raw.ReadResponseAsync(TimeSpan.FromSeconds(20));
        Assert.True(201 == status, $"{status} {text}");
        Assert.Equal(1, await CountAsync(s));
    }

    [Fact]
    public async Task Gzip_bodies_heartbeats_and_overwrites_work_through_httpclient()
    {
        await using var s = await StartWithDatabaseAsync();
        var ms = new MemoryStream();
        await using (var gz = new GZipStream(ms, CompressionLevel.Fastest, leaveOpen: true))
        {
            var items = Enumerable.Range(0, 3000).Select(i => Item(i)).ToList();
            items.Insert(1500, """{"Type":"HeartBeat"}""");
            items.Add(Item(7, pad: 3)); // same id again: a plain overwrite
            await gz.WriteAsync(Encoding.UTF8.GetBytes("[" + string.Join(",", items) + "]"));
        }
        var content = new ByteArrayContent(ms.ToArray());
        content.Headers.ContentEncoding.Add("gzip");
        var r = await s.Http.PostAsync("/databases/db/bulk_insert?id=77", content);
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        Assert.Equal(0, r.Content.Headers.ContentLength);
        Assert.Equal(3000, await CountAsync(s));
        var doc = await ReadJson(await s.Http.GetAsync("/databases/db/docs?id=users/7-A"));
        Assert.Equal("xxx", doc.GetProperty("Results")[0].GetProperty("Pad").GetString());
        Assert.Equal("Completed", (await StateAsync(s, 77)).GetProperty("Status").GetString());
    }

    [Fact]
    public async Task A_quiet_network_hands_over_a_partial_batch_so_documents_are_durable_before_the_stream_ends()
    {
        await using var s = await StartWithDatabaseAsync();
        using var raw = await RawHttp.ConnectAsync(s.Url);
        await raw.StartChunkedPostAsync("/databases/db/bulk_insert?id=5");
        await raw.ChunkAsync("[" + Item(1) + "," + Item(2));
        // The stream stalls; the quiet timer commits the two documents meanwhile.
        var deadline = DateTime.UtcNow.AddSeconds(20);
        while (await CountAsync(s) < 2 && DateTime.UtcNow < deadline)
            await Task.Delay(20);
        Assert.Equal(2, await CountAsync(s));
        Assert.Equal("InProgress", (await StateAsync(s, 5)).GetProperty("Status").GetString());
        await raw.ChunkAsync("," + Item(3) + "]");
        Assert.Equal(201, (await raw.ReadResponseAsync(TimeSpan.FromSeconds(30))).Status);
        Assert.Equal(3, await CountAsync(s));
    }

    [Theory]
    [InlineData("{\"not\":\"an array\"}", "JSON array")]
    [InlineData("[1,2]", "array of objects")]
    [InlineData("[{\"Id\":\"a\",\"Type\":\"PUT\",\"Document\":{\"x\":1,\"x\":2}}]", "Duplicate")]
    [InlineData("[{\"Id\":\"a\",\"Type\":\"PUT\",\"Document\":{\"x\":{\"y\":1,\"\\u0079\":2}}}]", "Duplicate")]
    [InlineData("[{\"Id\":\"a\",\"Id\":\"b\",\"Type\":\"PUT\",\"Document\":{}}]", "Duplicate")]
    [InlineData("[{\"Id\":\"a\",\"Type\":\"PUT\",\"Document\":[]}]", "no Document object")]
    [InlineData("[{\"Id\":\"a\",\"Type\":\"PUT\",\"Document\":{\"@metadata\":{\"@collection\":7}}}]", "@collection must be a string")]
    [InlineData("[{\"Id\":\"a\",\"Type\":\"PUT\",\"Document\":{}} {\"Id\":\"b\",\"Type\":\"PUT\",\"Document\":{}}]", "expected ','")]
    [InlineData("[{\"Id\":\"a\",\"Type\":\"PUT\",\"Document\":{}},]", "array of objects")]
    [InlineData("[{\"Id\":\"a\",\"Type\":\"PUT\",\"Document\":{\"v\":[1,2}}}]", "Invalid JSON")]
    [InlineData("[{\"Id\":\"a\",\"Type\":\"Counters\"}]", "no Counters object")]
    [InlineData("[{\"Id\":\"a\",\"Type\":\"Revisions\"}]", "not supported")]
    [InlineData("[{\"Id\":\"a\",\"Type\":\"AttachmentPUT\",\"Name\":\"x\"}]", "no ContentLength")]
    [InlineData("[{\"Type\":\"PUT\",\"Document\":{}}]", "no Id")]
    [InlineData("[{\"Id\":\"a\",\"Type\":\"PUT\",\"Document\":{}},{\"Id\":\"b\",\"Type\":\"PUT\",\"Document\":{\"v\":tru}}]", "Invalid JSON")]
    [InlineData("[{\"Id\":\"a\",\"Type\":\"PUT\",\"Document\":{}}", "ended")]
    [InlineData("", "empty")]
    public async Task Malformed_streams_are_400_apply_no_partial_batch_and_fault_the_operation(string body, string expected)
    {
        await using var s = await StartWithDatabaseAsync();
        var r = await s.Http.PostAsync("/databases/db/bulk_insert?id=9", Json(body));
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        var error = await ReadJson(r);
        Assert.Contains(expected, error.GetProperty("Message").GetString());
        Assert.Equal(0, await CountAsync(s));
        var state = await StateAsync(s, 9);
        Assert.Equal("Faulted", state.GetProperty("Status").GetString());
        Assert.Contains(expected, state.GetProperty("Result").GetProperty("Error").GetString());
    }

    [Fact]
    public async Task Documents_nest_64_levels_in_a_stream_and_keep_client_metadata()
    {
        await using var s = await StartWithDatabaseAsync();
        string Nest(int levels) => string.Concat(Enumerable.Repeat("{\"a\":", levels - 1)) + "{}" + new string('}', levels - 1);
        string ok = "[{\"Id\":\"deep\",\"Type\":\"PUT\",\"Document\":" + Nest(64)[..^1] + ",\"@metadata\":{\"@collection\":\"Deep\",\"Raven-Node-Type\":\"N\",\"@id\":\"other\"}}}]";
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PostAsync("/databases/db/bulk_insert?id=1", Json(ok))).StatusCode);
        using var doc = System.Text.Json.JsonDocument.Parse(await s.Http.GetStringAsync("/databases/db/docs?id=deep"), new System.Text.Json.JsonDocumentOptions { MaxDepth = 70 });
        var meta = doc.RootElement.GetProperty("Results")[0].GetProperty("@metadata");
        Assert.Equal("Deep", meta.GetProperty("@collection").GetString());
        Assert.Equal("deep", meta.GetProperty("@id").GetString());
        Assert.Equal("N", meta.GetProperty("Raven-Node-Type").GetString());
        var r = await s.Http.PostAsync("/databases/db/bulk_insert?id=2", Json("[{\"Id\":\"deeper\",\"Type\":\"PUT\",\"Document\":" + Nest(65) + "}]"));
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        Assert.Contains("64", (await ReadJson(r)).GetProperty("Message").GetString());
        Assert.Equal(1, await CountAsync(s));
    }

    [Fact]
    public async Task An_error_after_committed_batches_keeps_them_and_drops_the_batch_in_progress()
    {
        // A long quiet time keeps batch boundaries at exactly every 100 documents.
        await using var s = await StartWithDatabaseAsync(configure: o => { o.BulkInsertBatchDocuments = 100; o.BulkInsertQuietMs = 1000; });
        string body = "[" + string.Join(",", Enumerable.Range(0, 250).Select(i => Item(i))) + ",{\"Id\":\"bad\",\"Type\":\"PUT\",\"Document\":{\"a\":1,\"a\":1}}]";
        var r = await s.Http.PostAsync("/databases/db/bulk_insert?id=3", Json(body));
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        // Two full batches of 100 committed; the 50 after them were never applied.
        Assert.Equal(200, await CountAsync(s));
        Assert.Equal(HttpStatusCode.NotFound, (await s.Http.GetAsync("/databases/db/docs?id=users/200-A")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await s.Http.GetAsync("/databases/db/docs?id=users/199-A")).StatusCode);
        var state = await StateAsync(s, 3);
        Assert.Equal("Faulted", state.GetProperty("Status").GetString());
    }

    [Fact]
    public async Task A_client_that_hangs_up_mid_document_leaves_committed_batches_and_no_stuck_transaction()
    {
        await using var s = await StartWithDatabaseAsync(configure: o => o.BulkInsertBatchDocuments = 50);
        using (var raw = await RawHttp.ConnectAsync(s.Url))
        {
            await raw.StartChunkedPostAsync("/databases/db/bulk_insert?id=11");
            await raw.ChunkAsync("[" + string.Join(",", Enumerable.Range(0, 120).Select(i => Item(i))) + ",{\"Id\":\"half\",\"Type\":\"PUT\",\"Document\":{\"Na");
            var deadline = DateTime.UtcNow.AddSeconds(20);
            while (await CountAsync(s) < 100 && DateTime.UtcNow < deadline)
                await Task.Delay(20);
        }
        var until = DateTime.UtcNow.AddSeconds(20);
        while ((await StateAsync(s, 11)).GetProperty("Status").GetString() == "InProgress" && DateTime.UtcNow < until)
            await Task.Delay(20);
        long count = await CountAsync(s);
        Assert.True(count is 100 or 120, $"count {count}: whole batches only");
        Assert.Equal(HttpStatusCode.NotFound, (await s.Http.GetAsync("/databases/db/docs?id=half")).StatusCode);
        // The writer is free: a normal write goes through at once.
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/docs?id=after", Json("{}"))).StatusCode);
    }

    [Fact]
    public async Task Kill_stops_a_running_bulk_insert_and_the_state_says_canceled()
    {
        await using var s = await StartWithDatabaseAsync();
        using var raw = await RawHttp.ConnectAsync(s.Url);
        await raw.StartChunkedPostAsync("/databases/db/bulk_insert?id=21");
        await raw.ChunkAsync("[" + Item(1));
        var until = DateTime.UtcNow.AddSeconds(20);
        while ((await s.Http.GetAsync("/databases/db/operations/state?id=21")).StatusCode != HttpStatusCode.OK && DateTime.UtcNow < until)
            await Task.Delay(10);
        Assert.Equal(HttpStatusCode.NoContent, (await s.Http.PostAsync("/databases/db/operations/kill?id=21", Json(""))).StatusCode);
        var (status, _, body) = await raw.ReadResponseAsync(TimeSpan.FromSeconds(20));
        Assert.Equal(500, status);
        Assert.Contains("BulkInsertAbortedException", body);
        Assert.Equal("Canceled", (await StateAsync(s, 21)).GetProperty("Status").GetString());
    }
}

/// <summary>Runs alone: it samples the whole process's managed heap.</summary>
[CollectionDefinition(nameof(MemoryBoundTests), DisableParallelization = true)]
[Collection(nameof(MemoryBoundTests))]
public sealed class MemoryBoundTests
{
    private static string Item(int i, int pad) =>
        $$$$"""{"Id":"users/{{{{i}}}}-A","Type":"PUT","Document":{"Name":"user {{{{i}}}}","Pad":"{{{{new string('x', pad)}}}}","@metadata":{"@collection":"Users"}}}""";

    private static async Task<long> CountAsync(TestServer s) =>
        (await ReadJson(await s.Http.GetAsync("/databases/db/stats"))).GetProperty("CountOfDocuments").GetInt64();

    [Fact]
    public async Task Memory_stays_bounded_while_streaming_many_megabytes()
    {
        await using var s = await StartWithDatabaseAsync();
        // The heap this process already holds (tests that ran before, static caches) is not the subject.
        long baseline = GC.GetTotalMemory(forceFullCollection: true);
        Console.WriteLine($"managed heap before the stream: {baseline >> 20} MB");
        using var raw = await RawHttp.ConnectAsync(s.Url);
        await raw.StartChunkedPostAsync("/databases/db/bulk_insert?id=31");
        await raw.ChunkAsync("[");
        var samples = new List<long>();
        int total = int.Parse(Environment.GetEnvironmentVariable("MEMTEST_DOCS") ?? "100000", System.Globalization.CultureInfo.InvariantCulture); // ≈ 100 MB of documents by default
        for (int i = 0; i < total; i += 1000)
        {
            var sb = new StringBuilder();
            for (int j = i; j < i + 1000; j++)
                sb.Append(j == 0 ? "" : ",").Append(Item(j, pad: 900));
            await raw.ChunkAsync(sb.ToString());
            if (i % 10_000 == 9_000)
                samples.Add(GC.GetTotalMemory(forceFullCollection: true));
        }
        await raw.ChunkAsync("]");
        Assert.Equal(201, (await raw.ReadResponseAsync(TimeSpan.FromSeconds(120))).Status);
        Assert.Equal(total, await CountAsync(s));
        // Bounded, not growing with the stream: the heap warms up (per-transaction buffers sized to the
        // largest batch, pools) and then plateaus. Measured over 200 MB: 19, 30, 46, 45, 49 ... 48 MB.
        // The second half of the stream may not raise the peak of the first by more than 16 MB, and the
        // stream may not add more than 128 MB to what the process held before it.
        string shown = $"managed heap before {baseline >> 20} MB, samples (MB): {string.Join(", ", samples.Select(x => x >> 20))}";
        Console.WriteLine(shown);
        int half = samples.Count / 2;
        long growth = samples.Skip(half).Max() - samples.Take(half).Max();
        Assert.True(growth < 16L << 20 && samples.Max() - baseline < 128L << 20, shown);
    }
}
