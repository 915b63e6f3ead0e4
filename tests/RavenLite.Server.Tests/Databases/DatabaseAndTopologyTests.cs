using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Databases;

public sealed class DatabaseAndTopologyTests
{
    [Fact]
    public async Task Topology_names_the_node_from_the_host_header_and_missing_database_is_503_with_header()
    {
        await using var s = await StartWithDatabaseAsync("Northwind");
        using var req = new HttpRequestMessage(HttpMethod.Get, "/topology?name=northwind&first-topology-update&applicationIdentifier=abc");
        req.Headers.TryAddWithoutValidation("Topology-Etag", "\"None\"");
        req.Headers.TryAddWithoutValidation("Client-Configuration-Etag", "\"None\"");
        var r = await s.Http.SendAsync(req);
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        Assert.Null(r.Headers.ETag);
        var t = await ReadJson(r);
        var node = t.GetProperty("Nodes")[0];
        Assert.Equal(s.Url.ToString().TrimEnd('/'), node.GetProperty("Url").GetString());
        Assert.Equal("Northwind", node.GetProperty("Database").GetString());
        Assert.Equal("A", node.GetProperty("ClusterTag").GetString());
        Assert.Equal(JsonValueKind.Number, t.GetProperty("Etag").ValueKind);

        var missing = await s.Http.GetAsync("/topology?name=nope");
        Assert.Equal(HttpStatusCode.ServiceUnavailable, missing.StatusCode);
        Assert.Equal("nope", missing.Headers.GetValues("Database-Missing").Single());
        Assert.EndsWith("DatabaseDoesNotExistException", (await ReadJson(missing)).GetProperty("Type").GetString());
    }

    [Fact]
    public async Task Cluster_topology_and_node_info_have_every_key_the_clients_read()
    {
        await using var s = await StartAsync();
        var c = await ReadJson(await s.Http.GetAsync("/cluster/topology?first-topology-update"));
        foreach (string k in new[] { "Leader", "NodeTag", "Topology", "Etag", "Status" })
            Assert.True(c.TryGetProperty(k, out _), k);
        foreach (string k in new[] { "TopologyId", "Members", "Promotables", "Watchers", "LastNodeId", "Etag" })
            Assert.True(c.GetProperty("Topology").TryGetProperty(k, out _), k);
        var n = await ReadJson(await s.Http.GetAsync("/cluster/node-info"));
        Assert.Equal("A", n.GetProperty("NodeTag").GetString());
        Assert.Equal("Member", n.GetProperty("ServerRole").GetString());
        var v = await ReadJson(await s.Http.GetAsync("/build/version"));
        Assert.True(v.TryGetProperty("FullVersion", out _));
    }

    [Fact]
    public async Task Database_lifecycle_create_conflict_list_record_delete()
    {
        await using var s = await StartAsync();
        // Node sends ETag: "undefined"; Python sends a full record and a stray ?raft-request-id.
        using (var req = new HttpRequestMessage(HttpMethod.Put, "/admin/databases?name=Shop&replicationFactor=1&?raft-request-id=1b2c") { Content = Json("""{"DatabaseName":"Shop","Disabled":false,"Settings":{},"Indexes":{},"Encrypted":false}""") })
        {
            req.Headers.TryAddWithoutValidation("ETag", "\"undefined\"");
            var r = await s.Http.SendAsync(req);
            Assert.Equal(HttpStatusCode.Created, r.StatusCode);
            var body = await ReadJson(r);
            Assert.Equal("Shop", body.GetProperty("Name").GetString());
            Assert.True(body.GetProperty("RaftCommandIndex").GetInt64() > 0);
        }
        var dup = await s.Http.PutAsync("/admin/databases?name=shop", Json("""{"DatabaseName":"shop"}"""));
        Assert.Equal(HttpStatusCode.Conflict, dup.StatusCode);
        Assert.Equal("Raven.Client.Exceptions.ConcurrencyException", (await ReadJson(dup)).GetProperty("Type").GetString());
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/admin/databases", Json("""{"DatabaseName":"Other"}"""))).StatusCode);

        var names = await ReadJson(await s.Http.GetAsync("/databases?namesOnly=true&start=0&pageSize=10"));
        Assert.Equal(["Other", "Shop"], names.GetProperty("Databases").EnumerateArray().Select(e => e.GetString()).ToList());
        var record = await ReadJson(await s.Http.GetAsync("/admin/databases?name=SHOP"));
        Assert.Equal("Shop", record.GetProperty("DatabaseName").GetString());
        Assert.Equal(HttpStatusCode.NotFound, (await s.Http.GetAsync("/admin/databases?name=none")).StatusCode);

        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/shop/docs?id=a", Json("{}"))).StatusCode);
        using (var del = new HttpRequestMessage(HttpMethod.Delete, "/admin/databases?raft-request-id=x") { Content = Json("""{"DatabaseNames":["shop"],"HardDelete":true,"FromNodes":null,"TimeToWaitForConfirmation":null}""") })
        {
            var r = await s.Http.SendAsync(del);
            Assert.Equal(HttpStatusCode.OK, r.StatusCode);
            Assert.True((await ReadJson(r)).TryGetProperty("PendingDeletes", out _));
        }
        Assert.Equal(HttpStatusCode.ServiceUnavailable, (await s.Http.GetAsync("/databases/shop/docs?id=a")).StatusCode);
        Assert.False(Directory.Exists(Path.Combine(s.DataDir, "Databases", "shop")));
        // Re-created empty.
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/admin/databases?name=Shop", Json(""))).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await s.Http.GetAsync("/databases/shop/docs?id=a")).StatusCode);
    }

    [Theory]
    [InlineData("..")]
    [InlineData(".hidden")]
    [InlineData("a/b")]
    [InlineData("../../etc")]
    [InlineData("a\u0000b")]
    [InlineData("con sole")]
    [InlineData("x%2e%2e%2f")]
    public async Task Hostile_database_names_get_400_and_create_nothing(string name)
    {
        await using var s = await StartAsync();
        // The server's own cluster log (System/Cluster) lives its own life; databases are what a name could create.
        string Entries() => string.Join(",", Directory.GetFileSystemEntries(s.DataDir, "*", SearchOption.AllDirectories)
            .Where(e => !e.StartsWith(Path.Combine(s.DataDir, "System", "Cluster"), StringComparison.Ordinal)).Order());
        string before = Entries();
        var r = await s.Http.PutAsync("/admin/databases", Json(JsonSerializer.Serialize(new { DatabaseName = name })));
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        Assert.Equal("Raven.Client.Exceptions.BadRequestException", (await ReadJson(r)).GetProperty("Type").GetString());
        Assert.Equal(before, Entries());
        Assert.False(Directory.Exists(Path.Combine(s.DataDir, "..", "etc")) && !Directory.Exists("/etc"));
    }

    [Fact]
    public async Task Overlong_database_name_is_400()
    {
        await using var s = await StartAsync();
        var r = await s.Http.PutAsync("/admin/databases", Json(JsonSerializer.Serialize(new { DatabaseName = new string('a', 300) })));
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        Assert.Contains("limit is 128", (await ReadJson(r)).GetProperty("Message").GetString());
    }

    [Fact]
    public async Task Unknown_routes_and_index_definitions_answer_json_errors()
    {
        await using var s = await StartWithDatabaseAsync();
        var r = await s.Http.GetAsync("/no/such/thing");
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        Assert.EndsWith("RouteNotFoundException", (await ReadJson(r)).GetProperty("Type").GetString());
        var q = await s.Http.PutAsync("/databases/db/admin/indexes", Json("""{"Indexes":[{"Name":"X","Maps":["from u in docs.Users select new { u.Name }"],"Reduce":"from r in results group r by r.Name into g select new { Name = g.Key, N = g.NoSuchMethod() }"}]}"""));
        Assert.Equal(HttpStatusCode.BadRequest, q.StatusCode);
        var error = await ReadJson(q);
        Assert.EndsWith("IndexCompilationException", error.GetProperty("Type").GetString());
        Assert.Equal("Reduce", error.GetProperty("IndexDefinitionProperty").GetString());
        Assert.StartsWith("from r in results", error.GetProperty("ProblematicText").GetString());
        var ok = await s.Http.PostAsync("/databases/db/queries?queryHash=1", Json("""{"Query":"from Users"}"""));
        Assert.Equal(HttpStatusCode.OK, ok.StatusCode);
    }
}
