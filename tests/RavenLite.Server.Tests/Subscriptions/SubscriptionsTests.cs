using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Subscriptions;

/// <summary>
/// Subscriptions over HTTP: create, list, state, try, update, toggle, delete, /info/tcp; bad definitions (no query,
/// bad RQL, a collection with no documents, an index source, order by, a taken name) are 400s that create nothing;
/// a subscription survives a restart with its position.
/// </summary>
public sealed class SubscriptionsTests
{
    [Fact]
    public async Task Definitions_are_checked_kept_and_listed()
    {
        using var dir = new RavenLite.TestKit.TempDirectory("rl-subs");
        await using (var s = await StartWithDatabaseAsync(dataDir: dir.Path))
        {
            for (int i = 1; i <= 5; i++)
                Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync($"/databases/db/docs?id=orders/{i}", Json("{\"Freight\":" + (i * 10) + ",\"@metadata\":{\"@collection\":\"Orders\"}}"))).StatusCode);
            foreach (string bad in new[]
            {
                """{"Name":"x"}""",
                """{"Name":"x","Query":"from Orders where"}""",
                """{"Name":"x","Query":"from index 'Orders/All'"}""",
                """{"Name":"x","Query":"from Orders order by Freight"}""",
                """{"Name":"x","Query":"from Orders where search(Name, 'a')"}""",
                """{"Name":"x","Query":"from Orders","ChangeVector":"yesterday"}""",
            })
            {
                var r = await s.Http.PutAsync("/databases/db/subscriptions", Json(bad));
                Assert.True(r.StatusCode == HttpStatusCode.BadRequest, bad + " → " + r.StatusCode + " " + await r.Content.ReadAsStringAsync());
            }
            Assert.Equal(0, (await ReadJson(await s.Http.GetAsync("/databases/db/subscriptions"))).GetProperty("Results").GetArrayLength());

            var created = await s.Http.PutAsync("/databases/db/subscriptions", Json("""{"Name":"Big","Query":"from Orders where Freight > 25"}"""));
            Assert.Equal(HttpStatusCode.Created, created.StatusCode);
            Assert.Equal("Big", (await ReadJson(created)).GetProperty("Name").GetString());
            Assert.Equal(HttpStatusCode.BadRequest, (await s.Http.PutAsync("/databases/db/subscriptions", Json("""{"Name":"big","Query":"from Orders"}"""))).StatusCode);
            var unnamed = await ReadJson(await s.Http.PutAsync("/databases/db/subscriptions", Json("""{"Query":"from Orders","ChangeVector":"LastDocument"}""")));
            string generated = unnamed.GetProperty("Name").GetString()!;

            var tried = await ReadJson(await s.Http.PostAsync("/databases/db/subscriptions/try?pageSize=2", Json("""{"Query":"from Orders where Freight > 25 select Freight"}""")));
            Assert.Equal([30, 40], tried.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Freight").GetInt32()));

            var state = await ReadJson(await s.Http.GetAsync("/databases/db/subscriptions/state?name=Big"));
            Assert.Equal("from Orders where Freight > 25", state.GetProperty("Query").GetString());
            Assert.Equal(JsonValueKind.Null, state.GetProperty("ChangeVectorForNextBatchStartingPoint").ValueKind);
            var last = await ReadJson(await s.Http.GetAsync("/databases/db/subscriptions/state?name=" + generated));
            Assert.StartsWith("A:5-", last.GetProperty("ChangeVectorForNextBatchStartingPoint").GetString());

            Assert.Equal(HttpStatusCode.OK, (await s.Http.PostAsync("/databases/db/subscriptions/update", Json("""{"Name":"Big","Query":"from Orders where Freight > 35"}"""))).StatusCode);
            Assert.Equal(HttpStatusCode.InternalServerError, (await s.Http.PostAsync("/databases/db/subscriptions/update", Json("""{"Name":"Nope","Query":"from Orders"}"""))).StatusCode);
            Assert.Equal(HttpStatusCode.BadRequest, (await s.Http.PostAsync("/databases/db/subscriptions/update", Json("""{"Name":"Big","Query":"from Orders where"}"""))).StatusCode);
            Assert.Equal(HttpStatusCode.OK, (await s.Http.PostAsync("/databases/db/admin/tasks/state?key=0&type=Subscription&disable=true&taskName=Big", null)).StatusCode);

            var tcp = await ReadJson(await s.Http.GetAsync("/info/tcp?tag=Subscription"));
            Assert.StartsWith("tcp://127.0.0.1:", tcp.GetProperty("Url").GetString());
            Assert.Equal(HttpStatusCode.NoContent, (await s.Http.DeleteAsync("/databases/db/subscriptions?taskName=" + generated)).StatusCode);
            Assert.Equal(HttpStatusCode.InternalServerError, (await s.Http.DeleteAsync("/databases/db/subscriptions?taskName=" + generated)).StatusCode);
        }
        await using (var s = await StartAsync(dataDir: dir.Path))
        {
            var all = (await ReadJson(await s.Http.GetAsync("/databases/db/subscriptions"))).GetProperty("Results");
            var big = Assert.Single(all.EnumerateArray());
            Assert.Equal("from Orders where Freight > 35", big.GetProperty("Query").GetString());
            Assert.True(big.GetProperty("Disabled").GetBoolean());
        }
    }
}
