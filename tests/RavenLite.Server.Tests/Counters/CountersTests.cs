namespace RavenLite.Server.Tests.Counters;

/// <summary>
/// Counters over HTTP (POST/GET /counters, the bulk_docs Counters command): values, @counters and @flags kept in
/// step with the document, bad input refused with a 400 that changes nothing, deletes cascading, durability across
/// a restart, and a client's stale @counters/@flags never overriding the server's.
/// </summary>
public sealed class CountersTests
{
    private static async Task<JsonElement> Post(HttpClient http, string url, string body, HttpStatusCode expect)
    {
        var r = await http.PostAsync(url, TestServer.Json(body));
        var json = await TestServer.ReadJson(r);
        Assert.True(r.StatusCode == expect, $"POST {url} → {(int)r.StatusCode}: {json}");
        return json;
    }

    private static async Task<JsonElement> Metadata(HttpClient http, string id) =>
        (await TestServer.ReadJson(await http.GetAsync($"/databases/db/docs?id={id}"))).GetProperty("Results")[0].GetProperty("@metadata");

    private static async Task<long?> Value(HttpClient http, string id, string name)
    {
        var c = (await TestServer.ReadJson(await http.GetAsync($"/databases/db/counters?docId={id}&counter={name}"))).GetProperty("Counters");
        return c.GetArrayLength() == 0 || c[0].ValueKind == JsonValueKind.Null ? null : c[0].GetProperty("TotalValue").GetInt64();
    }

    [Fact]
    public async Task Counters_change_with_their_document_and_bad_input_changes_nothing()
    {
        string dir = Path.Combine(Path.GetTempPath(), "rl-counters-" + Guid.NewGuid().ToString("N"));
        try
        {
            await using (var server = await TestServer.StartWithDatabaseAsync(dataDir: dir))
            {
                var http = server.Http;
                Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/docs?id=users/1", TestServer.Json("""{"Name":"Ann","@metadata":{"@collection":"Users"}}"""))).StatusCode);
                string cv0 = (await Metadata(http, "users/1")).GetProperty("@change-vector").GetString()!;
                var r = await Post(http, "/databases/db/counters", """{"Documents":[{"DocumentId":"users/1","Operations":[{"Type":"Increment","CounterName":"Likes","Delta":5},{"Type":"Increment","CounterName":"likes","Delta":2}]}]}""", HttpStatusCode.OK);
                Assert.Equal(7, r.GetProperty("Counters")[1].GetProperty("TotalValue").GetInt64());
                var meta = await Metadata(http, "users/1");
                Assert.Equal("HasCounters", meta.GetProperty("@flags").GetString());
                Assert.Equal("Likes", meta.GetProperty("@counters")[0].GetString());
                string cv1 = meta.GetProperty("@change-vector").GetString()!;
                Assert.NotEqual(cv0, cv1); // a new counter name changes the document

                // An increment of an existing counter leaves the document as it is.
                await Post(http, "/databases/db/counters", """{"Documents":[{"DocumentId":"users/1","Operations":[{"Type":"Increment","CounterName":"Likes","Delta":-10}]}]}""", HttpStatusCode.OK);
                Assert.Equal(cv1, (await Metadata(http, "users/1")).GetProperty("@change-vector").GetString());
                Assert.Equal(-3, await Value(http, "users/1", "Likes"));

                // Bad input: 400s, nothing changes.
                foreach (string bad in new[]
                {
                    """{"Documents":[{"DocumentId":"users/1","Operations":[{"Type":"Increment","CounterName":"Likes","Delta":1.5}]}]}""",
                    """{"Documents":[{"DocumentId":"users/1","Operations":[{"Type":"Increment","CounterName":"Likes","Delta":"2"}]}]}""",
                    """{"Documents":[{"DocumentId":"users/1","Operations":[{"Type":"Multiply","CounterName":"Likes","Delta":2}]}]}""",
                    """{"Documents":[{"DocumentId":"users/1","Operations":[{"Type":"Increment","CounterName":"","Delta":2}]}]}""",
                    """{"Documents":[{"DocumentId":"users/1","Operations":[{"Type":"Increment","CounterName":"Likes","Delta":1},{"Type":"Put","CounterName":"Big","Delta":9223372036854775807},{"Type":"Increment","CounterName":"Big","Delta":1}]}]}""",
                    """{"Documents":[{"DocumentId":"users/1","Operations":[{"Type":"Increment","CounterName":"Likes","Delta":1}]},{"DocumentId":"users/2","Operations":[{"Type":"Increment","CounterName":"Likes"}]}]}""",
                    """{"Nope":[]}""",
                })
                {
                    var e = await Post(http, "/databases/db/counters", bad, HttpStatusCode.BadRequest);
                    Assert.False(string.IsNullOrEmpty(e.GetProperty("Message").GetString()));
                }
                Assert.Equal(-3, await Value(http, "users/1", "Likes"));
                Assert.Null(await Value(http, "users/1", "Big"));

                // A client writing back the document with stale server metadata does not change the counters list.
                Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/docs?id=users/1",
                    TestServer.Json("""{"Name":"Ann B","@metadata":{"@collection":"Users","@flags":"HasAttachments","@counters":["Other"]}}"""))).StatusCode);
                meta = await Metadata(http, "users/1");
                Assert.Equal("HasCounters", meta.GetProperty("@flags").GetString());
                Assert.Equal(["Likes"], meta.GetProperty("@counters").EnumerateArray().Select(e => e.GetString()!).ToArray());

                // bulk_docs Counters command, with the document's new change vector in the answer.
                var batch = await Post(http, "/databases/db/bulk_docs", """{"Commands":[{"Type":"Counters","Id":"users/1","Counters":{"DocumentId":"users/1","Operations":[{"Type":"Increment","CounterName":"Views","Delta":4},{"Type":"Delete","CounterName":"Likes"}]}}]}""", HttpStatusCode.Created);
                var result = batch.GetProperty("Results")[0];
                Assert.Equal("Counters", result.GetProperty("Type").GetString());
                Assert.Equal(4, result.GetProperty("CountersDetail").GetProperty("Counters")[0].GetProperty("TotalValue").GetInt64());
                meta = await Metadata(http, "users/1");
                Assert.Equal(result.GetProperty("DocumentChangeVector").GetString(), meta.GetProperty("@change-vector").GetString());
                Assert.Equal(["Views"], meta.GetProperty("@counters").EnumerateArray().Select(e => e.GetString()!).ToArray());
                Assert.Equal(1, (await TestServer.ReadJson(await http.GetAsync("/databases/db/stats"))).GetProperty("CountOfCounterEntries").GetInt64());
            }
            await using (var server = await TestServer.StartAsync(dir))
            {
                // Durable: the acknowledged values survive a restart.
                var http = server.Http;
                Assert.Equal(4, await Value(http, "users/1", "Views"));
                var all = (await TestServer.ReadJson(await http.GetAsync("/databases/db/counters?docId=users/1&full=true"))).GetProperty("Counters");
                Assert.Equal(1, all.GetArrayLength());
                Assert.Equal(JsonValueKind.Object, all[0].GetProperty("CounterValues").ValueKind);

                // Deleting the last counter removes @counters and @flags; deleting the document removes its counters.
                await Post(http, "/databases/db/counters", """{"Documents":[{"DocumentId":"users/1","Operations":[{"Type":"Delete","CounterName":"Views"},{"Type":"Increment","CounterName":"Again"}]}]}""", HttpStatusCode.OK);
                Assert.Equal(HttpStatusCode.NoContent, (await http.DeleteAsync("/databases/db/docs?id=users/1")).StatusCode);
                Assert.Equal(0, (await TestServer.ReadJson(await http.GetAsync("/databases/db/stats"))).GetProperty("CountOfCounterEntries").GetInt64());
                Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/docs?id=users/1", TestServer.Json("""{"Name":"new","@metadata":{"@collection":"Users"}}"""))).StatusCode);
                var meta = await Metadata(http, "users/1");
                Assert.False(meta.TryGetProperty("@flags", out _));
                Assert.Null(await Value(http, "users/1", "Again"));
            }
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }
}
