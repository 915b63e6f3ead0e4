namespace RavenLite.Server.Tests.CompareExchange;

/// <summary>
/// Compare-exchange over HTTP and cluster-wide batches: index semantics, bad input refused with a 400 that changes
/// nothing, a failed cluster-wide batch writing none of its documents or values, and values surviving a restart.
/// </summary>
public sealed class CompareExchangeTests
{
    private static async Task<(HttpStatusCode Status, JsonElement Json)> Send(HttpClient http, HttpMethod method, string url, string? body = null)
    {
        var r = await http.SendAsync(new HttpRequestMessage(method, url) { Content = body == null ? null : TestServer.Json(body) });
        return (r.StatusCode, r.StatusCode == HttpStatusCode.NotFound ? default : await TestServer.ReadJson(r)); // a missing key: 404, no body
    }

    [Fact]
    public async Task Values_and_cluster_wide_batches_change_all_or_nothing()
    {
        string dir = Path.Combine(Path.GetTempPath(), "rl-cmpxchg-" + Guid.NewGuid().ToString("N"));
        try
        {
            long index;
            await using (var server = await TestServer.StartWithDatabaseAsync(dataDir: dir))
            {
                var http = server.Http;
                var (status, put) = await Send(http, HttpMethod.Put, "/databases/db/cmpxchg?key=Locks/A&index=0", """{"Object":{"Owner":"n1"}}""");
                Assert.Equal(HttpStatusCode.OK, status);
                Assert.True(put.GetProperty("Successful").GetBoolean());
                index = put.GetProperty("Index").GetInt64();

                foreach (var (url, body) in new[]
                {
                    ("/databases/db/cmpxchg?key=locks/b&index=0", """{"Owner":"no Object property"}"""),
                    ("/databases/db/cmpxchg?key=locks/b&index=0", """[1,2]"""),
                    ("/databases/db/cmpxchg?key=locks/b&index=-1", """{"Object":1}"""),
                    ("/databases/db/cmpxchg?key=locks/b", """{"Object":1}"""),
                    ("/databases/db/cmpxchg?key=" + new string('k', 600) + "&index=0", """{"Object":1}"""),
                    ("/databases/db/cmpxchg?key=rvn-atomic/users/1&index=0", """{"Object":1}"""),
                })
                {
                    var (s, e) = await Send(http, HttpMethod.Put, url, body);
                    Assert.True(s == HttpStatusCode.BadRequest, $"{url} {body} → {(int)s}: {e}");
                }
                var list = (await Send(http, HttpMethod.Get, "/databases/db/cmpxchg?startsWith=locks/")).Json.GetProperty("Results");
                Assert.Equal(1, list.GetArrayLength());
                Assert.Equal("Locks/A", list[0].GetProperty("Key").GetString());

                // Compare-exchange commands need a cluster-wide batch; a cluster-wide batch holds no PATCH.
                Assert.Equal(HttpStatusCode.BadRequest, (await Send(http, HttpMethod.Post, "/databases/db/bulk_docs",
                    """{"Commands":[{"Type":"CompareExchangePUT","Id":"locks/c","Index":0,"Document":{"Object":1}}]}""")).Status);
                Assert.Equal(HttpStatusCode.BadRequest, (await Send(http, HttpMethod.Post, "/databases/db/bulk_docs",
                    """{"TransactionMode":"ClusterWide","Commands":[{"Type":"PATCH","Id":"users/1","Patch":{"Script":"this.a=1"}}]}""")).Status);

                // A cluster-wide batch with one stale index writes nothing.
                var (failed, error) = await Send(http, HttpMethod.Post, "/databases/db/bulk_docs", """
                    {"TransactionMode":"ClusterWide","Commands":[
                      {"Type":"PUT","Id":"users/1","Document":{"Name":"x","@metadata":{"@collection":"Users"}}},
                      {"Type":"CompareExchangePUT","Id":"locks/c","Index":0,"Document":{"Object":"new"}},
                      {"Type":"CompareExchangePUT","Id":"locks/a","Index":STALE,"Document":{"Object":"stale"}}]}
                    """.Replace("STALE", (index + 100).ToString(System.Globalization.CultureInfo.InvariantCulture), StringComparison.Ordinal));
                Assert.Equal(HttpStatusCode.Conflict, failed);
                Assert.Contains("ClusterTransactionConcurrencyException", error.GetProperty("Type").GetString(), StringComparison.Ordinal);
                Assert.Contains("locks/a", error.GetProperty("Message").GetString(), StringComparison.Ordinal);
                Assert.Equal(HttpStatusCode.NotFound, (await http.GetAsync("/databases/db/docs?id=users/1")).StatusCode);
                Assert.Equal(HttpStatusCode.NotFound, (await Send(http, HttpMethod.Get, "/databases/db/cmpxchg?key=locks/c")).Status);

                var (ok, result) = await Send(http, HttpMethod.Post, "/databases/db/bulk_docs", """
                    {"TransactionMode":"ClusterWide","Commands":[
                      {"Type":"PUT","Id":"users/1","Document":{"Name":"x","@metadata":{"@collection":"Users"}}},
                      {"Type":"CompareExchangePUT","Id":"locks/a","Index":INDEX,"Document":{"Object":"taken"}}]}
                    """.Replace("INDEX", index.ToString(System.Globalization.CultureInfo.InvariantCulture), StringComparison.Ordinal));
                Assert.Equal(HttpStatusCode.Created, ok);
                long tx = result.GetProperty("TransactionIndex").GetInt64();
                Assert.True(tx > index);
                Assert.Equal(tx, result.GetProperty("Results")[1].GetProperty("Index").GetInt64());
                // The document got an atomic guard at the transaction's index.
                var guard = (await Send(http, HttpMethod.Get, "/databases/db/cmpxchg?key=rvn-atomic/users/1")).Json.GetProperty("Results");
                Assert.Equal(tx, guard[0].GetProperty("Index").GetInt64());
                index = tx;
            }
            await using (var server = await TestServer.StartAsync(dir))
            {
                var (_, json) = await Send(server.Http, HttpMethod.Get, "/databases/db/cmpxchg?key=locks/a");
                Assert.Equal(index, json.GetProperty("Results")[0].GetProperty("Index").GetInt64());
                Assert.Equal("taken", json.GetProperty("Results")[0].GetProperty("Value").GetProperty("Object").GetString());
                var (deleted, d) = await Send(server.Http, HttpMethod.Delete, $"/databases/db/cmpxchg?key=locks/a&index={index}");
                Assert.Equal(HttpStatusCode.OK, deleted);
                Assert.True(d.GetProperty("Successful").GetBoolean());
                // Deleting the document drops its atomic guard.
                Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync("/databases/db/docs?id=users/1")).StatusCode);
                Assert.Equal(0, (await Send(server.Http, HttpMethod.Get, "/databases/db/cmpxchg?startsWith=")).Json.GetProperty("Results").GetArrayLength());
            }
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }

    [Fact]
    public async Task Values_past_their_expiry_are_deleted()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        string past = DateTime.UtcNow.AddMinutes(-1).ToString("o", System.Globalization.CultureInfo.InvariantCulture);
        string future = DateTime.UtcNow.AddHours(1).ToString("o", System.Globalization.CultureInfo.InvariantCulture);
        Assert.Equal(HttpStatusCode.OK, (await Send(http, HttpMethod.Put, "/databases/db/cmpxchg?key=locks/old&index=0", """{"Object":1,"@metadata":{"@expires":"PAST"}}""".Replace("PAST", past, StringComparison.Ordinal))).Status);
        Assert.Equal(HttpStatusCode.OK, (await Send(http, HttpMethod.Put, "/databases/db/cmpxchg?key=locks/new&index=0", """{"Object":2,"@metadata":{"@expires":"FUTURE"}}""".Replace("FUTURE", future, StringComparison.Ordinal))).Status);
        // A value whose expiry was removed by an update stays.
        var (_, put) = await Send(http, HttpMethod.Put, "/databases/db/cmpxchg?key=locks/kept&index=0", """{"Object":3,"@metadata":{"@expires":"PAST"}}""".Replace("PAST", past, StringComparison.Ordinal));
        Assert.Equal(HttpStatusCode.OK, (await Send(http, HttpMethod.Put, $"/databases/db/cmpxchg?key=locks/kept&index={put.GetProperty("Index").GetInt64()}", """{"Object":4}""")).Status);
        Assert.Equal(HttpStatusCode.OK, (await http.PostAsync("/databases/db/admin/expiration/config", TestServer.Json("""{"Disabled":false,"DeleteFrequencyInSec":1}"""))).StatusCode);
        for (int i = 0; i < 100 && (await Send(http, HttpMethod.Get, "/databases/db/cmpxchg?key=locks/old")).Status != HttpStatusCode.NotFound; i++)
            await Task.Delay(100);
        var left = (await Send(http, HttpMethod.Get, "/databases/db/cmpxchg?startsWith=locks/")).Json.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Key").GetString()).ToList();
        Assert.Equal(["locks/kept", "locks/new"], left);
    }
}
