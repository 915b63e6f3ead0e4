namespace RavenLite.Server.Tests.Documents;

/// <summary>Identities over HTTP: concurrent next values are all distinct, seeds only raise unless forced, bad input is a 400, values survive a restart and are shared with <c>prefix|</c> ids.</summary>
public sealed class IdentitiesTests
{
    private static async Task<long> Post(HttpClient http, string url, string field)
    {
        var r = await http.PostAsync(url, null);
        var json = await TestServer.ReadJson(r);
        Assert.True(r.StatusCode == HttpStatusCode.OK, $"{url} → {(int)r.StatusCode}: {json}");
        return json.GetProperty(field).GetInt64();
    }

    [Fact]
    public async Task Identities_are_distinct_durable_and_shared_with_pipe_ids()
    {
        string dir = Path.Combine(Path.GetTempPath(), "rl-identities-" + Guid.NewGuid().ToString("N"));
        try
        {
            await using (var server = await TestServer.StartWithDatabaseAsync(dataDir: dir))
            {
                var http = server.Http;
                var values = await Task.WhenAll(Enumerable.Range(0, 100).Select(_ => Post(http, "/databases/db/identity/next?name=orders", "NewIdentityValue")));
                Assert.Equal(Enumerable.Range(1, 100).Select(i => (long)i), values.Order());
                Assert.Equal(100, await Post(http, "/databases/db/identity/seed?name=orders&value=50", "NewSeedValue"));
                Assert.Equal(500, await Post(http, "/databases/db/identity/seed?name=Orders&value=500", "NewSeedValue"));
                foreach (string bad in new[] { "/databases/db/identity/seed?name=orders&value=-1", "/databases/db/identity/seed?name=orders", "/databases/db/identity/next?name=", "/databases/db/identity/next?name=%7C" })
                    Assert.Equal(HttpStatusCode.BadRequest, (await http.PostAsync(bad, null)).StatusCode);
                var put = await TestServer.ReadJson(await http.PutAsync("/databases/db/docs?id=orders%7C", TestServer.Json("""{"@metadata":{"@collection":"Orders"}}""")));
                Assert.Equal("orders/501", put.GetProperty("Id").GetString());
            }
            await using (var server = await TestServer.StartAsync(dir))
            {
                var list = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/debug/identities"));
                Assert.Equal(501, list.GetProperty("orders|").GetInt64());
                Assert.Equal(502, await Post(server.Http, "/databases/db/identity/next?name=orders", "NewIdentityValue"));
                Assert.Equal(7, await Post(server.Http, "/databases/db/identity/seed?name=orders&value=7&force=true", "NewSeedValue"));
            }
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }
}
