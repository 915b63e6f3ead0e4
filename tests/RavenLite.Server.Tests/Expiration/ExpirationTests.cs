namespace RavenLite.Server.Tests.Expiration;

/// <summary>
/// Expiration over HTTP: a bad configuration is a 400; expiry times written before a restart (and before the task is
/// configured) are honoured after it; an update that drops @expires or a delete leaves no stale entry behind.
/// </summary>
public sealed class ExpirationTests
{
    [Fact]
    public async Task Expiry_times_survive_a_restart_and_follow_updates()
    {
        string dir = Path.Combine(Path.GetTempPath(), "rl-expire-" + Guid.NewGuid().ToString("N"));
        string past = DateTime.UtcNow.AddMinutes(-5).ToString("o", System.Globalization.CultureInfo.InvariantCulture);
        try
        {
            await using (var server = await TestServer.StartWithDatabaseAsync(dataDir: dir))
            {
                var http = server.Http;
                foreach (string bad in new[] { """{"Disabled":"yes"}""", """{"DeleteFrequencyInSec":0}""", """{"DeleteFrequencyInSec":"1"}""", "[]" })
                    Assert.Equal(HttpStatusCode.BadRequest, (await http.PostAsync("/databases/db/admin/expiration/config", TestServer.Json(bad))).StatusCode);
                foreach (string id in new[] { "a/1", "a/2", "a/3" })
                    Assert.Equal(HttpStatusCode.Created, (await http.PutAsync($"/databases/db/docs?id={id}",
                        TestServer.Json("""{"@metadata":{"@collection":"A","@expires":"PAST"}}""".Replace("PAST", past, StringComparison.Ordinal)))).StatusCode);
                // a/2 is updated without @expires, a/3 deleted: neither leaves an entry for the task.
                Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/docs?id=a/2", TestServer.Json("""{"@metadata":{"@collection":"A"}}"""))).StatusCode);
                Assert.Equal(HttpStatusCode.NoContent, (await http.DeleteAsync("/databases/db/docs?id=a/3")).StatusCode);
                var trees = (await TestServer.ReadJson(await http.GetAsync("/studio-api/storage?database=db"))).GetProperty("Trees").EnumerateArray();
                Assert.Equal(1, trees.Single(t => t.GetProperty("Name").GetString() == "Expires").GetProperty("Entries").GetInt64());
            }
            await using (var server = await TestServer.StartAsync(dir))
            {
                var http = server.Http;
                Assert.Equal(HttpStatusCode.OK, (await http.PostAsync("/databases/db/admin/expiration/config", TestServer.Json("""{"Disabled":false,"DeleteFrequencyInSec":1}"""))).StatusCode);
                for (int i = 0; i < 100 && (await http.GetAsync("/databases/db/docs?id=a/1")).StatusCode == HttpStatusCode.OK; i++)
                    await Task.Delay(100);
                Assert.Equal(HttpStatusCode.NotFound, (await http.GetAsync("/databases/db/docs?id=a/1")).StatusCode);
                Assert.Equal(HttpStatusCode.OK, (await http.GetAsync("/databases/db/docs?id=a/2")).StatusCode);
                Assert.Equal(1, (await TestServer.ReadJson(await http.GetAsync("/databases/db/expiration/config"))).GetProperty("DeleteFrequencyInSec").GetInt64());
            }
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }
}
