namespace RavenLite.Server.Tests.Cluster;

/// <summary>
/// The ongoing tasks of a group's database are part of its record on Raft (docs/cluster.md "Ongoing tasks"), with real
/// processes on loopback: connection strings, an external replication and a periodic backup set up through different
/// nodes are held by every member under the same ids; exactly one member runs each; when that member is stopped
/// (SIGSTOP) past the rehab delay another member takes the task over and the destination keeps receiving writes.
/// </summary>
public sealed class ClusterTaskTests : IDisposable
{
    private readonly ClusterHarness _cluster = new();
    private NodeProcess? _destination;

    private static async Task<JsonElement> TaskOn(NodeProcess node, long taskId)
    {
        var r = await node.Http.GetAsync($"/databases/shop/tasks?key={taskId}&type=Replication");
        var json = await TestServer.ReadJson(r);
        Assert.True(r.IsSuccessStatusCode, json.ToString());
        return json;
    }

    /// <summary>The URLs of the sources connected to the archive's replication now.</summary>
    private async Task<string[]> ConnectedSourcesAsync()
    {
        var stats = await TestServer.ReadJson(await _destination!.Http.GetAsync("/databases/archive/stats"));
        return [.. stats.GetProperty("Replication").GetProperty("Incoming").EnumerateArray()
            .Where(s => s.GetProperty("Connected").GetBoolean()).Select(s => s.GetProperty("SourceUrl").GetString()!.TrimEnd('/')).Order()];
    }

    [Fact]
    public async Task Ongoing_tasks_are_held_by_every_member_run_by_one_and_taken_over_when_it_stops()
    {
        await _cluster.FormWithDatabaseAsync("shop", "--ClusterRehabDelaySeconds", "2");
        var nodes = _cluster.Nodes;
        _destination = await NodeProcess.StartAsync(Path.Combine(_cluster.Root, "destination"), "A");
        Assert.Equal(HttpStatusCode.Created, (await _destination.Http.PutAsync("/admin/databases?name=archive", null)).StatusCode);

        // The connection string through B, the task through C: both are Raft changes of the record.
        var cs = new JsonObject { ["Name"] = "to-archive", ["Database"] = "archive", ["TopologyDiscoveryUrls"] = new JsonArray(_destination.Url.ToString().TrimEnd('/')), ["Type"] = "Raven" };
        var put = await nodes[1].Http.PutAsync("/databases/shop/admin/connection-strings", TestServer.Json(cs.ToJsonString()));
        Assert.True(put.IsSuccessStatusCode, await put.Content.ReadAsStringAsync());
        var missing = await nodes[2].Http.PostAsync("/databases/shop/admin/tasks/external-replication",
            TestServer.Json("""{"Watcher":{"Name":"nowhere","ConnectionStringName":"no-such-string"}}"""));
        Assert.Equal(HttpStatusCode.BadRequest, missing.StatusCode);
        var created = await TestServer.ReadJson(await nodes[2].Http.PostAsync("/databases/shop/admin/tasks/external-replication",
            TestServer.Json("""{"Watcher":{"Name":"archive","ConnectionStringName":"to-archive"}}""")));
        long taskId = created.GetProperty("TaskId").GetInt64();
        Assert.Equal(created.GetProperty("RaftCommandIndex").GetInt64(), taskId); // a new task's id is its change's Raft index
        await _cluster.AppliedEverywhereAsync(taskId);

        // Every member lists the task under that id and names the same responsible node; only that one runs it.
        string responsible = created.GetProperty("ResponsibleNode").GetString()!;
        var running = new List<string>();
        foreach (var n in nodes)
        {
            var task = await TaskOn(n, taskId);
            Assert.Equal(responsible, task.GetProperty("ResponsibleNode").GetProperty("NodeTag").GetString());
            string status = task.GetProperty("TaskConnectionStatus").GetString()!;
            if (status != "NotOnThisNode")
                running.Add((await ClusterHarness.Topology(n)).GetProperty("NodeTag").GetString()!);
            var strings = await TestServer.ReadJson(await n.Http.GetAsync("/databases/shop/admin/connection-strings"));
            Assert.True(strings.GetProperty("RavenConnectionStrings").TryGetProperty("to-archive", out _), strings.ToString());
        }
        Assert.Equal([responsible], running);

        await ReplicationSetup.PutAsync(nodes[0].Http, "shop", "orders/1", """{"N":1,"@metadata":{"@collection":"Orders"}}""");
        await Eventually.HoldsAsync(async () => await ReplicationSetup.GetAsync(_destination.Http, "archive", "orders/1") != null, "orders/1 in the archive");
        NodeProcess? owner = null;
        foreach (var n in nodes)
            if ((await ClusterHarness.Topology(n)).GetProperty("NodeTag").GetString() == responsible)
                owner = n;
        Assert.NotNull(owner);
        // The archive hears from the responsible node alone (the others hold the task but run no sender).
        await Eventually.HoldsAsync(async () => (await ConnectedSourcesAsync()).SequenceEqual([owner.Url.ToString().TrimEnd('/')]),
            $"the archive to be fed by {responsible} alone", state: async () => string.Join(", ", await ConnectedSourcesAsync()));

        // A periodic backup set up through A is held by every member under one id.
        string folder = Path.Combine(_cluster.Root, "backups");
        var backup = await TestServer.ReadJson(await nodes[0].Http.PostAsync("/databases/shop/admin/periodic-backup",
            TestServer.Json(new JsonObject { ["Name"] = "nightly", ["BackupType"] = "Snapshot", ["FullBackupFrequency"] = "0 2 * * *", ["LocalSettings"] = new JsonObject { ["FolderPath"] = folder } }.ToJsonString())));
        long backupId = backup.GetProperty("TaskId").GetInt64();
        await _cluster.AppliedEverywhereAsync(backup.GetProperty("RaftCommandIndex").GetInt64());
        foreach (var n in nodes)
            Assert.Equal(HttpStatusCode.OK, (await n.Http.GetAsync($"/periodic-backup/status?name=shop&taskId={backupId}")).StatusCode);

        // The responsible node stops; once it is Rehab another member runs the task, and writes keep reaching the archive.
        var others = nodes.Where(n => n != owner).ToList();
        owner.Pause();
        try
        {
            await Eventually.HoldsAsync(async () =>
            {
                var task = await TaskOn(others[0], taskId);
                return task.GetProperty("ResponsibleNode").GetProperty("NodeTag").GetString() != responsible;
            }, $"the task to move off {responsible}", TimeSpan.FromSeconds(30));
            await ReplicationSetup.PutAsync(others[0].Http, "shop", "orders/2", """{"N":2,"@metadata":{"@collection":"Orders"}}""");
            await Eventually.HoldsAsync(async () => await ReplicationSetup.GetAsync(_destination.Http, "archive", "orders/2") != null,
                "orders/2 in the archive while the task's first node is stopped", TimeSpan.FromSeconds(30));
        }
        finally
        {
            owner.Resume();
        }

        // Disabled through one node, deleted through another: every member follows.
        var disabled = await nodes[1].Http.PostAsync($"/databases/shop/admin/tasks/state?key={taskId}&type=Replication&disable=true", null);
        Assert.True(disabled.IsSuccessStatusCode, await disabled.Content.ReadAsStringAsync());
        await _cluster.AppliedEverywhereAsync((await TestServer.ReadJson(disabled)).GetProperty("RaftCommandIndex").GetInt64());
        foreach (var n in nodes)
            Assert.Equal("Disabled", (await TaskOn(n, taskId)).GetProperty("TaskState").GetString());
        var deleted = await nodes[2].Http.DeleteAsync($"/databases/shop/admin/tasks?id={taskId}&type=Replication");
        Assert.True(deleted.IsSuccessStatusCode, await deleted.Content.ReadAsStringAsync());
        await _cluster.AppliedEverywhereAsync((await TestServer.ReadJson(deleted)).GetProperty("RaftCommandIndex").GetInt64());
        foreach (var n in nodes)
        {
            Assert.Equal(0, (await TestServer.ReadJson(await n.Http.GetAsync("/databases/shop/tasks"))).GetProperty("OngoingTasks").GetArrayLength());
            Assert.Equal(HttpStatusCode.NotFound, (await n.Http.DeleteAsync($"/databases/shop/admin/tasks?id={taskId}&type=Replication")).StatusCode);
        }
    }

    public void Dispose()
    {
        _destination?.Dispose();
        _cluster.Dispose();
    }
}
