namespace RavenLite.Server.Tests.Cluster;

/// <summary>
/// How a database group grows (docs/cluster.md "Database groups"), with real processes on loopback: a node added to a
/// group is fed by its mentor alone and promoted once the mentor finds it caught up.
/// </summary>
public sealed class DatabaseGroupTests : IDisposable
{
    private readonly ClusterHarness _cluster = new();

    private static async Task<long> CountAsync(NodeProcess node, string database)
    {
        var r = await node.Http.GetAsync($"/databases/{database}/stats");
        return r.IsSuccessStatusCode ? (await TestServer.ReadJson(r)).GetProperty("CountOfDocuments").GetInt64() : -1;
    }

    private static async Task<string> RolesAsync(NodeProcess node, string database)
    {
        var topology = await TestServer.ReadJson(await node.Http.GetAsync($"/topology?name={database}"));
        var nodes = topology.GetProperty("Nodes").EnumerateArray().Select(n => n.GetProperty("ClusterTag").GetString() + ":" + n.GetProperty("ServerRole").GetString());
        var promotables = topology.TryGetProperty("Promotables", out var p) ? p.EnumerateArray().Select(n => n.GetProperty("ClusterTag").GetString() + ":Promotable") : [];
        return string.Join(",", nodes.Concat(promotables));
    }

    /// <summary>
    /// C is added to A and B's group with B as its mentor while B is stopped (SIGSTOP): C stays a promotable and A sends
    /// it nothing; once B runs again it feeds C, and the observer (on A, the leader) asks B and promotes C.
    /// </summary>
    [Fact]
    public async Task A_promotable_is_fed_by_its_mentor_alone_and_promoted_once_the_mentor_finds_it_caught_up()
    {
        await _cluster.AppliedEverywhereAsync(await _cluster.FormAsync());
        var (a, b, c) = (_cluster.Nodes[0], _cluster.Nodes[1], _cluster.Nodes[2]);
        var created = await TestServer.ReadJson(await a.Http.PutAsync("/admin/databases?name=mentored&replicationFactor=2", null));
        await _cluster.AppliedEverywhereAsync(created.GetProperty("RaftCommandIndex").GetInt64());
        for (int i = 0; i < 30; i++)
            await ReplicationSetup.PutAsync(a.Http, "mentored", $"items/{i}", "{\"N\":" + i + "}");
        await Eventually.HoldsAsync(async () => await CountAsync(b, "mentored") == 30, "the 30 documents on B");

        var wrongMentor = await a.Http.PutAsync("/admin/databases/node?name=mentored&node=C&mentor=C", null);
        Assert.Equal(HttpStatusCode.BadRequest, wrongMentor.StatusCode);
        b.Pause();
        try
        {
            var added = await a.Http.PutAsync("/admin/databases/node?name=mentored&node=C&mentor=B", null);
            var body = await TestServer.ReadJson(added);
            Assert.True(added.IsSuccessStatusCode, body.ToString());
            Assert.Equal("B", body.GetProperty("Topology").GetProperty("PredefinedMentors").GetProperty("C").GetString());
            await _cluster.Nodes[2].Http.GetAsync($"/rachis/waitfor?index={body.GetProperty("RaftCommandIndex").GetInt64()}");
            await Eventually.HoldsAsync(async () => await CountAsync(c, "mentored") == 0, "C's instance of the database");
            // While its mentor is stopped nobody feeds C: it holds nothing and stays a promotable (A could feed it, and must not).
            var until = DateTime.UtcNow.AddSeconds(3);
            while (DateTime.UtcNow < until)
            {
                Assert.Equal(0, await CountAsync(c, "mentored"));
                Assert.Equal("A:Member,B:Member,C:Promotable", await RolesAsync(a, "mentored"));
                await Task.Delay(250);
            }
        }
        finally
        {
            b.Resume();
        }
        await Eventually.HoldsAsync(async () => await RolesAsync(a, "mentored") == "A:Member,B:Member,C:Member", "C to be promoted",
            TimeSpan.FromSeconds(30), () => RolesAsync(a, "mentored"));
        Assert.Equal(30, await CountAsync(c, "mentored"));
    }

    /// <summary>
    /// A group database's identities come from the cluster: a PUT of <c>users|</c> through any member takes the next
    /// one, while a bulk insert — which would take one in its own transaction, apart from the cluster — is refused with a
    /// 400 and writes nothing.
    /// </summary>
    [Fact]
    public async Task An_identity_id_in_a_bulk_insert_of_a_group_database_is_refused_while_puts_take_the_clusters()
    {
        await _cluster.FormWithDatabaseAsync("ids");
        var ids = new List<string>();
        foreach (var n in _cluster.Nodes)
        {
            var r = await n.Http.PutAsync("/databases/ids/docs?id=users|", TestServer.Json("""{"Name":"x","@metadata":{"@collection":"Users"}}"""));
            var body = await TestServer.ReadJson(r);
            Assert.True(r.StatusCode == HttpStatusCode.Created, body.ToString());
            ids.Add(body.GetProperty("Id").GetString()!);
        }
        Assert.Equal(["users/1", "users/2", "users/3"], ids);
        var bulk = await _cluster.Nodes[1].Http.PostAsync("/databases/ids/bulk_insert?id=5",
            TestServer.Json("""[{"Id":"users|","Type":"PUT","Document":{"Name":"bulk","@metadata":{"@collection":"Users"}}}]"""));
        string answer = await bulk.Content.ReadAsStringAsync();
        Assert.True(bulk.StatusCode == HttpStatusCode.BadRequest, $"{(int)bulk.StatusCode}: {answer}");
        Assert.Contains("identity", answer, StringComparison.Ordinal);
        await Eventually.HoldsAsync(async () => await CountAsync(_cluster.Nodes[1], "ids") == 3, "the three users on B");
        Assert.Null(await ReplicationSetup.GetAsync(_cluster.Nodes[1].Http, "ids", "users/4"));
    }

    public void Dispose() => _cluster.Dispose();
}
