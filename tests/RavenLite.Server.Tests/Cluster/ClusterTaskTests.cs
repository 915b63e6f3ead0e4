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
            // The replication task is gone from every member; the backup task stays (listed as RavenDB lists it).
            var listed = (await TestServer.ReadJson(await n.Http.GetAsync("/databases/shop/tasks"))).GetProperty("OngoingTasks").EnumerateArray().ToList();
            Assert.DoesNotContain(listed, t => t.GetProperty("TaskType").GetString() == "Replication");
            Assert.Equal(backupId, Assert.Single(listed, t => t.GetProperty("TaskType").GetString() == "Backup").GetProperty("TaskId").GetInt64());
            Assert.Equal(HttpStatusCode.NotFound, (await n.Http.DeleteAsync($"/databases/shop/admin/tasks?id={taskId}&type=Replication")).StatusCode);
        }
    }

    private sealed class Order
    {
        public string? Id { get; set; }

        public int N { get; set; }
    }

    /// <summary>
    /// A data subscription of a group's database is part of its record: created through C, every member lists it under
    /// one id and names the same node serving it. Our .NET client, pointed first at a node that does not serve it, is
    /// redirected (RavenDB's <c>Redirect</c>) and gets every document; the serving node killed (SIGKILL), the
    /// subscription moves to another member once the killed one is Rehab, and the worker gets every document written
    /// since — at least once.
    /// </summary>
    [Fact]
    public async Task A_subscription_is_served_by_one_member_redirects_workers_there_and_moves_when_it_is_killed()
    {
        await _cluster.FormWithDatabaseAsync("feed", "--ClusterRehabDelaySeconds", "2");
        var nodes = _cluster.Nodes;
        for (int i = 0; i < 10; i++)
            await ReplicationSetup.PutAsync(nodes[0].Http, "feed", $"orders/{i}", "{\"N\":" + i + ",\"@metadata\":{\"@collection\":\"Orders\"}}");
        foreach (var n in nodes)
        {
            var node = n;
            await Eventually.HoldsAsync(async () => await ReplicationSetup.GetAsync(node.Http, "feed", "orders/9") != null, $"orders/9 on {node.Url}");
        }
        var created = await nodes[2].Http.PutAsync("/databases/feed/subscriptions", TestServer.Json("""{"Name":"orders-feed","Query":"from Orders"}"""));
        Assert.True(created.StatusCode == HttpStatusCode.Created, await created.Content.ReadAsStringAsync());
        long id = (await TestServer.ReadJson(created)).GetProperty("RaftCommandIndex").GetInt64();
        await _cluster.AppliedEverywhereAsync(id);
        var serving = new HashSet<string>();
        foreach (var n in nodes)
        {
            var listed = (await TestServer.ReadJson(await n.Http.GetAsync("/databases/feed/subscriptions"))).GetProperty("Results");
            Assert.Equal(1, listed.GetArrayLength());
            Assert.Equal(id, listed[0].GetProperty("SubscriptionId").GetInt64());
            serving.Add(listed[0].GetProperty("NodeTag").GetString()!);
        }
        string responsible = Assert.Single(serving);
        var tags = new List<string>();
        foreach (var n in nodes)
            tags.Add((await ClusterHarness.Topology(n)).GetProperty("NodeTag").GetString()!);
        var owner = nodes[tags.IndexOf(responsible)];

        // The store's first URL is a node that does not serve the subscription.
        var urls = nodes.Where(n => n != owner).Concat([owner]).Select(n => n.Url.ToString()).ToArray();
        using var store = new RavenLite.Client.DocumentStore { Urls = urls, Database = "feed" }.Initialize();
        var seen = new System.Collections.Concurrent.ConcurrentDictionary<string, int>();
        int redirects = 0;
        await using var worker = store.Subscriptions.GetSubscriptionWorker<Order>(
            new RavenLite.Client.Subscriptions.SubscriptionWorkerOptions("orders-feed") { TimeToWaitBeforeConnectionRetry = TimeSpan.FromMilliseconds(200) });
        worker.OnConnectionRetry += e =>
        {
            if (e is RavenLite.Client.Exceptions.SubscriptionDoesNotBelongToNodeException)
                Interlocked.Increment(ref redirects);
        };
        var run = worker.Run(batch =>
        {
            foreach (var item in batch.Items)
                seen.AddOrUpdate(item.Id, 1, (_, k) => k + 1);
        });
        await Eventually.HoldsAsync(() => Task.FromResult(seen.Count == 10 || run.IsFaulted), "the worker to get the first 10 orders");
        Assert.False(run.IsFaulted, run.Exception?.ToString());
        Assert.True(redirects >= 1, "the worker was not redirected to the node serving the subscription");

        owner.Kill();
        var survivor = nodes.First(n => n != owner);
        for (int i = 10; i < 20; i++)
            await ReplicationSetup.PutAsync(survivor.Http, "feed", $"orders/{i}", "{\"N\":" + i + ",\"@metadata\":{\"@collection\":\"Orders\"}}");
        await Eventually.HoldsAsync(() => Task.FromResult(seen.Count == 20 || run.IsFaulted), "the worker to get the 10 orders written after the kill",
            TimeSpan.FromSeconds(60), async () => string.Join(" | ", await Task.WhenAll(nodes.Where(n => n != owner).Select(async n =>
                (await TestServer.ReadJson(await n.Http.GetAsync("/databases/feed/subscriptions"))).GetProperty("Results")[0].GetProperty("NodeTag").GetString()))));
        Assert.False(run.IsFaulted, run.Exception?.ToString());
        Assert.All(Enumerable.Range(0, 20), i => Assert.True(seen.ContainsKey($"orders/{i}"), $"orders/{i} was never delivered"));
    }

    public void Dispose()
    {
        _destination?.Dispose();
        _cluster.Dispose();
    }
}
