namespace RavenLite.Server.Tests.Databases;

/// <summary>
/// Page checksums through the server: a document whose data-file page was damaged while the server was
/// down is never served; the read gets an error naming the file, the page and how to recover, and /readyz says the
/// database is damaged.
/// </summary>
public sealed class PageChecksumServerTests(ITestOutputHelper output)
{
    [Fact]
    public async Task A_damaged_page_is_refused_not_served_and_readyz_says_so()
    {
        using var dir = new TempDirectory("ravenlite-damaged");
        string marker = "marker-" + Guid.NewGuid().ToString("N");
        string body = $$$"""{"Name":"{{{marker}}}","Text":"{{{new string('x', 30_000)}}}","@metadata":{"@collection":"Notes"}}""";
        await using (var s = await TestServer.StartWithDatabaseAsync("db", dataDir: dir.Path))
        {
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/docs?id=notes/damaged", TestServer.Json(body))).StatusCode);
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/docs?id=notes/fine", TestServer.Json("""{"Name":"fine"}"""))).StatusCode);
        }

        // One bit of the document's text, in the data file (the value's overflow run).
        string data = Path.Combine(dir.Path, "Databases", "db", "storage", "data");
        byte[] bytes = await File.ReadAllBytesAsync(data);
        int at = bytes.AsSpan().IndexOf(Encoding.UTF8.GetBytes(marker));
        Assert.True(at > 0, "the document's text is in the data file");
        Assert.Equal(-1, bytes.AsSpan(at + 1).IndexOf(Encoding.UTF8.GetBytes(marker)));
        await using (var f = File.OpenWrite(data))
        {
            f.Position = at + 10;
            f.WriteByte((byte)(bytes[at + 10] ^ 0x01));
        }

        await using (var s = await TestServer.StartAsync(dir.Path))
        {
            var r = await s.Http.GetAsync("/databases/db/docs?id=notes/damaged");
            string text = await r.Content.ReadAsStringAsync();
            output.WriteLine($"{(int)r.StatusCode}: {text[..Math.Min(text.Length, 600)]}");
            Assert.Equal(HttpStatusCode.InternalServerError, r.StatusCode);
            Assert.DoesNotContain(marker[..20], text, StringComparison.Ordinal);
            Assert.Contains("is damaged", text, StringComparison.Ordinal);
            Assert.Contains("restore the database from a backup", text, StringComparison.Ordinal);
            var ready = await s.Http.GetAsync("/readyz");
            string readyText = await ready.Content.ReadAsStringAsync();
            output.WriteLine("/readyz: " + readyText);
            Assert.Equal(HttpStatusCode.ServiceUnavailable, ready.StatusCode);
            Assert.Contains("Database 'db' is damaged", readyText, StringComparison.Ordinal);
        }
    }
}
