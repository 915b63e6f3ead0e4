using System.Net.Http.Headers;
using System.Security.Cryptography;

namespace RavenLite.Server.Tests.Attachments;

/// <summary>
/// Attachments over HTTP: contents of several chunks read back whole and by byte ranges, identical content stored once
/// and freed with its last reference, bad input refused with a clear 4xx that stores nothing, durability across a
/// restart, and an upload cut short by SIGKILL leaving nothing behind once the database reopens.
/// </summary>
public sealed class AttachmentsTests
{
    private static async Task<JsonElement> Stats(HttpClient http) => await TestServer.ReadJson(await http.GetAsync("/databases/db/stats"));

    private static async Task<long> ContentEntries(HttpClient http, string db = "db")
    {
        var layout = await TestServer.ReadJson(await http.GetAsync($"/studio-api/storage?database={db}"));
        return layout.GetProperty("Trees").EnumerateArray()
            .Where(t => t.GetProperty("Name").GetString() is "AttachmentContent" or "AttachmentUploads").Sum(t => t.GetProperty("Entries").GetInt64());
    }

    private static ByteArrayContent Bytes(byte[] data) => new(data);

    // Kept whole: one document's attachments through upload, dedupe, ranges and refusals; each step depends on
    // what the previous stored.
    [Fact]
    public async Task Attachments_stream_dedupe_serve_ranges_and_refuse_bad_input()
    {
        string dir = Path.Combine(Path.GetTempPath(), "rl-attach-" + Guid.NewGuid().ToString("N"));
        var big = new byte[9 * 1024 * 1024 + 77]; // three chunks
        new Random(7).NextBytes(big);
        try
        {
            await using (var server = await TestServer.StartWithDatabaseAsync(dataDir: dir, configure: o => o.MaxAttachmentBytes = 10 * 1024 * 1024))
            {
                var http = server.Http;
                foreach (string id in new[] { "users/1", "users/2" })
                    Assert.Equal(HttpStatusCode.Created, (await http.PutAsync($"/databases/db/docs?id={id}", TestServer.Json("""{"Name":"x","@metadata":{"@collection":"Users"}}"""))).StatusCode);

                var put = await http.PutAsync("/databases/db/attachments?id=users/1&name=big.bin&contentType=application/x-big", Bytes(big));
                var details = await TestServer.ReadJson(put);
                Assert.Equal(HttpStatusCode.Created, put.StatusCode);
                Assert.Equal(Convert.ToBase64String(SHA256.HashData(big)), details.GetProperty("Hash").GetString());
                Assert.Equal(big.Length, details.GetProperty("Size").GetInt64());
                Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/attachments?id=users/2&name=same.bin", Bytes(big))).StatusCode);
                var stats = await Stats(http);
                Assert.Equal(2, stats.GetProperty("CountOfAttachments").GetInt64());
                Assert.Equal(1, stats.GetProperty("CountOfUniqueAttachments").GetInt64());

                var get = await http.GetAsync("/databases/db/attachments?id=users/1&name=BIG.BIN");
                Assert.Equal(HttpStatusCode.OK, get.StatusCode);
                Assert.Equal("application/x-big", get.Content.Headers.ContentType!.MediaType);
                Assert.Equal(big, await get.Content.ReadAsByteArrayAsync());

                // Byte ranges, one crossing a chunk boundary.
                long from = 4 * 1024 * 1024 - 10;
                var req = new HttpRequestMessage(HttpMethod.Get, "/databases/db/attachments?id=users/1&name=big.bin");
                req.Headers.Range = new RangeHeaderValue(from, from + 99);
                var part = await http.SendAsync(req);
                Assert.Equal(HttpStatusCode.PartialContent, part.StatusCode);
                Assert.Equal(big.AsSpan((int)from, 100).ToArray(), await part.Content.ReadAsByteArrayAsync());
                Assert.Equal($"bytes {from}-{from + 99}/{big.Length}", part.Content.Headers.ContentRange!.ToString());
                req = new HttpRequestMessage(HttpMethod.Get, "/databases/db/attachments?id=users/1&name=big.bin");
                req.Headers.Range = new RangeHeaderValue(null, 5);
                Assert.Equal(big.AsSpan(big.Length - 5).ToArray(), await (await http.SendAsync(req)).Content.ReadAsByteArrayAsync());
                req = new HttpRequestMessage(HttpMethod.Get, "/databases/db/attachments?id=users/1&name=big.bin");
                req.Headers.Range = new RangeHeaderValue(big.Length + 10, null);
                Assert.Equal(HttpStatusCode.RequestedRangeNotSatisfiable, (await http.SendAsync(req)).StatusCode);

                // Bad input: clear 4xx, nothing stored.
                long entries = await ContentEntries(http);
                var missingDoc = await http.PutAsync("/databases/db/attachments?id=users/404&name=a", Bytes(big));
                Assert.Equal(HttpStatusCode.BadRequest, missingDoc.StatusCode);
                Assert.Contains("DocumentDoesNotExistException", (await TestServer.ReadJson(missingDoc)).GetProperty("Type").GetString(), StringComparison.Ordinal);
                Assert.Equal(HttpStatusCode.BadRequest, (await http.PutAsync("/databases/db/attachments?id=users/1&name=", Bytes([1]))).StatusCode);
                Assert.Equal(HttpStatusCode.RequestEntityTooLarge, (await http.PutAsync("/databases/db/attachments?id=users/1&name=huge", Bytes(new byte[11 * 1024 * 1024]))).StatusCode);
                var wrongCv = new HttpRequestMessage(HttpMethod.Put, "/databases/db/attachments?id=users/1&name=x") { Content = Bytes([1, 2, 3]) };
                wrongCv.Headers.TryAddWithoutValidation("If-Match", "\"A:1-nope\"");
                Assert.Equal(HttpStatusCode.Conflict, (await http.SendAsync(wrongCv)).StatusCode);
                Assert.Equal(entries, await ContentEntries(http));
                Assert.Equal(2, (await Stats(http)).GetProperty("CountOfAttachments").GetInt64());

                // Batch commands: copy and rename in one transaction; a copy of a missing attachment fails the whole batch.
                var bad = await http.PostAsync("/databases/db/bulk_docs", TestServer.Json("""
                    {"Commands":[{"Type":"AttachmentCOPY","Id":"users/1","Name":"big.bin","DestinationId":"users/2","DestinationName":"c.bin"},
                                 {"Type":"AttachmentCOPY","Id":"users/1","Name":"nope","DestinationId":"users/2","DestinationName":"d.bin"}]}
                    """));
                Assert.Equal(HttpStatusCode.BadRequest, bad.StatusCode);
                Assert.Equal(2, (await Stats(http)).GetProperty("CountOfAttachments").GetInt64());
                var ok = await http.PostAsync("/databases/db/bulk_docs", TestServer.Json("""
                    {"Commands":[{"Type":"AttachmentCOPY","Id":"users/1","Name":"big.bin","DestinationId":"users/2","DestinationName":"c.bin"},
                                 {"Type":"AttachmentMOVE","Id":"users/2","Name":"same.bin","DestinationId":"users/2","DestinationName":"renamed.bin"}]}
                    """));
                Assert.Equal(HttpStatusCode.Created, ok.StatusCode);
                var meta = (await TestServer.ReadJson(await http.GetAsync("/databases/db/docs?id=users/2"))).GetProperty("Results")[0].GetProperty("@metadata");
                Assert.Equal(["c.bin", "renamed.bin"], meta.GetProperty("@attachments").EnumerateArray().Select(a => a.GetProperty("Name").GetString()!).ToArray());
                Assert.Equal(3, (await Stats(http)).GetProperty("CountOfAttachments").GetInt64());
                Assert.Equal(1, (await Stats(http)).GetProperty("CountOfUniqueAttachments").GetInt64());
            }
            await using (var server = await TestServer.StartAsync(dir))
            {
                var http = server.Http;
                Assert.Equal(big, await (await http.GetAsync("/databases/db/attachments?id=users/2&name=renamed.bin")).Content.ReadAsByteArrayAsync());
                // The content lives while any attachment refers to it, and goes with the last one.
                Assert.Equal(HttpStatusCode.NoContent, (await http.DeleteAsync("/databases/db/attachments?id=users/1&name=big.bin")).StatusCode);
                Assert.Equal(HttpStatusCode.NoContent, (await http.DeleteAsync("/databases/db/docs?id=users/2")).StatusCode);
                var stats = await Stats(http);
                Assert.Equal(0, stats.GetProperty("CountOfAttachments").GetInt64());
                Assert.Equal(0, stats.GetProperty("CountOfUniqueAttachments").GetInt64());
                Assert.Equal(0, await ContentEntries(http));
                Assert.Equal(HttpStatusCode.NotFound, (await http.GetAsync("/databases/db/attachments?id=users/1&name=big.bin")).StatusCode);
            }
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }

    [Fact]
    public async Task An_upload_cut_short_by_sigkill_leaves_nothing_once_the_database_reopens()
    {
        using var dir = new TempDirectory("ravenlite-attach-crash");
        using (var server = await ServerProcess.StartAsync(dir.Path))
        {
            using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(30) };
            Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/admin/databases?name=db", TestServer.Json(""))).StatusCode);
            Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/docs?id=users/1", TestServer.Json("""{"@metadata":{"@collection":"Users"}}"""))).StatusCode);
            using var raw = await RawHttp.ConnectAsync(server.Url);
            await raw.SendAsync("PUT /databases/db/attachments?id=users/1&name=partial HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n");
            var data = new byte[1 << 20];
            for (int i = 0; i < 9; i++) // 9 MiB: two chunks staged, the upload never ends
                await raw.ChunkAsync(data);
            for (int i = 0; i < 100 && await ContentEntries(http) < 2; i++)
                await Task.Delay(50);
            Assert.True(await ContentEntries(http) >= 2, "the upload's first chunks were never staged");
            server.Kill();
        }
        using (var server = await ServerProcess.StartAsync(dir.Path))
        {
            using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(30) };
            Assert.Equal(0, await ContentEntries(http));
            var meta = (await TestServer.ReadJson(await http.GetAsync("/databases/db/docs?id=users/1"))).GetProperty("Results")[0].GetProperty("@metadata");
            Assert.False(meta.TryGetProperty("@attachments", out _));
        }
    }
}
