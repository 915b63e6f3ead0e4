namespace RavenLite.Server.Tests.Replication;

/// <summary>
/// Replication between databases (docs/replication.md): documents and deletes flow over the TCP port; change vectors
/// carry both instances' entries; concurrent writes resolve the same way on both sides; tasks report progress.
/// </summary>
public sealed class ReplicationTests
{
    /// <summary>docs/1, docs/2 and docs/3 of <paramref name="db"/> as text (for a timeout's message).</summary>
    private static async Task<string> DocsState(TestServer server, string db)
    {
        var parts = new List<string>();
        foreach (string id in new[] { "docs/1", "docs/2", "docs/3" })
            parts.Add((await ReplicationSetup.GetAsync(server.Http, db, id))?.ToString() ?? "(none)");
        return string.Join(" | ", parts);
    }

    [Fact]
    public async Task Documents_and_deletes_replicate_to_another_database_on_the_same_server()
    {
        await using var server = await TestServer.StartWithDatabaseAsync("src");
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/admin/databases?name=dst", TestServer.Json("{\"DatabaseName\":\"dst\"}"))).StatusCode);
        for (int i = 0; i < 50; i++)
            await ReplicationSetup.PutAsync(server.Http, "src", $"users/{i}", "{\"Name\":\"user " + i + "\",\"@metadata\":{\"@collection\":\"Users\"}}");
        long taskId = await ReplicationSetup.ExternalAsync(server.Http, "src", server.Url, "dst");
        await Eventually.HoldsAsync(async () => await ReplicationSetup.GetAsync(server.Http, "dst", "users/49") != null, "users/49 on dst");
        var copy = (await ReplicationSetup.GetAsync(server.Http, "dst", "users/7"))!.Value;
        var original = (await ReplicationSetup.GetAsync(server.Http, "src", "users/7"))!.Value;
        Assert.Equal("user 7", copy.GetProperty("Name").GetString());
        Assert.Equal(original.GetProperty("@metadata").GetProperty("@change-vector").GetString(), copy.GetProperty("@metadata").GetProperty("@change-vector").GetString());
        Assert.Equal(original.GetProperty("@metadata").GetProperty("@last-modified").GetString(), copy.GetProperty("@metadata").GetProperty("@last-modified").GetString());

        // Updates and deletes follow.
        await ReplicationSetup.PutAsync(server.Http, "src", "users/7", """{"Name":"changed","@metadata":{"@collection":"Users"}}""");
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync("/databases/src/docs?id=users/8")).StatusCode);
        await Eventually.HoldsAsync(async () => await ReplicationSetup.GetAsync(server.Http, "dst", "users/8") == null
            && (await ReplicationSetup.GetAsync(server.Http, "dst", "users/7"))?.GetProperty("Name").GetString() == "changed", "the update and the delete on dst");

        // A local write on the destination keeps the source's entry and adds its own.
        string local = await ReplicationSetup.PutAsync(server.Http, "dst", "users/7", """{"Name":"edited on dst","@metadata":{"@collection":"Users"}}""");
        Assert.Equal(2, local.Split(',').Length);

        // The task reports its progress.
        var tasks = await TestServer.ReadJson(await server.Http.GetAsync("/databases/src/tasks"));
        var task = tasks.GetProperty("OngoingTasks").EnumerateArray().Single();
        Assert.Equal(taskId, task.GetProperty("TaskId").GetInt64());
        Assert.Equal("Active", task.GetProperty("TaskConnectionStatus").GetString());
        var stats = await TestServer.ReadJson(await server.Http.GetAsync("/databases/src/stats"));
        await Eventually.HoldsAsync(async () =>
            (await TestServer.ReadJson(await server.Http.GetAsync($"/databases/src/tasks?key={taskId}&type=Replication"))).GetProperty("EtagLag").GetInt64() == 0,
            "no lag once idle");
        Assert.Equal(stats.GetProperty("LastDocEtag").GetInt64(),
            (await TestServer.ReadJson(await server.Http.GetAsync($"/databases/src/tasks?key={taskId}&type=Replication"))).GetProperty("LastAcknowledgedEtag").GetInt64());
        var replication = (await TestServer.ReadJson(await server.Http.GetAsync("/databases/src/stats"))).GetProperty("Replication").GetProperty("Outgoing")[0];
        Assert.Equal("Active", replication.GetProperty("Status").GetString());
        Assert.Equal(0, replication.GetProperty("EtagLag").GetInt64());
        using var plain = new HttpClient { BaseAddress = server.Url };
        string metrics = await plain.GetStringAsync("/metrics");
        string taskName = $"to-dst-{server.Url.Port}"; // the task's name: unique to this server (/metrics shows every test server's databases)
        Assert.Contains($"ravenlite_replication_lag{{otel_scope_name=\"RavenLite\",database=\"src\",task=\"{taskName}\"}} 0", metrics, StringComparison.Ordinal);
        Assert.Contains($"ravenlite_replication_connected{{otel_scope_name=\"RavenLite\",database=\"src\",task=\"{taskName}\"}} 1", metrics, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Concurrent_writes_on_two_replicating_databases_converge_to_the_latest_with_merged_change_vectors()
    {
        await using var server = await TestServer.StartWithDatabaseAsync("a");
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/admin/databases?name=b", TestServer.Json("{\"DatabaseName\":\"b\"}"))).StatusCode);
        // Written on both sides before they replicate: concurrent versions of the same ids.
        await ReplicationSetup.PutAsync(server.Http, "a", "docs/1", """{"V":"a first","@metadata":{"@collection":"Docs"}}""");
        await ReplicationSetup.PutAsync(server.Http, "b", "docs/1", """{"V":"b later","@metadata":{"@collection":"Docs"}}""");
        await ReplicationSetup.PutAsync(server.Http, "b", "docs/2", """{"V":"same","@metadata":{"@collection":"Docs"}}""");
        await ReplicationSetup.PutAsync(server.Http, "a", "docs/2", """{"V":"same","@metadata":{"@collection":"Docs"}}""");
        await ReplicationSetup.PutAsync(server.Http, "a", "docs/3", """{"V":"deleted on b later","@metadata":{"@collection":"Docs"}}""");
        await ReplicationSetup.PutAsync(server.Http, "b", "docs/3", """{"V":"to delete","@metadata":{"@collection":"Docs"}}""");
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync("/databases/b/docs?id=docs/3")).StatusCode);
        await ReplicationSetup.ExternalAsync(server.Http, "a", server.Url, "b");
        await ReplicationSetup.ExternalAsync(server.Http, "b", server.Url, "a");

        Task<string> State(string db) => DocsState(server, db);
        async Task<bool> Converged()
        {
            var a1 = await ReplicationSetup.GetAsync(server.Http, "a", "docs/1");
            var b1 = await ReplicationSetup.GetAsync(server.Http, "b", "docs/1");
            var a2 = await ReplicationSetup.GetAsync(server.Http, "a", "docs/2");
            var b2 = await ReplicationSetup.GetAsync(server.Http, "b", "docs/2");
            return a1?.GetProperty("V").GetString() == "b later" && b1?.GetProperty("V").GetString() == "b later"
                && a1?.GetProperty("@metadata").GetProperty("@change-vector").GetString() == b1?.GetProperty("@metadata").GetProperty("@change-vector").GetString()
                && a2?.GetProperty("@metadata").GetProperty("@change-vector").GetString() == b2?.GetProperty("@metadata").GetProperty("@change-vector").GetString()
                && await ReplicationSetup.GetAsync(server.Http, "a", "docs/3") == null && await ReplicationSetup.GetAsync(server.Http, "b", "docs/3") == null;
        }
        await Eventually.HoldsAsync(Converged, "both databases to hold the same versions", state: async () => "a: " + await State("a") + " / b: " + await State("b"));
        var winner = (await ReplicationSetup.GetAsync(server.Http, "a", "docs/1"))!.Value.GetProperty("@metadata").GetProperty("@change-vector").GetString()!;
        Assert.Equal(2, winner.Split(',').Length); // both writers' entries
        Assert.Equal("same", (await ReplicationSetup.GetAsync(server.Http, "b", "docs/2"))!.Value.GetProperty("V").GetString());

        // Quiet afterwards: no ping-pong — both databases' etags settle.
        async Task<long> Etag(string db) => (await TestServer.ReadJson(await server.Http.GetAsync($"/databases/{db}/stats"))).GetProperty("LastDocEtag").GetInt64();
        await Eventually.HoldsAsync(async () =>
        {
            long a = await Etag("a"), b = await Etag("b");
            var tasksA = await TestServer.ReadJson(await server.Http.GetAsync("/databases/a/tasks"));
            var tasksB = await TestServer.ReadJson(await server.Http.GetAsync("/databases/b/tasks"));
            return tasksA.GetProperty("OngoingTasks")[0].GetProperty("EtagLag").GetInt64() == 0 && tasksB.GetProperty("OngoingTasks")[0].GetProperty("EtagLag").GetInt64() == 0
                && a == await Etag("a") && b == await Etag("b");
        }, "replication to settle");
        long settledA = await Etag("a"), settledB = await Etag("b");
        await ReplicationSetup.PutAsync(server.Http, "a", "docs/4", """{"V":"after","@metadata":{"@collection":"Docs"}}""");
        await Eventually.HoldsAsync(async () => await ReplicationSetup.GetAsync(server.Http, "b", "docs/4") != null, "docs/4 on b");
        await Eventually.HoldsAsync(async () => (await TestServer.ReadJson(await server.Http.GetAsync("/databases/b/tasks"))).GetProperty("OngoingTasks")[0].GetProperty("EtagLag").GetInt64() == 0, "b idle");
        Assert.Equal(settledA + 1, await Etag("a")); // docs/4 did not come back to a
        Assert.Equal(settledB + 1, await Etag("b"));
    }

    [Fact]
    public async Task A_version_written_in_a_cluster_wide_transaction_wins_conflicts_over_later_plain_writes()
    {
        await using var server = await TestServer.StartWithDatabaseAsync("a");
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/admin/databases?name=b", TestServer.Json("{\"DatabaseName\":\"b\"}"))).StatusCode);
        async Task ClusterWide(string db, string command)
        {
            var response = await server.Http.PostAsync($"/databases/{db}/bulk_docs", TestServer.Json("{\"TransactionMode\":\"ClusterWide\",\"Commands\":[" + command + "]}"));
            Assert.True(response.IsSuccessStatusCode, await response.Content.ReadAsStringAsync());
        }
        // b writes first in cluster-wide transactions; a writes the same ids later, plainly: resolve-to-latest would pick a's.
        await ClusterWide("b", """{"Type":"PUT","Id":"docs/1","Document":{"V":"cluster-wide on b","@metadata":{"@collection":"Docs"}}}""");
        await ReplicationSetup.PutAsync(server.Http, "b", "docs/2", """{"V":"to delete","@metadata":{"@collection":"Docs"}}""");
        await ClusterWide("b", """{"Type":"DELETE","Id":"docs/2"}""");
        await ReplicationSetup.PutAsync(server.Http, "a", "docs/1", """{"V":"plain on a, later","@metadata":{"@collection":"Docs"}}""");
        await ReplicationSetup.PutAsync(server.Http, "a", "docs/2", """{"V":"plain on a, later","@metadata":{"@collection":"Docs"}}""");
        await ReplicationSetup.PutAsync(server.Http, "a", "docs/3", """{"V":"plain on a, later","@metadata":{"@collection":"Docs"}}""");
        await ClusterWide("b", """{"Type":"PUT","Id":"docs/3","Document":{"V":"cluster-wide on b, earlier","@metadata":{"@collection":"Docs"}}}""");
        var b1 = (await ReplicationSetup.GetAsync(server.Http, "b", "docs/1"))!.Value.GetProperty("@metadata").GetProperty("@change-vector").GetString()!;
        Assert.Contains("RAFT:", b1, StringComparison.Ordinal); // the transaction's entry beside b's own
        Assert.Equal(2, b1.Split(',').Length);

        await ReplicationSetup.ExternalAsync(server.Http, "a", server.Url, "b");
        await ReplicationSetup.ExternalAsync(server.Http, "b", server.Url, "a");
        Task<string> State(string db) => DocsState(server, db);
        async Task<bool> Converged()
        {
            foreach (string db in new[] { "a", "b" })
            {
                if ((await ReplicationSetup.GetAsync(server.Http, db, "docs/1"))?.GetProperty("V").GetString() != "cluster-wide on b"
                    || await ReplicationSetup.GetAsync(server.Http, db, "docs/2") != null
                    || (await ReplicationSetup.GetAsync(server.Http, db, "docs/3"))?.GetProperty("V").GetString() != "cluster-wide on b, earlier")
                    return false;
            }
            return true;
        }
        await Eventually.HoldsAsync(Converged, "the cluster-wide versions to win on both databases", state: async () => "a: " + await State("a") + " / b: " + await State("b"));
        var conflicts = await TestServer.ReadJson(await server.Http.GetAsync("/databases/a/replication/conflicts"));
        Assert.Equal(0, conflicts.GetProperty("TotalResults").GetInt64());
    }

    [Fact]
    public async Task Without_a_resolver_conflicts_are_kept_listed_refused_on_load_and_resolved_by_a_write_and_a_script_resolves_its_collection()
    {
        await using var server = await TestServer.StartWithDatabaseAsync("a");
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/admin/databases?name=b", TestServer.Json("{\"DatabaseName\":\"b\"}"))).StatusCode);
        var badScript = await server.Http.PostAsync("/admin/replication/conflicts/solver?name=b", TestServer.Json("""{"ResolveToLatest":false,"ResolveByCollection":{"Scripted":{"Script":"return docs[0"}}}"""));
        Assert.Equal(HttpStatusCode.BadRequest, badScript.StatusCode);
        const string Script = "var max = 0; for (var i = 0; i < docs.length; i++) { max = Math.max(max, docs[i].N); } docs[0].N = max; docs[0].Resolved = true; return docs[0];";
        var solver = new JsonObject { ["ResolveToLatest"] = false, ["ResolveByCollection"] = new JsonObject { ["Scripted"] = new JsonObject { ["Script"] = Script } } };
        var set = await server.Http.PostAsync("/admin/replication/conflicts/solver?name=b", TestServer.Json(solver.ToJsonString()));
        Assert.Equal(HttpStatusCode.OK, set.StatusCode);
        Assert.Equal("b", (await TestServer.ReadJson(set)).GetProperty("Key").GetString());

        await ReplicationSetup.PutAsync(server.Http, "b", "kept/1", """{"V":"b","@metadata":{"@collection":"Kept"}}""");
        await ReplicationSetup.PutAsync(server.Http, "b", "gone/1", """{"V":"b","@metadata":{"@collection":"Kept"}}""");
        await ReplicationSetup.PutAsync(server.Http, "b", "scripted/1", """{"N":5,"@metadata":{"@collection":"Scripted"}}""");
        await ReplicationSetup.PutAsync(server.Http, "a", "kept/1", """{"V":"a","@metadata":{"@collection":"Kept"}}""");
        await ReplicationSetup.PutAsync(server.Http, "a", "gone/1", """{"V":"a","@metadata":{"@collection":"Kept"}}""");
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync("/databases/a/docs?id=gone/1")).StatusCode);
        await ReplicationSetup.PutAsync(server.Http, "a", "scripted/1", """{"N":9,"@metadata":{"@collection":"Scripted"}}""");
        await ReplicationSetup.ExternalAsync(server.Http, "a", server.Url, "b");

        await Eventually.HoldsAsync(async () =>
            (await TestServer.ReadJson(await server.Http.GetAsync("/databases/b/replication/conflicts"))).GetProperty("TotalResults").GetInt32() == 2
            && (await ReplicationSetup.GetAsync(server.Http, "b", "scripted/1"))?.TryGetProperty("Resolved", out _) == true,
            "two conflicts kept and one resolved by the script", state: async () => await server.Http.GetStringAsync("/databases/b/replication/conflicts"));
        var scripted = (await ReplicationSetup.GetAsync(server.Http, "b", "scripted/1"))!.Value;
        Assert.Equal(9, scripted.GetProperty("N").GetInt32());

        var load = await server.Http.GetAsync("/databases/b/docs?id=kept/1");
        var error = await TestServer.ReadJson(load);
        Assert.Equal(HttpStatusCode.Conflict, load.StatusCode);
        Assert.Equal("Raven.Client.Exceptions.Documents.DocumentConflictException", error.GetProperty("Type").GetString());
        Assert.Equal("kept/1", error.GetProperty("DocId").GetString());
        var versions = await TestServer.ReadJson(await server.Http.GetAsync("/databases/b/replication/conflicts?docId=kept/1"));
        Assert.Equal("a,b", string.Join(",", versions.GetProperty("Results").EnumerateArray().Select(v => v.GetProperty("Doc").GetProperty("V").GetString()).Order()));
        var gone = await TestServer.ReadJson(await server.Http.GetAsync("/databases/b/replication/conflicts?docId=gone/1"));
        Assert.Contains(gone.GetProperty("Results").EnumerateArray(), v => v.GetProperty("Doc").ValueKind == JsonValueKind.Null);
        var queried = await TestServer.ReadJson(await server.Http.PostAsync("/databases/b/queries", TestServer.Json("""{"Query":"from Kept","WaitForNonStaleResults":true}""")));
        Assert.Equal(0, queried.GetProperty("TotalResults").GetInt32()); // a document in conflict is in no collection

        // A PUT resolves: its change vector descends from both versions.
        string resolved = await ReplicationSetup.PutAsync(server.Http, "b", "kept/1", """{"V":"resolved","@metadata":{"@collection":"Kept"}}""");
        Assert.Equal(2, resolved.Split(',').Length);
        Assert.Equal("resolved", (await ReplicationSetup.GetAsync(server.Http, "b", "kept/1"))!.Value.GetProperty("V").GetString());
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync("/databases/b/docs?id=gone/1")).StatusCode);
        Assert.Equal(0, (await TestServer.ReadJson(await server.Http.GetAsync("/databases/b/replication/conflicts"))).GetProperty("TotalResults").GetInt32());
        Assert.Null(await ReplicationSetup.GetAsync(server.Http, "b", "gone/1"));
    }

    [Fact]
    public async Task Attachments_replicate_with_each_content_sent_once_and_streamed_and_their_references_follow_updates_and_deletes()
    {
        await using var server = await TestServer.StartWithDatabaseAsync("src");
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/admin/databases?name=dst", TestServer.Json("{\"DatabaseName\":\"dst\"}"))).StatusCode);
        var big = new byte[5 * 1024 * 1024 + 123]; // more than one 4 MiB chunk
        new Random(7).NextBytes(big);
        async Task Attach(string id, string name, byte[] content)
        {
            var r = await server.Http.PutAsync($"/databases/src/attachments?id={id}&name={name}&contentType=application/octet-stream", new ByteArrayContent(content));
            Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        }
        for (int i = 1; i <= 3; i++)
            await ReplicationSetup.PutAsync(server.Http, "src", $"users/{i}", """{"@metadata":{"@collection":"Users"}}""");
        await Attach("users/1", "a.txt", "hello"u8.ToArray());
        await Attach("users/2", "b.txt", "hello"u8.ToArray()); // the same content: one hash
        await Attach("users/3", "big.bin", big);
        await ReplicationSetup.ExternalAsync(server.Http, "src", server.Url, "dst");

        async Task<JsonElement> Stats(string db) => await TestServer.ReadJson(await server.Http.GetAsync($"/databases/{db}/stats"));
        await Eventually.HoldsAsync(async () => (await Stats("dst")).GetProperty("CountOfAttachments").GetInt64() == 3, "three attachments on dst",
            state: async () => (await Stats("dst")).ToString());
        Assert.Equal(2, (await Stats("dst")).GetProperty("CountOfUniqueAttachments").GetInt64());
        Assert.Equal(big, await server.Http.GetByteArrayAsync("/databases/dst/attachments?id=users/3&name=big.bin"));
        Assert.Equal("hello"u8.ToArray(), await server.Http.GetByteArrayAsync("/databases/dst/attachments?id=users/2&name=b.txt"));
        var incoming = (await Stats("dst")).GetProperty("Replication").GetProperty("Incoming")[0];
        Assert.Equal(2, incoming.GetProperty("AttachmentContentsReceived").GetInt64());
        Assert.Equal(big.Length + 5, incoming.GetProperty("AttachmentBytesReceived").GetInt64());
        var copy = (await ReplicationSetup.GetAsync(server.Http, "dst", "users/3"))!.Value;
        Assert.Equal("HasAttachments", copy.GetProperty("@metadata").GetProperty("@flags").GetString());

        // Removing an attachment and a document at the source releases their contents on the destination.
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync("/databases/src/attachments?id=users/1&name=a.txt")).StatusCode);
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync("/databases/src/docs?id=users/3")).StatusCode);
        await Eventually.HoldsAsync(async () => (await Stats("dst")).GetProperty("CountOfAttachments").GetInt64() == 1
            && (await Stats("dst")).GetProperty("CountOfUniqueAttachments").GetInt64() == 1, "one attachment left on dst", state: async () => (await Stats("dst")).ToString());
        Assert.Equal(2, (await Stats("dst")).GetProperty("Replication").GetProperty("Incoming")[0].GetProperty("AttachmentContentsReceived").GetInt64());
    }

    [Fact]
    public async Task Small_batches_each_asking_for_contents_while_the_next_is_in_flight_all_arrive_once()
    {
        // Two documents per batch, each with a content of its own: every batch answers Missing while the sender has
        // already sent the next one, which the destination drops and the sender sends again.
        await using var server = await TestServer.StartWithDatabaseAsync("src", o => o.ReplicationBatchItems = 2);
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/admin/databases?name=dst", TestServer.Json("{\"DatabaseName\":\"dst\"}"))).StatusCode);
        const int count = 20;
        for (int i = 0; i < count; i++)
        {
            await ReplicationSetup.PutAsync(server.Http, "src", $"files/{i}", """{"@metadata":{"@collection":"Files"}}""");
            var r = await server.Http.PutAsync($"/databases/src/attachments?id=files/{i}&name=f.bin&contentType=application/octet-stream", new ByteArrayContent(Encoding.UTF8.GetBytes("content " + i)));
            Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        }
        await ReplicationSetup.ExternalAsync(server.Http, "src", server.Url, "dst");
        async Task<JsonElement> Stats(string db) => await TestServer.ReadJson(await server.Http.GetAsync($"/databases/{db}/stats"));
        await Eventually.HoldsAsync(async () => (await Stats("dst")).GetProperty("CountOfAttachments").GetInt64() == count
            && (await TestServer.ReadJson(await server.Http.GetAsync("/databases/src/tasks"))).GetProperty("OngoingTasks")[0].GetProperty("EtagLag").GetInt64() == 0,
            "every attachment on dst", state: async () => (await Stats("dst")).ToString());
        for (int i = 0; i < count; i++)
            Assert.Equal("content " + i, await server.Http.GetStringAsync($"/databases/dst/attachments?id=files/{i}&name=f.bin"));
        var incoming = (await Stats("dst")).GetProperty("Replication").GetProperty("Incoming")[0];
        Assert.Equal(count, incoming.GetProperty("AttachmentContentsReceived").GetInt64()); // each content sent once
        Assert.Equal(JsonValueKind.Null, incoming.GetProperty("Error").ValueKind);
        Assert.Equal(count, (await Stats("dst")).GetProperty("CountOfUniqueAttachments").GetInt64());
    }

    [Fact]
    public async Task Counters_replicate_as_per_database_shares_that_merge_without_conflict_both_ways()
    {
        await using var server = await TestServer.StartWithDatabaseAsync("a");
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/admin/databases?name=b", TestServer.Json("{\"DatabaseName\":\"b\"}"))).StatusCode);
        async Task Increment(string db, string id, string name, long delta)
        {
            var body = new JsonObject { ["DocumentId"] = id, ["Operations"] = new JsonArray(new JsonObject { ["Type"] = "Increment", ["CounterName"] = name, ["Delta"] = delta }) };
            var r = await server.Http.PostAsync($"/databases/{db}/counters", TestServer.Json(new JsonObject { ["Documents"] = new JsonArray(body) }.ToJsonString()));
            Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        }
        async Task<long?> Value(string db, string id, string name)
        {
            var json = await TestServer.ReadJson(await server.Http.GetAsync($"/databases/{db}/counters?docId={id}&counter={name}"));
            var c = json.GetProperty("Counters");
            return c.GetArrayLength() == 1 && c[0].ValueKind == JsonValueKind.Object ? c[0].GetProperty("TotalValue").GetInt64() : null;
        }
        await ReplicationSetup.PutAsync(server.Http, "a", "posts/1", """{"@metadata":{"@collection":"Posts"}}""");
        await Increment("a", "posts/1", "Likes", 5);
        await ReplicationSetup.ExternalAsync(server.Http, "a", server.Url, "b");
        await ReplicationSetup.ExternalAsync(server.Http, "b", server.Url, "a");
        await Eventually.HoldsAsync(async () => await Value("b", "posts/1", "Likes") == 5, "the counter on b",
            state: async () => await server.Http.GetStringAsync("/databases/b/counters?docId=posts/1&counter=Likes") + " / a: " + await server.Http.GetStringAsync("/databases/a/counters?docId=posts/1&counter=Likes") + " / " + await server.Http.GetStringAsync("/databases/a/stats"));

        // Both sides increment at once: each keeps its own share, both end with the sum — no conflict.
        await Task.WhenAll(Increment("a", "posts/1", "Likes", 10), Increment("b", "posts/1", "Likes", 100));
        await Increment("b", "posts/1", "Views", 1);
        await Eventually.HoldsAsync(async () => await Value("a", "posts/1", "Likes") == 115 && await Value("b", "posts/1", "Likes") == 115
            && await Value("a", "posts/1", "Views") == 1, "both sides to sum the shares",
            state: async () => $"a {await Value("a", "posts/1", "Likes")} b {await Value("b", "posts/1", "Likes")} views on a {await Value("a", "posts/1", "Views")}");
        Assert.Equal(0, (await TestServer.ReadJson(await server.Http.GetAsync("/databases/a/replication/conflicts"))).GetProperty("TotalResults").GetInt32());

        // A counter deleted on one side goes on the other.
        var delete = new JsonObject { ["DocumentId"] = "posts/1", ["Operations"] = new JsonArray(new JsonObject { ["Type"] = "Delete", ["CounterName"] = "Views" }) };
        Assert.True((await server.Http.PostAsync("/databases/a/counters", TestServer.Json(new JsonObject { ["Documents"] = new JsonArray(delete) }.ToJsonString()))).IsSuccessStatusCode);
        await Eventually.HoldsAsync(async () => await Value("b", "posts/1", "Views") == null, "the deleted counter gone on b");
        Assert.Equal(115, await Value("b", "posts/1", "Likes"));
    }

    [Fact]
    public async Task Revisions_replicate_once_per_change_vector_even_where_the_destination_keeps_revisions_of_its_own()
    {
        await using var server = await TestServer.StartWithDatabaseAsync("a");
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/admin/databases?name=b", TestServer.Json("{\"DatabaseName\":\"b\"}"))).StatusCode);
        const string Config = """{"Collections":{"Users":{"Disabled":false}}}""";
        foreach (string db in new[] { "a", "b" })
            Assert.Equal(HttpStatusCode.OK, (await server.Http.PostAsync($"/databases/{db}/admin/revisions/config", TestServer.Json(Config))).StatusCode);
        for (int v = 1; v <= 3; v++)
            await ReplicationSetup.PutAsync(server.Http, "a", "users/1", "{\"V\":" + v + ",\"@metadata\":{\"@collection\":\"Users\"}}");
        await ReplicationSetup.PutAsync(server.Http, "a", "users/2", """{"V":1,"@metadata":{"@collection":"Users"}}""");
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync("/databases/a/docs?id=users/2")).StatusCode);
        await ReplicationSetup.ExternalAsync(server.Http, "a", server.Url, "b");

        async Task<List<string>> ChangeVectors(string db, string id) =>
            [.. (await TestServer.ReadJson(await server.Http.GetAsync($"/databases/{db}/revisions?id={id}"))).GetProperty("Results").EnumerateArray()
                .Select(r => r.GetProperty("@metadata").GetProperty("@change-vector").GetString()!)];
        await Eventually.HoldsAsync(async () => (await ChangeVectors("b", "users/1")).Count == 3 && (await ChangeVectors("b", "users/2")).Count == 2,
            "users/1's three revisions and users/2's two on b", state: async () => string.Join(" | ", await ChangeVectors("b", "users/1")) + " / " + string.Join(" | ", await ChangeVectors("b", "users/2")));
        Assert.Equal(await ChangeVectors("a", "users/1"), await ChangeVectors("b", "users/1"));
        Assert.Equal(await ChangeVectors("a", "users/2"), await ChangeVectors("b", "users/2"));
        var oldest = (await TestServer.ReadJson(await server.Http.GetAsync("/databases/b/revisions?id=users/1"))).GetProperty("Results")[2];
        Assert.Equal(1, oldest.GetProperty("V").GetInt32());
        // A revision is found by its change vector on the destination too.
        string cv = oldest.GetProperty("@metadata").GetProperty("@change-vector").GetString()!;
        var byCv = await TestServer.ReadJson(await server.Http.GetAsync($"/databases/b/revisions?changeVector={Uri.EscapeDataString(cv)}"));
        Assert.Equal(1, byCv.GetProperty("Results")[0].GetProperty("V").GetInt32());
    }

    [Fact]
    public async Task Time_series_merge_by_timestamp_both_ways_without_conflict_and_deleted_ranges_follow()
    {
        await using var server = await TestServer.StartWithDatabaseAsync("a");
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/admin/databases?name=b", TestServer.Json("{\"DatabaseName\":\"b\"}"))).StatusCode);
        async Task Append(string db, string json) =>
            Assert.Equal(HttpStatusCode.NoContent, (await server.Http.PostAsync($"/databases/{db}/timeseries?docId=sensors/1", TestServer.Json(json))).StatusCode);
        async Task<string> Entries(string db)
        {
            var r = await server.Http.GetAsync($"/databases/{db}/timeseries?docId=sensors/1&name=Temp");
            if (r.StatusCode == HttpStatusCode.NotFound)
                return "";
            var json = await TestServer.ReadJson(r);
            return string.Join(" ", json.GetProperty("Entries").EnumerateArray().Select(e => $"{e.GetProperty("Timestamp").GetString()![11..16]}={e.GetProperty("Values")[0].GetDouble()}"));
        }
        await ReplicationSetup.PutAsync(server.Http, "a", "sensors/1", """{"@metadata":{"@collection":"Sensors"}}""");
        await Append("a", """{"Name":"Temp","Appends":[{"Timestamp":"2026-01-01T10:00:00Z","Values":[1]},{"Timestamp":"2026-01-01T11:00:00Z","Values":[2]}]}""");
        await ReplicationSetup.ExternalAsync(server.Http, "a", server.Url, "b");
        await ReplicationSetup.ExternalAsync(server.Http, "b", server.Url, "a");
        await Eventually.HoldsAsync(async () => await Entries("b") == "10:00=1 11:00=2", "the series on b", state: () => Entries("b"));

        // Both sides write at once, one timestamp on both with different values: the larger wins on both.
        await Task.WhenAll(
            Append("a", """{"Name":"Temp","Appends":[{"Timestamp":"2026-01-01T12:00:00Z","Values":[3]},{"Timestamp":"2026-01-01T13:00:00Z","Values":[30]}]}"""),
            Append("b", """{"Name":"Temp","Appends":[{"Timestamp":"2026-01-01T13:00:00Z","Values":[40]},{"Timestamp":"2026-01-01T14:00:00Z","Values":[5]}]}"""));
        const string Merged = "10:00=1 11:00=2 12:00=3 13:00=40 14:00=5";
        await Eventually.HoldsAsync(async () => await Entries("a") == Merged && await Entries("b") == Merged, "both series merged",
            state: async () => $"a: {await Entries("a")} / b: {await Entries("b")}");

        // Settled first: a range deleted while the other side's echo of an earlier change of it is still in flight can come
        // back with the echo (docs/replication.md "Time series").
        await Eventually.HoldsAsync(async () =>
            (await TestServer.ReadJson(await server.Http.GetAsync("/databases/a/tasks"))).GetProperty("OngoingTasks")[0].GetProperty("EtagLag").GetInt64() == 0
            && (await TestServer.ReadJson(await server.Http.GetAsync("/databases/b/tasks"))).GetProperty("OngoingTasks")[0].GetProperty("EtagLag").GetInt64() == 0,
            "replication to settle");
        await Append("a", """{"Name":"Temp","Deletes":[{"From":"2026-01-01T10:30:00Z","To":"2026-01-01T12:30:00Z"}]}""");
        await Eventually.HoldsAsync(async () => await Entries("b") == "10:00=1 13:00=40 14:00=5", "the deleted range gone on b", state: () => Entries("b"));
        Assert.Equal(0, (await TestServer.ReadJson(await server.Http.GetAsync("/databases/b/replication/conflicts"))).GetProperty("TotalResults").GetInt32());
    }

    [Fact]
    public async Task Incremental_time_series_add_up_increments_made_on_both_sides_at_the_same_time()
    {
        await using var server = await TestServer.StartWithDatabaseAsync("a");
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/admin/databases?name=b", TestServer.Json("{\"DatabaseName\":\"b\"}"))).StatusCode);
        async Task Increment(string db, double delta) =>
            Assert.Equal(HttpStatusCode.NoContent, (await server.Http.PostAsync($"/databases/{db}/timeseries?docId=pages/1", TestServer.Json(
                "{\"Name\":\"INC:Views\",\"Increments\":[{\"Timestamp\":\"2026-01-01T10:00:00Z\",\"Values\":[" + delta.ToString(System.Globalization.CultureInfo.InvariantCulture) + "]}]}"))).StatusCode);
        async Task<JsonElement?> Entry(string db)
        {
            var r = await server.Http.GetAsync($"/databases/{db}/timeseries?docId=pages/1&name=INC:Views&full=true");
            return r.StatusCode == HttpStatusCode.NotFound ? null : (await TestServer.ReadJson(r)).GetProperty("Entries")[0];
        }
        async Task<double?> Value(string db) => await Entry(db) is { } e ? e.GetProperty("Values")[0].GetDouble() : null;
        await ReplicationSetup.PutAsync(server.Http, "a", "pages/1", """{"@metadata":{"@collection":"Pages"}}""");
        await Increment("a", 1);
        await ReplicationSetup.ExternalAsync(server.Http, "a", server.Url, "b");
        await ReplicationSetup.ExternalAsync(server.Http, "b", server.Url, "a");
        await Eventually.HoldsAsync(async () => await Value("b") == 1, "the first increment on b", state: async () => $"{await Entry("b")}");

        // Both sides increment the same entry at once, up and down: each side's part merges, both end with the sum
        // (the larger value would have lost 8 of them).
        await Task.WhenAll(Increment("a", 5), Increment("b", 10), Increment("b", -3));
        await Eventually.HoldsAsync(async () => await Value("a") == 13 && await Value("b") == 13, "both sides to sum every increment",
            state: async () => $"a {await Entry("a")} / b {await Entry("b")}");
        var onA = (await Entry("a"))!.Value;
        var onB = (await Entry("b"))!.Value;
        Assert.Equal(onA.GetProperty("Tag").GetString(), onB.GetProperty("Tag").GetString());
        Assert.StartsWith("TC:INC-", onA.GetProperty("Tag").GetString(), StringComparison.Ordinal);
        var parts = onA.GetProperty("NodeValues").EnumerateObject().Select(p => p.Value[0].GetDouble()).Order().ToList();
        Assert.Equal([6.0, 7.0], parts); // a's 1 + 5, b's 10 - 3
        Assert.Equal(onA.GetProperty("NodeValues").ToString(), onB.GetProperty("NodeValues").ToString());
    }
}
