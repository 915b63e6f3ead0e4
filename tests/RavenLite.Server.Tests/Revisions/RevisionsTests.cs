namespace RavenLite.Server.Tests.Revisions;

/// <summary>
/// Revisions over HTTP: a bad configuration is a 400 that changes nothing; revisions are made per change and trimmed to
/// the configured count; a document and its revision change in one transaction (a failed batch leaves neither); the
/// configuration and revisions survive a restart; purge on delete removes them.
/// </summary>
public sealed class RevisionsTests
{
    private static Task<HttpResponseMessage> Put(HttpClient http, string id, string json) =>
        http.PutAsync($"/databases/db/docs?id={id}", TestServer.Json(json));

    private static async Task<long> Count(HttpClient http, string id) =>
        (await TestServer.ReadJson(await http.GetAsync($"/databases/db/revisions/count?id={id}"))).GetProperty("RevisionsCount").GetInt64();

    [Fact]
    public async Task Revisions_follow_the_configuration_and_the_transaction()
    {
        string dir = Path.Combine(Path.GetTempPath(), "rl-revisions-" + Guid.NewGuid().ToString("N"));
        try
        {
            await using (var server = await TestServer.StartWithDatabaseAsync(dataDir: dir))
            {
                var http = server.Http;
                foreach (string bad in new[]
                {
                    """{"Default":{"MinimumRevisionsToKeep":-1}}""",
                    """{"Default":{"MinimumRevisionAgeToKeep":"soon"}}""",
                    """{"Collections":[1]}""",
                    """{"Default":{"Disabled":"no"}}""",
                })
                    Assert.Equal(HttpStatusCode.BadRequest, (await http.PostAsync("/databases/db/admin/revisions/config", TestServer.Json(bad))).StatusCode);
                Assert.Equal(JsonValueKind.Null, (await TestServer.ReadJson(await http.GetAsync("/databases/db/revisions/config"))).ValueKind);

                Assert.Equal(HttpStatusCode.OK, (await http.PostAsync("/databases/db/admin/revisions/config", TestServer.Json(
                    """{"Default":{"Disabled":false,"MinimumRevisionsToKeep":2},"Collections":{"Temps":{"Disabled":false,"PurgeOnDelete":true}}}"""))).StatusCode);
                for (int i = 1; i <= 4; i++)
                    Assert.Equal(HttpStatusCode.Created, (await Put(http, "users/1", """{"V":N,"@metadata":{"@collection":"Users"}}""".Replace("N", i.ToString(System.Globalization.CultureInfo.InvariantCulture), StringComparison.Ordinal))).StatusCode);
                Assert.Equal(2, await Count(http, "users/1"));

                // A batch that fails (a stale change vector) writes neither the document nor a revision.
                var failed = await http.PostAsync("/databases/db/bulk_docs", TestServer.Json("""
                    {"Commands":[{"Type":"PUT","Id":"users/1","Document":{"V":5,"@metadata":{"@collection":"Users"}}},
                                 {"Type":"PUT","Id":"users/2","ChangeVector":"A:1-stale","Document":{"@metadata":{"@collection":"Users"}}}]}
                    """));
                Assert.Equal(HttpStatusCode.Conflict, failed.StatusCode);
                Assert.Equal(2, await Count(http, "users/1"));
                var newest = (await TestServer.ReadJson(await http.GetAsync("/databases/db/revisions?id=users/1&pageSize=1"))).GetProperty("Results")[0];
                Assert.Equal(4, newest.GetProperty("V").GetInt32());

                Assert.Equal(HttpStatusCode.Created, (await Put(http, "temps/1", """{"@metadata":{"@collection":"Temps"}}""")).StatusCode);
                Assert.Equal(1, await Count(http, "temps/1"));
            }
            await using (var server = await TestServer.StartAsync(dir))
            {
                var http = server.Http;
                Assert.Equal(2, (await TestServer.ReadJson(await http.GetAsync("/databases/db/revisions/config"))).GetProperty("Default").GetProperty("MinimumRevisionsToKeep").GetInt64());
                Assert.Equal(HttpStatusCode.Created, (await Put(http, "users/1", """{"V":6,"@metadata":{"@collection":"Users"}}""")).StatusCode);
                Assert.Equal(2, await Count(http, "users/1")); // the configuration survived: still trimmed to two
                Assert.Equal(HttpStatusCode.NoContent, (await http.DeleteAsync("/databases/db/docs?id=temps/1")).StatusCode);
                Assert.Equal(0, await Count(http, "temps/1"));
                Assert.Equal(HttpStatusCode.NoContent, (await http.DeleteAsync("/databases/db/docs?id=users/1")).StatusCode);
                Assert.Equal(3, await Count(http, "users/1")); // the deletion is a revision (count trimming applies on writes, not deletes)
                var bin = (await TestServer.ReadJson(await http.GetAsync("/databases/db/revisions/bin"))).GetProperty("Results");
                Assert.Equal("users/1", bin[0].GetProperty("@metadata").GetProperty("@id").GetString());
                // Recreating the document takes it out of the bin.
                Assert.Equal(HttpStatusCode.Created, (await Put(http, "users/1", """{"V":7,"@metadata":{"@collection":"Users"}}""")).StatusCode);
                Assert.Equal(0, (await TestServer.ReadJson(await http.GetAsync("/databases/db/revisions/bin"))).GetProperty("Results").GetArrayLength());
            }
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }
}
