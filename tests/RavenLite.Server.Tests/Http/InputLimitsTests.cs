using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Http;

/// <summary>docs/reliability.md I1, I2: bad input gets a clear 4xx, nothing is written, the server stays up.</summary>
public sealed class InputLimitsTests
{
    private static async Task AssertNothingWritten(TestServer s)
    {
        var stats = await ReadJson(await s.Http.GetAsync("/databases/db/stats"));
        Assert.Equal(0, stats.GetProperty("CountOfDocuments").GetInt64());
        Assert.Equal(0, stats.GetProperty("LastDocEtag").GetInt64());
    }

    public static TheoryData<string, string> Corpus() => new()
    {
        { "", "Invalid JSON" },
        { "{", "Invalid JSON" },
        { "{\"a\":", "Invalid JSON" },
        { "{\"a\":1,}", "Invalid JSON" },
        { "{'a':1}", "Invalid JSON" },
        { "{\"a\":1}{\"b\":2}", "Invalid JSON" },
        { "{\"a\":1,\"a\":2}", "Duplicate" },
        { "{\"a\":{\"b\":1,\"b\":2}}", "Duplicate" },
        { "[1,2,3]", "must be a JSON object" },
        { "\"text\"", "must be a JSON object" },
        { "null", "must be a JSON object" },
        { "{\"a\":NaN}", "Invalid JSON" },
        { "{\"a\":01}", "Invalid JSON" },
        { "{\"a\":\"\\x\"}", "Invalid JSON" },
        { "{\"@metadata\":[]}", "@metadata must be a JSON object" },
        { "{\"@metadata\":{\"@collection\":{}}}", "@collection must be a string" },
        { "/* c */{\"a\":1}", "Invalid JSON" },
        { new string('[', 65) + new string(']', 65), "Invalid JSON" },
        { "{\"a\":" + new string('[', 100_000) + new string(']', 100_000) + "}", "Invalid JSON" },
    };

    [Theory]
    [MemberData(nameof(Corpus))]
    public async Task Malformed_documents_get_400_naming_the_problem_and_write_nothing(string body, string expected)
    {
        await using var s = await StartWithDatabaseAsync();
        var r = await s.Http.PutAsync("/databases/db/docs?id=x", Json(body));
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        var e = await ReadJson(r);
        Assert.Equal("Raven.Client.Exceptions.BadRequestException", e.GetProperty("Type").GetString());
        Assert.Contains(expected, e.GetProperty("Message").GetString());
        var batch = await s.Http.PostAsync("/databases/db/bulk_docs", Json("{\"Commands\":[{\"Id\":\"y\",\"Type\":\"PUT\",\"Document\":" + (body.Length == 0 ? "" : body) + "}]}"));
        Assert.Equal(HttpStatusCode.BadRequest, batch.StatusCode);
        await AssertNothingWritten(s);
    }

    [Fact]
    public async Task Depth_64_is_accepted_and_65_is_not()
    {
        await using var s = await StartWithDatabaseAsync();
        // A document is depth 1; each nested object adds one.
        string ok = string.Concat(Enumerable.Repeat("{\"a\":", 63)) + "1" + new string('}', 63);
        string tooDeep = string.Concat(Enumerable.Repeat("{\"a\":", 64)) + "1" + new string('}', 64);
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/docs?id=ok", Json("{\"v\":" + ok + "}"))).StatusCode);
        var r = await s.Http.PutAsync("/databases/db/docs?id=deep", Json("{\"v\":" + tooDeep + "}"));
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        var b = await s.Http.PostAsync("/databases/db/bulk_docs", Json("{\"Commands\":[{\"Id\":\"deep\",\"Type\":\"PUT\",\"Document\":{\"v\":" + tooDeep + "}}]}"));
        Assert.Equal(HttpStatusCode.BadRequest, b.StatusCode);
        Assert.Contains("at most 64 levels", (await ReadJson(b)).GetProperty("Message").GetString());
        Assert.Equal(HttpStatusCode.NotFound, (await s.Http.GetAsync("/databases/db/docs?id=deep")).StatusCode);
    }

    [Fact]
    public async Task Invalid_utf8_and_huge_numbers_are_handled()
    {
        await using var s = await StartWithDatabaseAsync();
        var bad = new ByteArrayContent([.. "{\"a\":\""u8, 0xC3, 0x28, .. "\"}"u8]);
        Assert.Equal(HttpStatusCode.BadRequest, (await s.Http.PutAsync("/databases/db/docs?id=u", bad)).StatusCode);
        await AssertNothingWritten(s);
        // A huge number is valid JSON: kept verbatim.
        string huge = "1" + new string('0', 400);
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/docs?id=n", Json("{\"n\":" + huge + "}"))).StatusCode);
        string text = await (await s.Http.GetAsync("/databases/db/docs?id=n")).Content.ReadAsStringAsync();
        Assert.Contains(huge, text);
    }

    [Fact]
    public async Task Mutation_fuzz_of_valid_documents_never_gets_a_5xx_and_rejects_write_nothing()
    {
        await using var s = await StartWithDatabaseAsync();
        const string valid = """{"Name":"Alice","Tags":["a","b"],"Address":{"City":"Oslo","Zip":123},"Age":30.5,"Ok":true,"N":null,"@metadata":{"@collection":"Users"}}""";
        foreach (int seed in TestSeed.For(99))
        {
            var rnd = new Random(seed);
            int accepted = 0;
            for (int i = 0; i < 300; i++)
            {
                var bytes = Encoding.UTF8.GetBytes(valid);
                int edits = rnd.Next(1, 4);
                for (int e = 0; e < edits; e++)
                {
                    int at = rnd.Next(bytes.Length);
                    switch (rnd.Next(3))
                    {
                        case 0: bytes[at] = (byte)rnd.Next(256); break;
                        case 1: bytes = bytes[..at]; break;
                        default: bytes = [.. bytes[..at], (byte)"{}[]\",:\\"[rnd.Next(8)], .. bytes[at..]]; break;
                    }
                    if (bytes.Length == 0)
                        break;
                }
                var r = await s.Http.PutAsync($"/databases/db/docs?id=f/{seed}/{i}", new ByteArrayContent(bytes));
                Assert.True((int)r.StatusCode is 201 or 400, $"seed {seed} (RAVENLITE_TEST_SEED={seed}) case {i}: {(int)r.StatusCode} for {Convert.ToBase64String(bytes)}");
                if (r.StatusCode == HttpStatusCode.Created)
                    accepted++;
                else
                    Assert.Equal(HttpStatusCode.NotFound, (await s.Http.GetAsync($"/databases/db/docs?id=f/{seed}/{i}")).StatusCode);
            }
            var stats = await ReadJson(await s.Http.GetAsync("/databases/db/stats"));
            Assert.True(stats.GetProperty("CountOfDocuments").GetInt64() >= accepted);
        }
    }

    [Fact]
    public async Task Oversized_document_body_id_header_and_url_get_the_documented_statuses()
    {
        await using var s = await StartWithDatabaseAsync(configure: o => { o.MaxDocumentBytes = 64 << 10; o.MaxRequestBodyBytes = 256 << 10; });
        string big = "{\"a\":\"" + new string('x', 70 << 10) + "\"}";
        var doc = await s.Http.PutAsync("/databases/db/docs?id=big", Json(big));
        Assert.Equal(HttpStatusCode.RequestEntityTooLarge, doc.StatusCode);
        Assert.Contains("MaxDocumentBytes", (await ReadJson(doc)).GetProperty("Message").GetString());
        var inBatch = await s.Http.PostAsync("/databases/db/bulk_docs", Json("{\"Commands\":[{\"Id\":\"big\",\"Type\":\"PUT\",\"Document\":" + big + "}]}"));
        Assert.Equal(HttpStatusCode.RequestEntityTooLarge, inBatch.StatusCode);
        var body = await s.Http.PostAsync("/databases/db/bulk_docs", Json("{\"Commands\":[],\"pad\":\"" + new string('x', 300 << 10) + "\"}"));
        Assert.Equal(HttpStatusCode.RequestEntityTooLarge, body.StatusCode);
        Assert.Contains("MaxRequestBodyBytes", (await ReadJson(body)).GetProperty("Message").GetString());
        var bulk = await s.Http.PostAsync("/databases/db/bulk_insert?id=1", Json("[{\"Id\":\"big\",\"Type\":\"PUT\",\"Document\":" + big + "}]"));
        Assert.Equal(HttpStatusCode.RequestEntityTooLarge, bulk.StatusCode);

        var id = await s.Http.PutAsync($"/databases/db/docs?id={new string('i', 600)}", Json("{}"));
        Assert.Equal(HttpStatusCode.BadRequest, id.StatusCode);
        Assert.Contains("limit is 512", (await ReadJson(id)).GetProperty("Message").GetString());
        var nul = await s.Http.PutAsync("/databases/db/docs?id=a%00b", Json("{}"));
        Assert.Equal(HttpStatusCode.BadRequest, nul.StatusCode);

        using var headers = new HttpRequestMessage(HttpMethod.Get, "/databases/db/stats");
        headers.Headers.TryAddWithoutValidation("X-Big", new string('h', 70 << 10));
        Assert.Equal(HttpStatusCode.RequestHeaderFieldsTooLarge, (await s.Http.SendAsync(headers)).StatusCode);
        var url = await s.Http.GetAsync("/databases/db/docs?id=" + new string('u', 20 << 10));
        Assert.Equal(HttpStatusCode.RequestUriTooLong, url.StatusCode);

        await AssertNothingWritten(s);
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/docs?id=fine", Json("{}"))).StatusCode);
    }

    [Fact]
    public async Task Lenient_query_strings_and_etag_headers_as_the_clients_send_them()
    {
        await using var s = await StartWithDatabaseAsync();
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/docs?id=t/2", Json("{}"))).StatusCode);
        using var req = new HttpRequestMessage(HttpMethod.Get, "/databases/db/docs?&id=t%2F2&loadHash=abc&debug-tag");
        req.Headers.TryAddWithoutValidation("Topology-Etag", "\"None\"");
        req.Headers.TryAddWithoutValidation("Client-Configuration-Etag", "\"None\"");
        req.Headers.TryAddWithoutValidation("Raven-Client-Version", "7.2.3");
        Assert.Equal(HttpStatusCode.OK, (await s.Http.SendAsync(req)).StatusCode);
        using var put = new HttpRequestMessage(HttpMethod.Put, "/databases/db/docs?id=t/2") { Content = Json("{}") };
        put.Headers.TryAddWithoutValidation("If-Match", "garbage-not-a-cv");
        Assert.Equal(HttpStatusCode.Conflict, (await s.Http.SendAsync(put)).StatusCode);
        // Paging arguments themselves are checked (Negative_or_non_numeric_paging_arguments_are_400s_that_name_them).
    }

    [Fact]
    public async Task Negative_or_non_numeric_paging_arguments_are_400s_that_name_them()
    {
        await using var s = await StartWithDatabaseAsync();
        foreach (string url in new[] { "/databases/db/docs?start=-1", "/databases/db/docs?pageSize=-5", "/databases/db/docs?start=abc",
                     "/databases/db/docs?start=99999999999999999999999", "/databases/db/indexes?start=-1", "/databases?pageSize=-1" })
        {
            var r = await s.Http.GetAsync(url);
            string body = await r.Content.ReadAsStringAsync();
            Assert.True(r.StatusCode == HttpStatusCode.BadRequest, $"{url}: {(int)r.StatusCode} {body}");
            string name = url.Contains("start", StringComparison.Ordinal) ? "'start'" : "'pageSize'";
            Assert.Contains(name, body, StringComparison.Ordinal);
        }
        // More than the maximum is clamped (RavenDB's clients ask for int.MaxValue to mean all).
        Assert.Equal(HttpStatusCode.OK, (await s.Http.GetAsync("/databases/db/docs?pageSize=2147483647")).StatusCode);

        // 64-bit arguments and a query body's paging are checked the same way.
        foreach (var (method, url, body, name) in new (string, string, string?, string)[]
        {
            ("GET", "/databases/db/docs?etag=abc", null, "'etag'"),
            ("GET", "/databases/db/docs?etag=-1", null, "'etag'"),
            ("GET", "/databases/db/streams/docs?etag=1e9", null, "'etag'"),
            ("GET", "/databases/db/hilo/next?tag=users&lastBatchSize=abc", null, "'lastBatchSize'"),
            ("GET", "/databases/db/hilo/next?tag=users&lastBatchSize=-5", null, "'lastBatchSize'"),
            ("GET", "/databases/db/operations/state?id=99999999999999999999", null, "'id'"),
            ("POST", "/databases/db/queries", """{"Query":"from Users","Start":1e30}""", "Start"),
            ("POST", "/databases/db/queries", """{"Query":"from Users","PageSize":"ten"}""", "PageSize"),
            ("POST", "/databases/db/queries", """{"Query":"from Users","Start":-1}""", "Start"),
        })
        {
            using var request = new HttpRequestMessage(new HttpMethod(method), url);
            if (body != null)
                request.Content = Json(body);
            var r = await s.Http.SendAsync(request);
            string text = await r.Content.ReadAsStringAsync();
            Assert.True(r.StatusCode == HttpStatusCode.BadRequest, $"{method} {url} {body}: {(int)r.StatusCode} {text}");
            Assert.Contains(name, text, StringComparison.Ordinal);
        }
        Assert.Equal(HttpStatusCode.OK, (await s.Http.PostAsync("/databases/db/queries", Json("""{"Query":"from Users","PageSize":99999999999}"""))).StatusCode);
    }
}
