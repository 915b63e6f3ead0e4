namespace RavenLite.Server.Tests.Replication;

/// <summary>
/// Replication between real server processes on loopback ports (docs/reliability.md R14): SIGKILL of the source and of
/// the destination mid-stream under 8 writers, and SIGSTOP of the destination past the heartbeat timeout. Afterwards
/// every acknowledged write is on the destination and both databases match item by item.
/// </summary>
public sealed class ReplicationFaultTests(ITestOutputHelper output)
{
    /// <summary>Node A and node B (processes over <paramref name="dir"/>), each with database <c>db</c>, A's replicating to B's.</summary>
    private static async Task<(NodeProcess A, NodeProcess B)> SourceAndDestinationAsync(string dir)
    {
        var a = await NodeProcess.StartAsync(Path.Combine(dir, "a"), "A");
        NodeProcess? b = null;
        try
        {
            b = await NodeProcess.StartAsync(Path.Combine(dir, "b"), "B");
            foreach (var node in new[] { a, b })
                Assert.Equal(HttpStatusCode.Created, (await node.Http.PutAsync("/admin/databases?name=db", TestServer.Json("{\"DatabaseName\":\"db\"}"))).StatusCode);
            await ReplicationSetup.ExternalAsync(a.Http, "db", b.Url, "db");
            return (a, b);
        }
        catch
        {
            a.Dispose(); // no process outlives a failed start
            b?.Dispose();
            throw;
        }
    }

    [Fact]
    public async Task R14_sigkill_of_source_and_destination_under_eight_writers_loses_nothing_and_both_sides_match()
    {
        using var dirs = new TempDirectory("ravenlite-repl");
        var (a, b) = await SourceAndDestinationAsync(dirs.Path);
        using var source = a;
        using var destination = b;

        // Per id (each writer owns its ids): the content of its last acknowledged version (null: deleted), and the
        // writes tried after it whose answer was lost when the source died (each may or may not have committed).
        var acknowledged = new System.Collections.Concurrent.ConcurrentDictionary<string, (string? Value, List<string?> Uncertain)>();
        using var stop = new CancellationTokenSource();
        long writes = 0;
        async Task Writer(int w)
        {
            var random = new Random(w);
            using var http = new HttpClient { BaseAddress = a.Url, Timeout = TimeSpan.FromSeconds(10) };
            for (int n = 0; !stop.IsCancellationRequested; n++)
            {
                string id = $"items/{w}-{random.Next(200)}";
                bool delete = random.Next(10) == 0;
                string? value = delete ? null : $"{w}:{n}";
                try
                {
                    // A counter and a series on the writer's own document, beside the documents (their answers promise nothing to the audit below: the checker compares both sides).
                    if (n % 5 == 0)
                    {
                        await http.PutAsync($"/databases/db/docs?id=meters/{w}", TestServer.Json("{\"@metadata\":{\"@collection\":\"Meters\"}}"));
                        await http.PostAsync("/databases/db/counters", TestServer.Json($$$"""{"Documents":[{"DocumentId":"meters/{{{w}}}","Operations":[{"Type":"Increment","CounterName":"Writes","Delta":1}]}]}"""));
                        await http.PostAsync($"/databases/db/timeseries?docId=meters/{w}", TestServer.Json($$$"""{"Name":"Load","Appends":[{"Timestamp":"{{{DateTime.UnixEpoch.AddSeconds(n):o}}}","Values":[{{{n}}}]}]}"""));
                    }
                    var r = delete
                        ? await http.DeleteAsync($"/databases/db/docs?id={id}")
                        : await http.PutAsync($"/databases/db/docs?id={id}", TestServer.Json($"{{\"V\":\"{value}\",\"@metadata\":{{\"@collection\":\"Items\"}}}}"));
                    Assert.True(r.StatusCode is HttpStatusCode.Created or HttpStatusCode.NoContent, $"{id}: {(int)r.StatusCode}");
                    acknowledged[id] = (value, []);
                    Interlocked.Increment(ref writes);
                }
                catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
                {
                    // The source died: this write may or may not have committed. Go on once it is back.
                    acknowledged.AddOrUpdate(id, _ => (null, [value]), (_, v) => (v.Value, [.. v.Uncertain, value]));
                    await Task.Delay(20);
                }
            }
        }
        var writers = Enumerable.Range(0, 8).Select(w => Task.Run(() => Writer(w))).ToArray();

        async Task WritesGo(int more)
        {
            long target = Interlocked.Read(ref writes) + more;
            await Eventually.HoldsAsync(() => Task.FromResult(Interlocked.Read(ref writes) >= target), $"{more} more acknowledged writes", TimeSpan.FromSeconds(60));
        }
        for (int round = 0; round < 2; round++)
        {
            await WritesGo(300);
            b.Kill();
            output.WriteLine($"round {round}: destination killed after {writes} writes");
            await WritesGo(200);
            await b.RestartAsync();
            await WritesGo(300);
            a.Kill();
            output.WriteLine($"round {round}: source killed after {writes} writes");
            await a.RestartAsync();
        }
        await WritesGo(300);

        // SIGSTOP the destination past the heartbeat timeout (3 s here), then SIGCONT: it catches up.
        b.Pause();
        long paused = Interlocked.Read(ref writes);
        await Eventually.HoldsAsync(async () =>
        {
            var task = (await TestServer.ReadJson(await a.Http.GetAsync("/databases/db/tasks"))).GetProperty("OngoingTasks")[0];
            return task.GetProperty("TaskConnectionStatus").GetString() == "Reconnect";
        }, "the source to notice the silent destination", TimeSpan.FromSeconds(30));
        b.Resume();
        stop.Cancel();
        await Task.WhenAll(writers);
        output.WriteLine($"{writes} acknowledged writes ({paused} before the pause), {acknowledged.Count} ids");

        await Eventually.HoldsAsync(async () =>
        {
            var task = (await TestServer.ReadJson(await a.Http.GetAsync("/databases/db/tasks"))).GetProperty("OngoingTasks")[0];
            return task.GetProperty("EtagLag").GetInt64() == 0 && task.GetProperty("TaskConnectionStatus").GetString() == "Active";
        }, "the destination to catch up", TimeSpan.FromSeconds(60));
        var differences = await DatabaseComparer.DifferencesAsync(a.Http, "db", b.Http, "db");
        Assert.True(differences.Count == 0, differences.Count + " differences: " + string.Join("\n", differences.Take(20)) + "\nsource stats: " + await a.Http.GetStringAsync("/databases/db/stats") + "\ndestination stats: " + await b.Http.GetStringAsync("/databases/db/stats") + "\ntask: " + await a.Http.GetStringAsync("/databases/db/tasks"));
        var onB = await DatabaseComparer.ReadAllAsync(b.Http, "db");
        foreach (var (id, (value, uncertain)) in acknowledged)
        {
            string? held = onB.TryGetValue(id, out var doc) ? doc.GetProperty("V").GetString() : null;
            Assert.True(held == value || uncertain.Contains(held), $"{id}: acknowledged {value ?? "(deleted)"}, then tried [{string.Join(", ", uncertain.Select(u => u ?? "(delete)"))}]; the destination has {held ?? "nothing"}");
        }
    }

    [Fact]
    public async Task A_batch_acknowledged_with_one_replica_survives_sigkill_of_its_source_and_a_timeout_keeps_the_write()
    {
        using var dirs = new TempDirectory("ravenlite-repl");
        var (a, b) = await SourceAndDestinationAsync(dirs.Path);
        using var source = a;
        using var destination = b;
        const string Assured = "/databases/db/bulk_docs?waitForReplicasTimeout=00:00:30&numberOfReplicasToWaitFor=1&throwOnTimeoutInWaitForReplicas=true";
        for (int i = 0; i < 5; i++)
        {
            string batch = new JsonObject { ["Commands"] = new JsonArray(new JsonObject { ["Type"] = "PUT", ["Id"] = $"assured/{i}", ["Document"] = new JsonObject { ["N"] = i, ["@metadata"] = new JsonObject { ["@collection"] = "Assured" } } }) }.ToJsonString();
            var r = await a.Http.PostAsync(Assured, TestServer.Json(batch));
            Assert.Equal(HttpStatusCode.Created, r.StatusCode);
            a.Kill(); // at once: the destination must already have it
            Assert.NotNull(await ReplicationSetup.GetAsync(b.Http, "db", $"assured/{i}"));
            await a.RestartAsync();
        }

        // The destination stopped: the write commits on the source, and the client learns it was not replicated in time.
        b.Pause();
        try
        {
            var r = await a.Http.PostAsync("/databases/db/bulk_docs?waitForReplicasTimeout=00:00:00.500&numberOfReplicasToWaitFor=majority",
                TestServer.Json("""{"Commands":[{"Type":"PUT","Id":"late/1","Document":{"@metadata":{"@collection":"Late"}}}]}"""));
            var error = await TestServer.ReadJson(r);
            Assert.Equal(HttpStatusCode.RequestTimeout, r.StatusCode);
            Assert.Equal("Raven.Client.Exceptions.RavenTimeoutException", error.GetProperty("Type").GetString());
            Assert.True(error.GetProperty("FailImmediately").GetBoolean());
            Assert.Contains("only replicated to 0", error.GetProperty("Message").GetString(), StringComparison.Ordinal);
            Assert.NotNull(await ReplicationSetup.GetAsync(a.Http, "db", "late/1"));
            r = await a.Http.PostAsync("/databases/db/bulk_docs?waitForReplicasTimeout=00:00:00.200&throwOnTimeoutInWaitForReplicas=false",
                TestServer.Json("""{"Commands":[{"Type":"PUT","Id":"late/2","Document":{"@metadata":{"@collection":"Late"}}}]}"""));
            Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        }
        finally
        {
            b.Resume();
        }
        await Eventually.HoldsAsync(async () => await ReplicationSetup.GetAsync(b.Http, "db", "late/2") != null, "late/2 on the destination once it runs again");
        var bad = await a.Http.PostAsync("/databases/db/bulk_docs?waitForReplicasTimeout=soon", TestServer.Json("""{"Commands":[]}"""));
        Assert.Equal(HttpStatusCode.BadRequest, bad.StatusCode);
    }

    [Fact]
    public async Task Three_processes_in_a_full_mesh_converge_to_the_same_documents_and_change_vectors_and_a_killed_node_catches_up()
    {
        using var dirs = new TempDirectory("ravenlite-mesh");
        var nodes = new List<NodeProcess>();
        try
        {
            foreach (string tag in new[] { "A", "B", "C" })
                nodes.Add(await NodeProcess.StartAsync(Path.Combine(dirs.Path, tag), tag));
            foreach (var node in nodes)
                Assert.Equal(HttpStatusCode.Created, (await node.Http.PutAsync("/admin/databases?name=db", TestServer.Json("{\"DatabaseName\":\"db\"}"))).StatusCode);
            foreach (var from in nodes)
                foreach (var to in nodes.Where(n => n != from))
                    await ReplicationSetup.ExternalAsync(from.Http, "db", to.Url, "db");

            // Every node writes its own documents and the same shared ones at once.
            await Task.WhenAll(nodes.Select(async (node, n) =>
            {
                for (int i = 0; i < 50; i++)
                    await ReplicationSetup.PutAsync(node.Http, "db", $"own/{n}-{i}", "{\"N\":" + n + ",\"@metadata\":{\"@collection\":\"Items\"}}");
                for (int i = 0; i < 10; i++)
                    await ReplicationSetup.PutAsync(node.Http, "db", $"shared/{i}", "{\"By\":" + n + ",\"@metadata\":{\"@collection\":\"Items\"}}");
            }));
            async Task<string> Differences()
            {
                var ab = await DatabaseComparer.DifferencesAsync(nodes[0].Http, "db", nodes[1].Http, "db");
                var ac = await DatabaseComparer.DifferencesAsync(nodes[0].Http, "db", nodes[2].Http, "db");
                return string.Join("\n", ab.Concat(ac).Take(10));
            }
            async Task Converged(string what) => await Eventually.HoldsAsync(async () =>
                (await DatabaseComparer.ReadAllAsync(nodes[0].Http, "db")).Count == 160 && await Differences() == "", what, TimeSpan.FromSeconds(60), Differences);
            await Converged("the three databases to hold the same 160 documents");

            // C dies; A and B go on; C comes back and catches up.
            nodes[2].Kill();
            for (int i = 0; i < 20; i++)
                await ReplicationSetup.PutAsync(nodes[i % 2].Http, "db", $"shared/{i % 10}", "{\"After\":" + i + ",\"@metadata\":{\"@collection\":\"Items\"}}");
            await nodes[2].RestartAsync();
            await Converged("C to catch up after its restart");
        }
        finally
        {
            foreach (var node in nodes)
                node.Dispose();
        }
    }
}
