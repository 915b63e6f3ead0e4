namespace RavenLite.Server.Tests.Helpers;

/// <summary>
/// Three (or more) server processes on loopback, each with its own data directory, formed into a cluster through the
/// HTTP API alone (docs/cluster.md "Forming a cluster"); the helpers wait on conditions, never on fixed delays.
/// </summary>
public sealed class ClusterHarness : IDisposable
{
    /// <summary>The folder holding every node's data directory (deleted on dispose).</summary>
    public string Root { get; } = Path.Combine(Path.GetTempPath(), "ravenlite-cluster-" + Guid.NewGuid().ToString("N"));

    /// <summary>The nodes started so far (disposed with the harness).</summary>
    public List<NodeProcess> Nodes { get; } = [];

    public static async Task<JsonElement> Topology(NodeProcess node) => await TestServer.ReadJson(await node.Http.GetAsync("/cluster/topology"));

    public static async Task<string> Describe(IEnumerable<NodeProcess> nodes)
    {
        var parts = new List<string>();
        foreach (var n in nodes)
        {
            try
            {
                var t = await Topology(n);
                parts.Add($"{n.Url}: {t.GetProperty("NodeTag")} leader={t.GetProperty("Leader")} term={t.GetProperty("CurrentTerm")} state={t.GetProperty("CurrentState")} members={t.GetProperty("Topology").GetProperty("Members")}");
            }
            catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
            {
                parts.Add($"{n.Url}: {e.Message}");
            }
        }
        return string.Join(" | ", parts);
    }

    /// <summary>True when every node names the same leader and all of <paramref name="tags"/> as members.</summary>
    public static async Task<bool> AgreeAsync(IEnumerable<NodeProcess> nodes, string[] tags, Func<string, bool>? leaderIs = null)
    {
        string? leader = null;
        foreach (var n in nodes)
        {
            JsonElement t;
            try
            {
                t = await Topology(n);
            }
            catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
            {
                return false;
            }
            if (t.GetProperty("Leader").ValueKind != JsonValueKind.String)
                return false;
            string l = t.GetProperty("Leader").GetString()!;
            if (leader != null && leader != l)
                return false;
            leader = l;
            var members = t.GetProperty("Topology").GetProperty("Members").EnumerateObject().Select(p => p.Name).Order().ToArray();
            if (!members.SequenceEqual(tags))
                return false;
        }
        return leader != null && (leaderIs?.Invoke(leader) ?? true);
    }

    /// <summary>Starts three servers and has the first add the two others (tags B, C); returns the Raft index of the last addition.</summary>
    public async Task<long> FormAsync(params string[] extra)
    {
        for (int i = 0; i < 3; i++)
            Nodes.Add(await NodeProcess.StartAsync(Path.Combine(Root, "n" + i), "A", extra));
        long last = 0;
        foreach (var (node, tag) in new[] { (Nodes[1], "B"), (Nodes[2], "C") })
        {
            var r = await Nodes[0].Http.PutAsync($"/admin/cluster/node?url={Uri.EscapeDataString(node.Url.ToString().TrimEnd('/'))}", null);
            var body = await TestServer.ReadJson(r);
            Assert.True(r.IsSuccessStatusCode, body.ToString());
            Assert.Equal(tag, body.GetProperty("Tag").GetString());
            last = body.GetProperty("RaftCommandIndex").GetInt64();
        }
        return last;
    }

    /// <summary>Waits until every node has applied Raft index <paramref name="index"/>.</summary>
    public async Task AppliedEverywhereAsync(long index)
    {
        foreach (var n in Nodes)
            Assert.Equal(HttpStatusCode.OK, (await n.Http.GetAsync($"/rachis/waitfor?index={index}")).StatusCode);
    }

    /// <summary>Forms the cluster, then creates <paramref name="database"/> on all three nodes and waits until each has its instance.</summary>
    public async Task FormWithDatabaseAsync(string database, params string[] extra)
    {
        await AppliedEverywhereAsync(await FormAsync(extra));
        var created = await TestServer.ReadJson(await Nodes[0].Http.PutAsync($"/admin/databases?name={database}&replicationFactor=3", null));
        await AppliedEverywhereAsync(created.GetProperty("RaftCommandIndex").GetInt64());
    }

    public void Dispose()
    {
        foreach (var n in Nodes)
            n.Dispose();
        try
        {
            Directory.Delete(Root, recursive: true);
        }
        catch (IOException)
        {
        }
    }
}
