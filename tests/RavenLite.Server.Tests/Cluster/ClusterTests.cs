using System.Security.Cryptography.X509Certificates;
namespace RavenLite.Server.Tests.Cluster;

/// <summary>
/// The cluster's consensus (docs/cluster.md) with real processes on loopback: three servers form a cluster through the
/// HTTP API alone, agree on its topology, elect a new leader when the leader is killed (SIGKILL), take the killed node
/// back as a follower, and forward a follower's membership change to the leader.
/// </summary>
public sealed class ClusterTests(ITestOutputHelper output) : IDisposable
{
    private readonly ClusterHarness _cluster = new();

    [Fact]
    public async Task A_database_with_replication_factor_three_is_on_every_node_and_a_write_through_one_is_read_through_the_others()
    {
        await _cluster.AppliedEverywhereAsync(await _cluster.FormAsync());

        // Created through a follower: forwarded to the leader, placed on all three through Raft.
        var created = await _cluster.Nodes[1].Http.PutAsync("/admin/databases?name=orders&replicationFactor=3", TestServer.Json("""{"DatabaseName":"orders"}"""));
        var answer = await TestServer.ReadJson(created);
        Assert.True(created.StatusCode == HttpStatusCode.Created, answer.ToString());
        Assert.Equal(["A", "B", "C"], answer.GetProperty("Topology").GetProperty("Members").EnumerateArray().Select(m => m.GetString()!).Order().ToArray());
        long index = answer.GetProperty("RaftCommandIndex").GetInt64();
        foreach (var n in _cluster.Nodes)
        {
            Assert.Equal(HttpStatusCode.OK, (await n.Http.GetAsync($"/rachis/waitfor?index={index}")).StatusCode);
            var topology = await TestServer.ReadJson(await n.Http.GetAsync("/topology?name=orders"));
            Assert.Equal(3, topology.GetProperty("Nodes").GetArrayLength());
        }
        Assert.Equal(HttpStatusCode.Conflict, (await _cluster.Nodes[0].Http.PutAsync("/admin/databases?name=orders&replicationFactor=3", null)).StatusCode);

        // A client with an older topology etag is told to refresh it; a node outside a group answers 410.
        using (var stale = new HttpRequestMessage(HttpMethod.Get, "/databases/orders/stats"))
        {
            stale.Headers.Add("Topology-Etag", "0");
            var r = await _cluster.Nodes[2].Http.SendAsync(stale);
            Assert.Equal(HttpStatusCode.OK, r.StatusCode);
            Assert.Equal("true", r.Headers.GetValues("Refresh-Topology").Single());
        }
        var pair = await TestServer.ReadJson(await _cluster.Nodes[0].Http.PutAsync("/admin/databases?name=pair&replicationFactor=2", null));
        Assert.Equal(["A", "B"], pair.GetProperty("Topology").GetProperty("Members").EnumerateArray().Select(m => m.GetString()!).ToArray());
        Assert.Equal(HttpStatusCode.OK, (await _cluster.Nodes[2].Http.GetAsync($"/rachis/waitfor?index={pair.GetProperty("RaftCommandIndex").GetInt64()}")).StatusCode);
        var gone = await _cluster.Nodes[2].Http.GetAsync("/databases/pair/stats");
        Assert.Equal(HttpStatusCode.Gone, gone.StatusCode);
        Assert.Equal("Raven.Client.Exceptions.Database.DatabaseNotRelevantException", (await TestServer.ReadJson(gone)).GetProperty("Type").GetString());

        // A write through each node is read through the two others.
        for (int i = 0; i < 3; i++)
            await ReplicationSetup.PutAsync(_cluster.Nodes[i].Http, "orders", $"orders/{i}", "{\"Via\":" + i + ",\"@metadata\":{\"@collection\":\"Orders\"}}");
        foreach (var n in _cluster.Nodes)
            for (int i = 0; i < 3; i++)
            {
                var node = n;
                int k = i;
                await Eventually.HoldsAsync(async () => (await ReplicationSetup.GetAsync(node.Http, "orders", $"orders/{k}"))?.GetProperty("Via").GetInt32() == k,
                    $"orders/{k} on {node.Url}", state: () => ClusterHarness.Describe(_cluster.Nodes));
            }
        // The same versions everywhere: one change vector per document on all three.
        for (int i = 0; i < 3; i++)
        {
            var vectors = new HashSet<string>();
            foreach (var n in _cluster.Nodes)
                vectors.Add((await ReplicationSetup.GetAsync(n.Http, "orders", $"orders/{i}"))!.Value.GetProperty("@metadata").GetProperty("@change-vector").GetString()!);
            Assert.Single(vectors);
        }
    }

    /// <summary>
    /// The cluster observer: node C stopped (SIGSTOP) beyond the rehab delay becomes Rehab of the group — listed after the
    /// members — while writes go on; resumed (SIGCONT) it catches up, becomes a Member again, and holds the same
    /// documents with the same change vectors as the others.
    /// </summary>
    [Fact]
    public async Task A_member_stopped_beyond_the_rehab_delay_becomes_rehab_and_returns_a_member_with_the_same_documents()
    {
        await _cluster.FormWithDatabaseAsync("rehab", "--ClusterRehabDelaySeconds", "2");
        var a = _cluster.Nodes[0];
        var c = _cluster.Nodes[2];
        async Task<string> Roles() => string.Join(",", (await TestServer.ReadJson(await a.Http.GetAsync("/topology?name=rehab"))).GetProperty("Nodes").EnumerateArray()
            .Select(n => n.GetProperty("ClusterTag").GetString() + ":" + n.GetProperty("ServerRole").GetString()));
        Assert.Equal("A:Member,B:Member,C:Member", await Roles());
        for (int i = 0; i < 20; i++)
            await ReplicationSetup.PutAsync(a.Http, "rehab", $"items/{i}", "{\"N\":" + i + ",\"@metadata\":{\"@collection\":\"Items\"}}");

        c.Pause();
        try
        {
            await Eventually.HoldsAsync(async () => await Roles() == "A:Member,B:Member,C:Rehab", "C to become Rehab", TimeSpan.FromSeconds(30), Roles);
            for (int i = 20; i < 40; i++)
                await ReplicationSetup.PutAsync(a.Http, "rehab", $"items/{i}", "{\"N\":" + i + ",\"@metadata\":{\"@collection\":\"Items\"}}");
        }
        finally
        {
            c.Resume();
        }
        await Eventually.HoldsAsync(async () => (await Roles()).Contains("C:Member", StringComparison.Ordinal), "C to become a Member again", TimeSpan.FromSeconds(60), Roles);
        foreach (var other in _cluster.Nodes.Skip(1))
        {
            var node = other;
            await Eventually.HoldsAsync(async () => (await DatabaseComparer.DifferencesAsync(a.Http, "rehab", node.Http, "rehab")).Count == 0,
                $"{node.Url} to hold what A holds", TimeSpan.FromSeconds(30),
                async () => string.Join("; ", (await DatabaseComparer.DifferencesAsync(a.Http, "rehab", node.Http, "rehab")).Take(5)));
        }
        Assert.Equal(40, (await TestServer.ReadJson(await c.Http.GetAsync("/databases/rehab/stats"))).GetProperty("CountOfDocuments").GetInt64());
    }

    private static RavenLite.TestKit.Linearizability.RegisterState StateOf(JsonElement results) =>
        results.GetArrayLength() == 0 ? new RavenLite.TestKit.Linearizability.RegisterState(0, null)
            : new RavenLite.TestKit.Linearizability.RegisterState(results[0].GetProperty("Index").GetInt64(), results[0].GetProperty("Value").GetProperty("Object").GetString());

    /// <summary>
    /// Jepsen-style history of compare-exchange registers: 8 clients read and index-guarded-put keys x, y, z through
    /// random nodes until <paramref name="done"/> says stop, recording each operation's invocation and completion; a read
    /// goes to another node than the client's last put (where a stale follower shows). <paramref name="faults"/> runs
    /// beside them, given the number of operations recorded so far.
    /// </summary>
    private async Task<Dictionary<string, List<RavenLite.TestKit.Linearizability.RegisterOperation>>> RecordRegistersAsync(
        string database, Func<Func<int>, Task> faults, Func<bool> done, System.Collections.Concurrent.ConcurrentDictionary<int, bool> dead)
    {
        string[] keys = ["x", "y", "z"];
        var history = keys.ToDictionary(k => k, _ => new System.Collections.Concurrent.ConcurrentQueue<RavenLite.TestKit.Linearizability.RegisterOperation>());
        var clock = System.Diagnostics.Stopwatch.StartNew();
        int Count() => history.Values.Sum(q => q.Count);
        async Task Client(int c)
        {
            var random = new Random(c);
            var known = keys.ToDictionary(k => k, _ => 0L);
            int lastPut = -1;
            using var http = new HttpClient { Timeout = TimeSpan.FromSeconds(3) };
            for (int i = 0; !done(); i++)
            {
                string key = keys[random.Next(keys.Length)];
                bool read = random.Next(2) == 0;
                int n = read && lastPut >= 0 ? (lastPut + 1 + random.Next(2)) % 3 : random.Next(3);
                if (dead.ContainsKey(n))
                {
                    await Task.Yield();
                    continue;
                }
                var url = _cluster.Nodes[n].Url;
                long invoked = clock.ElapsedTicks;
                if (read)
                {
                    try
                    {
                        var r = await http.GetAsync(new Uri(url, $"/databases/{database}/cmpxchg?key={key}"));
                        if (r.StatusCode is not (HttpStatusCode.OK or HttpStatusCode.NotFound))
                            continue; // a read that failed changed nothing
                        // 404: the key has no value (RavenDB's answer for one asked key).
                        var state = r.StatusCode == HttpStatusCode.NotFound ? new RavenLite.TestKit.Linearizability.RegisterState(0, null) : StateOf((await TestServer.ReadJson(r)).GetProperty("Results"));
                        history[key].Enqueue(RavenLite.TestKit.Linearizability.RegisterOperation.Read(state, invoked, clock.ElapsedTicks));
                        known[key] = state.Index;
                    }
                    catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
                    {
                    }
                    continue;
                }
                string value = $"{c}-{i}";
                lastPut = n;
                try
                {
                    var r = await http.PutAsync(new Uri(url, $"/databases/{database}/cmpxchg?key={key}&index={known[key]}"), TestServer.Json("{\"Object\":\"" + value + "\"}"));
                    if (r.StatusCode != HttpStatusCode.OK)
                    {
                        history[key].Enqueue(RavenLite.TestKit.Linearizability.RegisterOperation.Put(known[key], value, RavenLite.TestKit.Linearizability.Outcome.Unknown, 0, invoked, 0));
                        continue;
                    }
                    var answer = await TestServer.ReadJson(r);
                    bool ok = answer.GetProperty("Successful").GetBoolean();
                    long index = answer.GetProperty("Index").GetInt64();
                    history[key].Enqueue(RavenLite.TestKit.Linearizability.RegisterOperation.Put(known[key], value,
                        ok ? RavenLite.TestKit.Linearizability.Outcome.Ok : RavenLite.TestKit.Linearizability.Outcome.Refused, index, invoked, clock.ElapsedTicks));
                    known[key] = index;
                }
                catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
                {
                    history[key].Enqueue(RavenLite.TestKit.Linearizability.RegisterOperation.Put(known[key], value, RavenLite.TestKit.Linearizability.Outcome.Unknown, 0, invoked, 0));
                }
            }
        }
        var clients = Enumerable.Range(0, 8).Select(Client).ToList();
        await faults(Count);
        await Task.WhenAll(clients);
        return history.ToDictionary(h => h.Key, h => h.Value.ToList());
    }

    /// <summary>
    /// Linearizability as Jepsen checks it: 8 clients read and compare-and-set three keys through all three nodes while
    /// a follower is stopped (SIGSTOP) and resumed and then the leader is killed (SIGKILL); each key's history is checked
    /// with the Wing–Gong search of the test kit and none is non-linearizable.
    /// </summary>
    [Fact]
    public async Task Compare_exchange_histories_through_every_node_across_a_leader_kill_are_linearizable()
    {
        await _cluster.FormWithDatabaseAsync("lin");
        var dead = new System.Collections.Concurrent.ConcurrentDictionary<int, bool>();
        bool finished = false;
        var histories = await RecordRegistersAsync("lin", async count =>
        {
            string leaderTag = (await ClusterHarness.Topology(_cluster.Nodes[1])).GetProperty("Leader").GetString()!;
            int leader = leaderTag[0] - 'A';
            int follower = (leader + 1) % 3;
            await Eventually.HoldsAsync(() => Task.FromResult(count() >= 150), "150 operations before the first fault");
            _cluster.Nodes[follower].Pause();
            int paused = count();
            await Eventually.HoldsAsync(() => Task.FromResult(count() >= paused + 150), "150 operations with a follower stopped");
            _cluster.Nodes[follower].Resume();
            int resumed = count();
            await Eventually.HoldsAsync(() => Task.FromResult(count() >= resumed + 150), "150 operations after it resumed");
            dead[leader] = true;
            _cluster.Nodes[leader].Kill();
            int killed = count();
            await Eventually.HoldsAsync(() => Task.FromResult(count() >= killed + 150), "150 operations after the leader's kill", TimeSpan.FromSeconds(60));
            Volatile.Write(ref finished, true);
        }, () => Volatile.Read(ref finished), dead);
        foreach (var (key, list) in histories)
        {
            Assert.True(list.Count(o => o.Outcome == RavenLite.TestKit.Linearizability.Outcome.Ok) >= 10, $"only {list.Count} operations on {key}");
            if (!RavenLite.TestKit.Linearizability.RegisterChecker.IsLinearizable(list))
            {
                foreach (var op in list.OrderBy(o => o.Invoked))
                    output.WriteLine(op.ToString());
                Assert.Fail($"the history of {key} ({list.Count} operations, written to the test output) is not linearizable");
            }
        }
    }

    /// <summary>
    /// The checker catches the broken variant: with <c>ClusterReadBarrier=false</c> a follower answers compare-exchange
    /// reads from what it has applied, and a read right after a put acknowledged by the leader can miss it — recorded
    /// histories soon hold one that is not linearizable.
    /// </summary>
    [Fact]
    public async Task Reads_without_the_read_barrier_give_histories_the_checker_finds_not_linearizable()
    {
        await _cluster.FormWithDatabaseAsync("stale", "--ClusterReadBarrier=false");
        var deadline = DateTime.UtcNow.AddSeconds(60);
        int rounds = 0;
        while (true)
        {
            rounds++;
            var stop = DateTime.UtcNow.AddSeconds(3);
            var histories = await RecordRegistersAsync("stale", _ => Task.CompletedTask, () => DateTime.UtcNow >= stop, new());
            if (histories.Values.Any(h => !RavenLite.TestKit.Linearizability.RegisterChecker.IsLinearizable(h)))
                break;
            Assert.True(DateTime.UtcNow < deadline, $"{rounds} rounds of histories without the read barrier were all linearizable: the checker caught no stale read");
        }
        output.WriteLine($"a stale read was caught in round {rounds}");
    }

    /// <summary>
    /// Eight writers prefer node A and fail over to B, then C, when a request to it fails; each batch asks for write
    /// assurance (one replica). A is killed (SIGKILL) under the load: every write acknowledged — before the kill or after
    /// — is on both survivors.
    /// </summary>
    [Fact]
    public async Task Writes_acknowledged_with_one_replica_survive_the_kill_of_the_node_the_writers_prefer()
    {
        await _cluster.FormWithDatabaseAsync("wa");

        var acknowledged = new System.Collections.Concurrent.ConcurrentBag<string>();
        int afterKill = 0;
        bool killed = false;
        var deadline = DateTime.UtcNow.AddSeconds(60);
        async Task Writer(int w)
        {
            using var http = new HttpClient { Timeout = TimeSpan.FromSeconds(10) };
            int preferred = 0;
            for (int i = 0; DateTime.UtcNow < deadline && !(Volatile.Read(ref killed) && Volatile.Read(ref afterKill) >= 200); i++)
            {
                string id = $"writes/{w}-{i}";
                string body = "{\"Commands\":[{\"Type\":\"PUT\",\"Id\":\"" + id + "\",\"Document\":{\"W\":" + w + ",\"@metadata\":{\"@collection\":\"Writes\"}}}]}";
                try
                {
                    var r = await http.PostAsync(new Uri(_cluster.Nodes[preferred].Url, "/databases/wa/bulk_docs?waitForReplicasTimeout=00:00:10&numberOfReplicasToWaitFor=1&throwOnTimeoutInWaitForReplicas=true"), TestServer.Json(body));
                    if (r.StatusCode == HttpStatusCode.Created)
                    {
                        acknowledged.Add(id);
                        if (Volatile.Read(ref killed))
                            Interlocked.Increment(ref afterKill);
                    }
                }
                catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
                {
                    preferred = (preferred + 1) % 3; // fail over, as the clients do
                }
            }
        }
        var writers = Enumerable.Range(0, 8).Select(Writer).ToList();
        await Eventually.HoldsAsync(() => Task.FromResult(acknowledged.Count >= 200), "200 writes before the kill");
        _cluster.Nodes[0].Kill();
        Volatile.Write(ref killed, true);
        await Task.WhenAll(writers);
        Assert.True(afterKill >= 200, $"only {afterKill} writes were acknowledged after A was killed; {acknowledged.Count} in all");

        foreach (var survivor in _cluster.Nodes.Skip(1))
        {
            var node = survivor;
            async Task<string> Missing()
            {
                var held = await DatabaseComparer.ReadAllAsync(node.Http, "wa");
                var missing = acknowledged.Where(id => !held.ContainsKey(id)).ToList();
                return missing.Count == 0 ? "" : $"{missing.Count} of {acknowledged.Count} acknowledged writes missing on {node.Url}, e.g. {missing[0]}";
            }
            await Eventually.HoldsAsync(async () => await Missing() == "", $"every acknowledged write on {node.Url}", TimeSpan.FromSeconds(30), Missing);
        }
    }

    /// <summary>
    /// tests/node-client/cluster.mjs: RavenDB's Node client given the three URLs creates a replication-factor-3 database,
    /// writes with write assurance and reads round-robin (its sessions read from all three nodes), then kills node A
    /// (SIGKILL) and goes on through the others, and runs cluster-wide session transactions (a stale one refused).
    /// </summary>
    [Fact]
    public async Task The_official_node_client_fails_over_when_the_node_it_prefers_is_killed()
    {
        await _cluster.AppliedEverywhereAsync(await _cluster.FormAsync());
        string[] args = ["cluster.mjs", "shop", _cluster.Nodes[0].ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture), .. _cluster.Nodes.Select(n => n.Url.ToString().TrimEnd('/'))];
        var (code, stdout, stderr) = await Compatibility.NodeClientTests.RunScriptAsync(output, args, new Dictionary<string, string>());
        Assert.True(code == 0 && stdout.Contains("cluster: ok", StringComparison.Ordinal), $"cluster.mjs exited {code}:\n{stdout}\n{stderr}");
        // Every write, before and after the kill, is on both survivors.
        foreach (var n in _cluster.Nodes.Skip(1))
            await Eventually.HoldsAsync(async () => (await TestServer.ReadJson(await n.Http.GetAsync("/databases/shop/stats"))).GetProperty("CountOfDocuments").GetInt64() == 61,
                $"61 orders on {n.Url}");
    }

    /// <summary>
    /// Compare-exchange and identities of a group's database go through Raft: four clients put new keys and take
    /// identities through all three nodes while the leader is killed (SIGKILL); every put acknowledged as successful is,
    /// afterwards, on every node — the killed one too, once back — with the index it was acknowledged with, no two share
    /// an index, and no identity value is handed out twice.
    /// </summary>
    [Fact]
    public async Task Compare_exchange_puts_and_identities_acknowledged_while_the_leader_is_killed_hold_on_every_node()
    {
        await _cluster.FormWithDatabaseAsync("kv");

        var acknowledged = new System.Collections.Concurrent.ConcurrentDictionary<string, long>();
        var identities = new System.Collections.Concurrent.ConcurrentBag<long>();
        var dead = new System.Collections.Concurrent.ConcurrentDictionary<NodeProcess, bool>();
        int afterKill = 0;
        bool killed = false;
        var deadline = DateTime.UtcNow.AddSeconds(60);
        async Task Worker(int w)
        {
            using var http = new HttpClient { Timeout = TimeSpan.FromSeconds(5) };
            for (int i = 0; DateTime.UtcNow < deadline && !(killed && Volatile.Read(ref afterKill) >= 40); i++)
            {
                var node = _cluster.Nodes[(w + i) % 3];
                if (dead.ContainsKey(node))
                    continue;
                string key = $"k{w}-{i}";
                try
                {
                    if (i % 3 == 2)
                    {
                        var id = await http.PostAsync(new Uri(node.Url, "/databases/kv/identity/next?name=orders"), null);
                        if (id.StatusCode == HttpStatusCode.OK)
                            identities.Add((await TestServer.ReadJson(id)).GetProperty("NewIdentityValue").GetInt64());
                        continue;
                    }
                    var r = await http.PutAsync(new Uri(node.Url, $"/databases/kv/cmpxchg?key={key}&index=0"), TestServer.Json("{\"Object\":{\"v\":" + i + "}}"));
                    if (r.StatusCode != HttpStatusCode.OK)
                        continue; // not acknowledged (no leader for a moment, a node going down)
                    var body = await TestServer.ReadJson(r);
                    Assert.True(body.GetProperty("Successful").GetBoolean(), $"a new key {key} was refused: {body}");
                    acknowledged[key] = body.GetProperty("Index").GetInt64();
                    if (Volatile.Read(ref killed))
                        Interlocked.Increment(ref afterKill);
                }
                catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
                {
                    // not acknowledged
                }
            }
        }
        var workers = Enumerable.Range(0, 4).Select(Worker).ToList();
        await Eventually.HoldsAsync(() => Task.FromResult(acknowledged.Count >= 30), "30 puts before the kill");
        string leaderTag = (await ClusterHarness.Topology(_cluster.Nodes[0])).GetProperty("Leader").GetString()!;
        var leader = _cluster.Nodes[leaderTag[0] - 'A'];
        dead[leader] = true;
        leader.Kill();
        Volatile.Write(ref killed, true);
        await Task.WhenAll(workers);
        Assert.True(afterKill >= 40, $"only {afterKill} puts were acknowledged after the leader ({leaderTag}) was killed; {acknowledged.Count} in all");
        Assert.Equal(acknowledged.Count, acknowledged.Values.Distinct().Count()); // each put its own Raft index
        Assert.True(identities.Count >= 10, $"{identities.Count} identities taken");
        Assert.Equal(identities.Count, identities.Distinct().Count()); // none handed out twice

        await leader.RestartAsync();
        foreach (var n in _cluster.Nodes)
        {
            var node = n;
            async Task<string> Missing()
            {
                var listed = await TestServer.ReadJson(await node.Http.GetAsync("/databases/kv/cmpxchg?startsWith=k&pageSize=100000"));
                var found = listed.GetProperty("Results").EnumerateArray().ToDictionary(e => e.GetProperty("Key").GetString()!, e => e.GetProperty("Index").GetInt64());
                var missing = acknowledged.Where(a => !found.TryGetValue(a.Key, out long index) || index != a.Value).Select(a => a.Key).ToList();
                return missing.Count == 0 ? "" : $"{missing.Count} of {acknowledged.Count} missing or different on {node.Url}, e.g. {missing[0]}";
            }
            await Eventually.HoldsAsync(async () =>
            {
                try
                {
                    return await Missing() == "";
                }
                catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
                {
                    return false;
                }
            }, $"every acknowledged put on {node.Url}", TimeSpan.FromSeconds(30), Missing);
        }
    }

    [Fact]
    public async Task Three_servers_form_a_cluster_through_the_http_api_and_elect_a_new_leader_when_the_leader_is_killed()
    {
        for (int i = 0; i < 3; i++)
            _cluster.Nodes.Add(await NodeProcess.StartAsync(Path.Combine(_cluster.Root, "n" + i), "A"));
        var a = _cluster.Nodes[0];

        // Each server alone is a cluster of one that it leads.
        var alone = await ClusterHarness.Topology(_cluster.Nodes[1]);
        Assert.Equal("Leader", alone.GetProperty("CurrentState").GetString());

        // The first server adds the others by URL; each gets the next tag.
        var added = new List<long>();
        foreach (var (node, tag) in new[] { (_cluster.Nodes[1], "B"), (_cluster.Nodes[2], "C") })
        {
            var r = await a.Http.PutAsync($"/admin/cluster/node?url={Uri.EscapeDataString(node.Url.ToString().TrimEnd('/'))}&watcher=false", null);
            var body = await TestServer.ReadJson(r);
            Assert.True(r.IsSuccessStatusCode, body.ToString());
            Assert.Equal(tag, body.GetProperty("Tag").GetString());
            added.Add(body.GetProperty("RaftCommandIndex").GetInt64());
        }
        // Every node applies the last change (rachis/waitfor) and then agrees on the topology.
        foreach (var n in _cluster.Nodes)
            Assert.Equal(HttpStatusCode.OK, (await n.Http.GetAsync($"/rachis/waitfor?index={added[^1]}")).StatusCode);
        string[] all = ["A", "B", "C"];
        await Eventually.HoldsAsync(() => ClusterHarness.AgreeAsync(_cluster.Nodes, all, l => l == "A"), "all three to agree that A leads A, B, C", state: () => ClusterHarness.Describe(_cluster.Nodes));
        var topologyIds = new HashSet<string>();
        foreach (var n in _cluster.Nodes)
            topologyIds.Add((await ClusterHarness.Topology(n)).GetProperty("Topology").GetProperty("TopologyId").GetString()!);
        Assert.Single(topologyIds);
        Assert.Equal("B", (await ClusterHarness.Topology(_cluster.Nodes[1])).GetProperty("NodeTag").GetString());

        // A node of a cluster with other nodes refuses to join another.
        var refused = await _cluster.Nodes[1].Http.PostAsync("/admin/cluster/join?tag=Z&leader=http://127.0.0.1:1", null);
        Assert.Equal(HttpStatusCode.BadRequest, refused.StatusCode);

        // Kill -9 the leader: the two others elect one of themselves.
        a.Kill();
        var survivors = _cluster.Nodes.Skip(1).ToList();
        await Eventually.HoldsAsync(() => ClusterHarness.AgreeAsync(survivors, all, l => l != "A"), "B and C to elect a new leader", TimeSpan.FromSeconds(30), () => ClusterHarness.Describe(survivors));
        long term = (await ClusterHarness.Topology(_cluster.Nodes[1])).GetProperty("CurrentTerm").GetInt64();
        Assert.True(term >= 1, $"term {term}");

        // The killed node comes back as a follower of the new leader.
        await a.RestartAsync();
        await Eventually.HoldsAsync(() => ClusterHarness.AgreeAsync(_cluster.Nodes, all, l => l != "A"), "A to rejoin as a follower", TimeSpan.FromSeconds(30), () => ClusterHarness.Describe(_cluster.Nodes));
        Assert.Equal("Follower", (await ClusterHarness.Topology(a)).GetProperty("CurrentState").GetString());

        // A membership change sent to a follower is forwarded to the leader.
        var byTag = new Dictionary<string, NodeProcess> { ["A"] = _cluster.Nodes[0], ["B"] = _cluster.Nodes[1], ["C"] = _cluster.Nodes[2] };
        string leaderTag = (await ClusterHarness.Topology(a)).GetProperty("Leader").GetString()!;
        var followers = all.Where(t => t != leaderTag).ToArray(); // A and one other
        string removed = followers.First(t => t != "A");
        var del = await a.Http.DeleteAsync($"/admin/cluster/node?nodeTag={removed}");
        Assert.True(del.IsSuccessStatusCode, await del.Content.ReadAsStringAsync());
        string[] left = all.Where(t => t != removed).ToArray();
        var remaining = left.Select(t => byTag[t]).ToList();
        await Eventually.HoldsAsync(() => ClusterHarness.AgreeAsync(remaining, left, l => l == leaderTag), $"A and {leaderTag} to drop {removed}", state: () => ClusterHarness.Describe(remaining));
    }

    private static async Task<(HttpStatusCode Status, JsonElement Body)> ClusterWideAsync(NodeProcess node, string database, string commands)
    {
        var r = await node.Http.PostAsync($"/databases/{database}/bulk_docs", TestServer.Json("{\"TransactionMode\":\"ClusterWide\",\"Commands\":" + commands + "}"));
        return (r.StatusCode, await TestServer.ReadJson(r));
    }

    /// <summary>
    /// A cluster-wide transaction of a group's database is decided through Raft: sent through a follower, its document
    /// is written by every member with the transaction's RAFT entry and its compare-exchange value holds the transaction's
    /// index everywhere; of two sessions that loaded the same version, the first to commit wins whichever node each
    /// asks, and the other is refused (atomic guard), as is a session that expected the document to be new; identity
    /// ids (<c>items|</c>) take the cluster's identity through any node.
    /// </summary>
    [Fact]
    public async Task A_cluster_wide_transaction_is_decided_through_raft_and_written_by_every_member()
    {
        await _cluster.FormWithDatabaseAsync("shop");
        var (status, first) = await ClusterWideAsync(_cluster.Nodes[1], "shop",
            """[{"Type":"PUT","Id":"users/1","ChangeVector":null,"Document":{"Name":"Ann","@metadata":{"@collection":"Users"}}},{"Type":"CompareExchangePUT","Id":"emails/ann","Index":0,"Document":{"Object":"users/1"}}]""");
        Assert.True(status == HttpStatusCode.Created, first.ToString());
        long index = first.GetProperty("TransactionIndex").GetInt64();
        string loaded = first.GetProperty("Results")[0].GetProperty("@change-vector").GetString()!;
        Assert.Contains($"RAFT:{index}-", loaded, StringComparison.Ordinal);
        Assert.Equal(index, first.GetProperty("Results")[1].GetProperty("Index").GetInt64());
        await _cluster.AppliedEverywhereAsync(index);
        foreach (var n in _cluster.Nodes)
        {
            var doc = await ReplicationSetup.GetAsync(n.Http, "shop", "users/1");
            Assert.True(doc.HasValue, $"users/1 on {n.Url}");
            Assert.Equal("Ann", doc.Value.GetProperty("Name").GetString());
            Assert.Contains($"RAFT:{index}-", doc.Value.GetProperty("@metadata").GetProperty("@change-vector").GetString(), StringComparison.Ordinal);
            var value = await TestServer.ReadJson(await n.Http.GetAsync("/databases/shop/cmpxchg?key=emails/ann"));
            Assert.Equal(index, value.GetProperty("Results")[0].GetProperty("Index").GetInt64());
        }

        // Two sessions loaded that version: the one committing first (through C) wins; the other (through A) is refused.
        string put(string name, string? original) =>
            "[{\"Type\":\"PUT\",\"Id\":\"users/1\",\"ChangeVector\":null" + (original == null ? "" : ",\"OriginalChangeVector\":\"" + original + "\"")
            + ",\"Document\":{\"Name\":\"" + name + "\",\"@metadata\":{\"@collection\":\"Users\"}}}]";
        var (wonStatus, won) = await ClusterWideAsync(_cluster.Nodes[2], "shop", put("Bea", loaded));
        Assert.True(wonStatus == HttpStatusCode.Created, won.ToString());
        var (lostStatus, lost) = await ClusterWideAsync(_cluster.Nodes[0], "shop", put("Cid", loaded));
        Assert.Equal(HttpStatusCode.Conflict, lostStatus);
        Assert.Contains("ClusterTransactionConcurrency", lost.GetProperty("Type").GetString(), StringComparison.Ordinal);
        var (newStatus, _) = await ClusterWideAsync(_cluster.Nodes[0], "shop", put("Dan", null));
        Assert.Equal(HttpStatusCode.Conflict, newStatus);
        var (takenStatus, _) = await ClusterWideAsync(_cluster.Nodes[0], "shop", """[{"Type":"CompareExchangePUT","Id":"emails/ann","Index":0,"Document":{"Object":"users/2"}}]""");
        Assert.Equal(HttpStatusCode.Conflict, takenStatus);
        var (badId, _) = await ClusterWideAsync(_cluster.Nodes[0], "shop", """[{"Type":"PUT","Id":"users/","Document":{"@metadata":{"@collection":"Users"}}}]""");
        Assert.Equal(HttpStatusCode.BadRequest, badId);

        // Identity ids (items|) take the cluster's identity whichever node is asked: never the same id twice.
        var ids = new List<string>();
        foreach (var n in _cluster.Nodes)
        {
            var batch = await n.Http.PostAsync("/databases/shop/bulk_docs", TestServer.Json("""{"Commands":[{"Type":"PUT","Id":"items|","Document":{"@metadata":{"@collection":"Items"}}}]}"""));
            ids.Add((await TestServer.ReadJson(batch)).GetProperty("Results")[0].GetProperty("@id").GetString()!);
            var single = await n.Http.PutAsync("/databases/shop/docs?id=items|", TestServer.Json("""{"@metadata":{"@collection":"Items"}}"""));
            ids.Add((await TestServer.ReadJson(single)).GetProperty("Id").GetString()!);
        }
        var (cwStatus, cw) = await ClusterWideAsync(_cluster.Nodes[2], "shop", """[{"Type":"PUT","Id":"items|","Document":{"@metadata":{"@collection":"Items"}}}]""");
        Assert.True(cwStatus == HttpStatusCode.Created, cw.ToString());
        ids.Add(cw.GetProperty("Results")[0].GetProperty("@id").GetString()!);
        Assert.Equal(7, ids.Distinct(StringComparer.OrdinalIgnoreCase).Count());
        Assert.All(ids, id => Assert.Matches("^items/[0-9]+$", id));

        // Every member converges on the winner, with one change vector (the members' writes of one transaction agree).
        await Eventually.HoldsAsync(async () =>
        {
            var vectors = new HashSet<string>();
            foreach (var n in _cluster.Nodes)
            {
                var doc = await ReplicationSetup.GetAsync(n.Http, "shop", "users/1");
                if (doc?.GetProperty("Name").GetString() != "Bea")
                    return false;
                vectors.Add(doc.Value.GetProperty("@metadata").GetProperty("@change-vector").GetString()!);
            }
            return vectors.Count == 1;
        }, "users/1 to be Bea with one change vector on every node", state: () => ClusterHarness.Describe(_cluster.Nodes));
        foreach (var n in _cluster.Nodes)
        {
            var conflicts = await TestServer.ReadJson(await n.Http.GetAsync("/databases/shop/stats"));
            Assert.Equal(0, conflicts.GetProperty("CountOfDocumentsConflicts").GetInt64());
        }
    }

    /// <summary>
    /// The record of a group's database is Raft state: an index defined through one follower, the revisions configuration
    /// set through the other and the conflict solver through the leader apply on every member; each member builds its
    /// own index and answers queries from it; a member that was down (SIGKILL) while an index was deleted and another
    /// defined catches up when it comes back.
    /// </summary>
    [Fact]
    public async Task Index_definitions_and_configurations_of_a_group_database_apply_on_every_member()
    {
        await _cluster.FormWithDatabaseAsync("books");
        async Task<long> Changed(HttpResponseMessage r)
        {
            var body = await TestServer.ReadJson(r);
            Assert.True(r.IsSuccessStatusCode, body.ToString());
            return body.TryGetProperty("Results", out var results) ? results[0].GetProperty("RaftCommandIndex").GetInt64() : body.GetProperty("RaftCommandIndex").GetInt64();
        }
        await Changed(await _cluster.Nodes[1].Http.PutAsync("/databases/books/admin/indexes",
            TestServer.Json("""{"Indexes":[{"Name":"Books/ByAuthor","Maps":["from b in docs.Books select new { b.Author }"]}]}""")));
        long revisionsIndex = await Changed(await _cluster.Nodes[2].Http.PostAsync("/databases/books/admin/revisions/config",
            TestServer.Json("""{"Default":{"Disabled":false,"MinimumRevisionsToKeep":5}}""")));
        // Known-Raft-Index: read through another node, answered once that node applied the change.
        using (var known = new HttpRequestMessage(HttpMethod.Get, "/databases/books/revisions/config"))
        {
            known.Headers.Add("Known-Raft-Index", revisionsIndex.ToString(System.Globalization.CultureInfo.InvariantCulture));
            var seen = await TestServer.ReadJson(await _cluster.Nodes[1].Http.SendAsync(known));
            Assert.Equal(5, seen.GetProperty("Default").GetProperty("MinimumRevisionsToKeep").GetInt32());
        }
        using (var bad = new HttpRequestMessage(HttpMethod.Get, "/databases/books/revisions/config"))
        {
            bad.Headers.Add("Known-Raft-Index", "soon");
            Assert.Equal(HttpStatusCode.BadRequest, (await _cluster.Nodes[1].Http.SendAsync(bad)).StatusCode);
        }
        long last = await Changed(await _cluster.Nodes[0].Http.PostAsync("/admin/replication/conflicts/solver?name=books", TestServer.Json("""{"ResolveToLatest":true}""")));
        await _cluster.AppliedEverywhereAsync(last);
        await ReplicationSetup.PutAsync(_cluster.Nodes[0].Http, "books", "books/1", """{"Author":"Le Guin","@metadata":{"@collection":"Books"}}""");
        foreach (var n in _cluster.Nodes)
        {
            var node = n;
            await Eventually.HoldsAsync(async () => (await ReplicationSetup.GetAsync(node.Http, "books", "books/1")) != null, $"books/1 on {node.Url}");
            var query = await TestServer.ReadJson(await n.Http.PostAsync("/databases/books/queries?waitForNonStaleResultsTimeout=00:00:30",
                TestServer.Json("""{"Query":"from index 'Books/ByAuthor' where Author = 'Le Guin'","WaitForNonStaleResults":true}""")));
            Assert.Equal("Books/ByAuthor", query.GetProperty("IndexName").GetString());
            Assert.Equal(1, query.GetProperty("Results").GetArrayLength());
            var revisions = await TestServer.ReadJson(await n.Http.GetAsync("/databases/books/revisions/config"));
            Assert.Equal(5, revisions.GetProperty("Default").GetProperty("MinimumRevisionsToKeep").GetInt32());
        }

        // The index's lock mode, the client configuration, the time-series configuration and the settings, each asked of
        // a different node, hold on every member too.
        Assert.Equal(HttpStatusCode.NoContent, (await _cluster.Nodes[2].Http.PostAsync("/databases/books/indexes/set-lock",
            TestServer.Json("""{"IndexNames":["Books/ByAuthor"],"Mode":"LockedIgnore"}"""))).StatusCode);
        Assert.Equal(HttpStatusCode.NoContent, (await _cluster.Nodes[1].Http.PutAsync("/databases/books/admin/configuration/client",
            TestServer.Json("""{"MaxNumberOfRequestsPerSession":77,"Disabled":false}"""))).StatusCode);
        last = await Changed(await _cluster.Nodes[0].Http.PutAsync("/databases/books/admin/timeseries/policy?collection=Books",
            TestServer.Json("""{"Name":"ByHour","RetentionTime":{"Value":604800,"Unit":"Second"},"AggregationTime":{"Value":3600,"Unit":"Second"}}""")));
        Assert.Equal(HttpStatusCode.NoContent, (await _cluster.Nodes[2].Http.PutAsync("/databases/books/admin/configuration/settings",
            TestServer.Json("""{"MergerMaxOperations":"500"}"""))).StatusCode);
        foreach (var n in _cluster.Nodes)
        {
            var node = n;
            await Eventually.HoldsAsync(async () =>
            {
                var record = (await TestServer.ReadJson(await node.Http.GetAsync("/admin/databases?name=books"))).ToString();
                var client = (await TestServer.ReadJson(await node.Http.GetAsync("/databases/books/configuration/client"))).ToString();
                var series = (await TestServer.ReadJson(await node.Http.GetAsync("/databases/books/timeseries/config"))).ToString();
                var index = (await TestServer.ReadJson(await node.Http.GetAsync("/databases/books/indexes?name=Books/ByAuthor"))).ToString();
                return record.Contains("\"MergerMaxOperations\":\"500\"", StringComparison.Ordinal) && client.Contains("77", StringComparison.Ordinal)
                    && series.Contains("ByHour", StringComparison.Ordinal) && index.Contains("LockedIgnore", StringComparison.Ordinal);
            }, $"the settings, client, time-series and index lock changes on {node.Url}", state: () => ClusterHarness.Describe(_cluster.Nodes));
        }

        // C is down while the index is deleted, another defined and the server-wide client configuration set; back up,
        // it applies all three.
        _cluster.Nodes[2].Kill();
        Assert.Equal(HttpStatusCode.NoContent, (await _cluster.Nodes[1].Http.PutAsync("/admin/configuration/client",
            TestServer.Json("""{"MaxNumberOfRequestsPerSession":55,"Disabled":false}"""))).StatusCode);
        var deleted = await _cluster.Nodes[0].Http.DeleteAsync("/databases/books/indexes?name=Books/ByAuthor");
        Assert.Equal(HttpStatusCode.NoContent, deleted.StatusCode);
        last = await Changed(await _cluster.Nodes[1].Http.PutAsync("/databases/books/admin/indexes",
            TestServer.Json("""{"Indexes":[{"Name":"Books/ByTitle","Maps":["from b in docs.Books select new { b.Title }"]}]}""")));
        await _cluster.Nodes[2].RestartAsync();
        await _cluster.AppliedEverywhereAsync(last);
        foreach (var n in _cluster.Nodes)
        {
            var names = (await TestServer.ReadJson(await n.Http.GetAsync("/databases/books/indexes"))).GetProperty("Results").EnumerateArray()
                .Select(i => i.GetProperty("Name").GetString()!).ToArray();
            Assert.Equal(["Books/ByTitle"], names);
            var node = n;
            await Eventually.HoldsAsync(async () => (await TestServer.ReadJson(await node.Http.GetAsync("/configuration/client"))).ToString().Contains("55", StringComparison.Ordinal),
                $"the server-wide client configuration set through B on {node.Url}");
        }
        Assert.Equal(HttpStatusCode.NotFound, (await _cluster.Nodes[0].Http.DeleteAsync("/databases/books/indexes?name=Books/ByAuthor")).StatusCode);
    }

    /// <summary>How many GET requests for documents of any database <paramref name="node"/> has answered (its <c>/metrics</c>).</summary>
    private static Task<long> DocumentReadsAsync(NodeProcess node) => RequestsAsync(node, "GET", "/databases/{db}/docs");

    /// <summary>How many session batches (<c>POST /databases/{db}/bulk_docs</c>) <paramref name="node"/> has answered since it started.</summary>
    private static Task<long> BatchesAsync(NodeProcess node) => RequestsAsync(node, "POST", "/databases/{db}/bulk_docs");

    /// <summary>How many <paramref name="method"/> requests to <paramref name="route"/> <paramref name="node"/> has answered (its <c>/metrics</c>).</summary>
    private static async Task<long> RequestsAsync(NodeProcess node, string method, string route)
    {
        long total = 0;
        foreach (string line in (await node.Http.GetStringAsync("/metrics")).Split('\n'))
            if (line.StartsWith("http_server_request_duration_seconds_count{", StringComparison.Ordinal)
                && line.Contains($"http_request_method=\"{method}\"", StringComparison.Ordinal) && line.Contains($"http_route=\"{route}\"", StringComparison.Ordinal))
                total += long.Parse(line[(line.LastIndexOf(' ') + 1)..], System.Globalization.CultureInfo.InvariantCulture);
        return total;
    }

    private sealed class Person
    {
        public string? Id { get; set; }

        public string? Name { get; set; }
    }

    /// <summary>
    /// Our .NET client's cluster flow: given the three URLs it reads the group's topology; with RoundRobin its reads go
    /// to every node in turn; a cluster-wide session stores a document with a compare-exchange value, and of two
    /// cluster-wide sessions that loaded the same version the second to save is refused; when the node it prefers is
    /// killed, its writes, reads and changes fail over to the others, and once it is back its writes go to it again.
    /// </summary>
    [Fact]
    public async Task The_dotnet_client_reads_round_robin_runs_cluster_wide_sessions_and_fails_over()
    {
        await _cluster.FormWithDatabaseAsync("people");
        using var store = new RavenLite.Client.DocumentStore
        {
            Urls = [.. _cluster.Nodes.Select(n => n.Url.ToString())],
            Database = "people",
            Conventions = { ReadBalanceBehavior = RavenLite.Client.Http.ReadBalanceBehavior.RoundRobin },
        }.Initialize();
        using (var session = store.OpenAsyncSession())
        {
            await session.StoreAsync(new Person { Name = "Ann" }, "people/1");
            await session.SaveChangesAsync();
        }
        foreach (var n in _cluster.Nodes)
        {
            var node = n;
            await Eventually.HoldsAsync(async () => (await ReplicationSetup.GetAsync(node.Http, "people", "people/1")) != null, $"people/1 on {node.Url}");
        }
        var before = new List<long>();
        foreach (var n in _cluster.Nodes)
            before.Add(await DocumentReadsAsync(n));
        for (int i = 0; i < 6; i++)
        {
            using var session = store.OpenAsyncSession();
            Assert.Equal("Ann", (await session.LoadAsync<Person>("people/1"))!.Name);
        }
        for (int i = 0; i < _cluster.Nodes.Count; i++)
        {
            var node = _cluster.Nodes[i];
            long was = before[i];
            // /metrics answers may be cached for a moment: wait for this node's count to show the reads.
            await Eventually.HoldsAsync(async () => await DocumentReadsAsync(node) - was >= 2, $"node {node.Url} to have served two of the six round-robin reads");
        }

        var clusterWide = new RavenLite.Client.Session.SessionOptions { TransactionMode = RavenLite.Client.Session.TransactionMode.ClusterWide };
        using (var session = store.OpenAsyncSession(clusterWide))
        {
            await session.StoreAsync(new Person { Name = "Bea" }, "people/2");
            session.Advanced.ClusterTransaction.CreateCompareExchangeValue("names/bea", "people/2");
            await session.SaveChangesAsync();
        }
        // Every member writes a cluster-wide transaction when it applies it; round-robin loads may go to any of them.
        foreach (var n in _cluster.Nodes)
        {
            var node = n;
            await Eventually.HoldsAsync(async () => (await ReplicationSetup.GetAsync(node.Http, "people", "people/2")) != null, $"people/2 on {node.Url}");
        }
        using (var first = store.OpenAsyncSession(clusterWide))
        using (var second = store.OpenAsyncSession(clusterWide))
        {
            var a = await first.LoadAsync<Person>("people/2");
            var b = await second.LoadAsync<Person>("people/2");
            a!.Name = "Bea (first)";
            b!.Name = "Bea (second)";
            await first.SaveChangesAsync();
            await Assert.ThrowsAsync<RavenLite.Client.Exceptions.ClusterTransactionConcurrencyException>(() => second.SaveChangesAsync());
        }

        // The preferred node (the first member) dies: writes and reads go on through the others, and the changes API
        // reconnects to another node.
        using var changes = store.Changes();
        await changes.EnsureConnectedNow();
        var changed = new System.Collections.Concurrent.ConcurrentQueue<string>();
        var observed = changes.ForAllDocuments();
        using var watching = RavenLite.Client.Changes.ChangesObservableExtensions.Subscribe(observed, c => changed.Enqueue(c.Id));
        await observed.EnsureSubscribedNow();
        _cluster.Nodes[0].Kill();
        using (var session = store.OpenAsyncSession())
        {
            await session.StoreAsync(new Person { Name = "Cid" }, "people/3");
            await session.SaveChangesAsync();
        }
        int pings = 0;
        await Eventually.HoldsAsync(async () =>
        {
            if (changed.Any(id => id == "people/3" || id.StartsWith("people/ping-", StringComparison.Ordinal)))
                return true;
            using var session = store.OpenAsyncSession(); // another write, until the changes connection is back
            await session.StoreAsync(new Person { Name = "ping" }, $"people/ping-{pings++}");
            await session.SaveChangesAsync();
            return false;
        }, "the changes API to report a write made after the kill, through another node");
        using (var session = store.OpenAsyncSession())
        {
            Assert.Equal("Cid", (await session.LoadAsync<Person>("people/3"))!.Name);
            Assert.Equal("Bea (first)", (await session.LoadAsync<Person>("people/2"))!.Name);
        }

        // Back up, the preferred node gets the writes again: the client checked it in the background.
        await _cluster.Nodes[0].RestartAsync();
        int written = 0;
        await Eventually.HoldsAsync(async () =>
        {
            using (var session = store.OpenAsyncSession())
            {
                await session.StoreAsync(new Person { Name = "Dee" }, $"people/dee-{written++}");
                await session.SaveChangesAsync();
            }
            return await BatchesAsync(_cluster.Nodes[0]) > 0;
        }, "a session's writes to go to the restarted preferred node again");
    }

    /// <summary>
    /// A partition: the two followers stopped (SIGSTOP), the leader is the minority side — it refuses cluster operations
    /// with RavenDB's 503 NoLeaderException and keeps taking document writes and reads; once the others resume, the
    /// cluster commits again.
    /// </summary>
    [Fact]
    public async Task The_minority_side_refuses_cluster_operations_and_keeps_serving_documents()
    {
        await _cluster.FormWithDatabaseAsync("split");
        await Eventually.HoldsAsync(() => ClusterHarness.AgreeAsync(_cluster.Nodes, ["A", "B", "C"], l => l == "A"), "A to lead", state: () => ClusterHarness.Describe(_cluster.Nodes));
        _cluster.Nodes[1].Pause();
        _cluster.Nodes[2].Pause();
        try
        {
            var refused = await _cluster.Nodes[0].Http.PutAsync("/databases/split/cmpxchg?key=k&index=0", TestServer.Json("""{"Object":1}"""));
            var error = await TestServer.ReadJson(refused);
            Assert.True(refused.StatusCode == HttpStatusCode.ServiceUnavailable, error.ToString());
            Assert.Equal("Raven.Client.Exceptions.Cluster.NoLeaderException", error.GetProperty("Type").GetString());
            var read = await _cluster.Nodes[0].Http.GetAsync("/databases/split/cmpxchg?key=k");
            Assert.True(read.StatusCode == HttpStatusCode.ServiceUnavailable, await read.Content.ReadAsStringAsync()); // no leader to confirm a linearizable read
            await ReplicationSetup.PutAsync(_cluster.Nodes[0].Http, "split", "notes/1", """{"Text":"written on the minority side"}""");
            Assert.Equal("written on the minority side", (await ReplicationSetup.GetAsync(_cluster.Nodes[0].Http, "split", "notes/1"))!.Value.GetProperty("Text").GetString());
        }
        finally
        {
            _cluster.Nodes[1].Resume();
            _cluster.Nodes[2].Resume();
        }
        await Eventually.HoldsAsync(async () =>
            (await _cluster.Nodes[0].Http.PutAsync("/databases/split/cmpxchg?key=k&index=0", TestServer.Json("""{"Object":2}"""))).StatusCode == HttpStatusCode.OK,
            "the cluster to commit again once the majority is back", TimeSpan.FromSeconds(60), () => ClusterHarness.Describe(_cluster.Nodes));
        foreach (var n in _cluster.Nodes)
        {
            var node = n;
            await Eventually.HoldsAsync(async () => (await ReplicationSetup.GetAsync(node.Http, "split", "notes/1")) != null, $"notes/1 on {node.Url}");
        }
    }

    private static async Task<string[]> GroupNodesAsync(NodeProcess node, string database) =>
        [.. (await TestServer.ReadJson(await node.Http.GetAsync($"/topology?name={database}"))).GetProperty("Nodes").EnumerateArray().Select(n => n.GetProperty("ClusterTag").GetString()!)];

    /// <summary>
    /// A group grows, is reordered and is deleted through the HTTP API: node C added to a two-member group starts as a
    /// promotable, is fed by the members and becomes a member once it has caught up, holding every document; the members
    /// are put in a new order that every node's topology follows; and deleting the database deletes every instance.
    /// </summary>
    [Fact]
    public async Task A_node_added_to_a_group_is_fed_and_promoted_then_the_group_is_reordered_and_deleted()
    {
        await _cluster.AppliedEverywhereAsync(await _cluster.FormAsync("--ClusterRehabDelaySeconds=2"));
        var created = await TestServer.ReadJson(await _cluster.Nodes[0].Http.PutAsync("/admin/databases?name=grow&replicationFactor=2", null));
        await _cluster.AppliedEverywhereAsync(created.GetProperty("RaftCommandIndex").GetInt64());
        for (int i = 0; i < 50; i++)
            await ReplicationSetup.PutAsync(_cluster.Nodes[0].Http, "grow", $"items/{i}", "{\"N\":" + i + "}");

        // Asked of a follower (B); no node named: the one outside the group, C.
        var added = await _cluster.Nodes[1].Http.PutAsync("/admin/databases/node?name=grow", null);
        var body = await TestServer.ReadJson(added);
        Assert.True(added.IsSuccessStatusCode, body.ToString());
        Assert.Equal(_cluster.Nodes[2].Url.ToString().TrimEnd('/'), body.GetProperty("NodesAddedTo")[0].GetString());
        Assert.Equal(["C"], body.GetProperty("Topology").GetProperty("Promotables").EnumerateArray().Select(p => p.GetString()!).ToArray());
        Assert.Equal(HttpStatusCode.BadRequest, (await _cluster.Nodes[0].Http.PutAsync("/admin/databases/node?name=grow&node=C", null)).StatusCode);
        foreach (var n in _cluster.Nodes)
        {
            var node = n;
            await Eventually.HoldsAsync(async () => (await GroupNodesAsync(node, "grow")).Order().SequenceEqual(["A", "B", "C"]),
                $"C to become a member of grow as {node.Url} sees it", state: () => ClusterHarness.Describe(_cluster.Nodes));
        }
        await Eventually.HoldsAsync(async () => (await TestServer.ReadJson(await _cluster.Nodes[2].Http.GetAsync("/databases/grow/stats"))).GetProperty("CountOfDocuments").GetInt64() == 50,
            "the 50 documents on C");

        var reordered = await _cluster.Nodes[2].Http.PostAsync("/admin/databases/reorder?name=grow", TestServer.Json("""{"MembersOrder":["C","A","B"],"Fixed":false}"""));
        Assert.True(reordered.IsSuccessStatusCode, await reordered.Content.ReadAsStringAsync());
        await _cluster.AppliedEverywhereAsync((await TestServer.ReadJson(reordered)).GetProperty("RaftCommandIndex").GetInt64());
        foreach (var n in _cluster.Nodes)
            Assert.Equal(["C", "A", "B"], await GroupNodesAsync(n, "grow"));
        Assert.Equal(HttpStatusCode.BadRequest, (await _cluster.Nodes[0].Http.PostAsync("/admin/databases/reorder?name=grow", TestServer.Json("""{"MembersOrder":["C","A"]}"""))).StatusCode);

        var deleted = await _cluster.Nodes[1].Http.DeleteAsync("/admin/databases?name=grow");
        Assert.True(deleted.IsSuccessStatusCode, await deleted.Content.ReadAsStringAsync());
        await _cluster.AppliedEverywhereAsync((await TestServer.ReadJson(deleted)).GetProperty("RaftCommandIndex").GetInt64());
        foreach (var n in _cluster.Nodes)
        {
            var gone = await n.Http.GetAsync("/databases/grow/stats");
            Assert.Equal(HttpStatusCode.ServiceUnavailable, gone.StatusCode);
            Assert.True(gone.Headers.Contains("Database-Missing"));
        }
    }

    /// <summary>
    /// Membership roles: the leader cannot be demoted; B and C demoted to watchers are listed as such and never lead —
    /// A is elected again each time it steps down (reelect, sent to a follower and forwarded) — and a promoted watcher
    /// is a member again.
    /// </summary>
    [Fact]
    public async Task Watchers_never_lead_and_a_reelect_elects_among_the_members()
    {
        await _cluster.AppliedEverywhereAsync(await _cluster.FormAsync());
        await Eventually.HoldsAsync(() => ClusterHarness.AgreeAsync(_cluster.Nodes, ["A", "B", "C"], l => l == "A"), "A to lead", state: () => ClusterHarness.Describe(_cluster.Nodes));
        Assert.Equal(HttpStatusCode.BadRequest, (await _cluster.Nodes[1].Http.PostAsync("/admin/cluster/demote?nodeTag=A", null)).StatusCode);
        foreach (string tag in new[] { "B", "C" })
        {
            var demoted = await _cluster.Nodes[1].Http.PostAsync($"/admin/cluster/demote?nodeTag={tag}", null);
            Assert.True(demoted.StatusCode == HttpStatusCode.NoContent, await demoted.Content.ReadAsStringAsync());
        }
        await Eventually.HoldsAsync(async () =>
        {
            var t = (await ClusterHarness.Topology(_cluster.Nodes[2])).GetProperty("Topology");
            return t.GetProperty("Watchers").EnumerateObject().Select(p => p.Name).Order().SequenceEqual(["B", "C"])
                && t.GetProperty("Members").EnumerateObject().Select(p => p.Name).SequenceEqual(["A"]);
        }, "B and C to be watchers as C sees it", state: () => ClusterHarness.Describe(_cluster.Nodes));
        for (int i = 0; i < 3; i++)
        {
            long term = (await ClusterHarness.Topology(_cluster.Nodes[0])).GetProperty("CurrentTerm").GetInt64();
            var reelect = await _cluster.Nodes[2].Http.PostAsync("/admin/cluster/reelect", null);
            Assert.True(reelect.StatusCode == HttpStatusCode.NoContent, await reelect.Content.ReadAsStringAsync());
            await Eventually.HoldsAsync(async () =>
            {
                var t = await ClusterHarness.Topology(_cluster.Nodes[0]);
                return t.GetProperty("CurrentTerm").GetInt64() > term && t.GetProperty("Leader").ValueKind == JsonValueKind.String;
            }, "an election after the leader stepped down", TimeSpan.FromSeconds(30), () => ClusterHarness.Describe(_cluster.Nodes));
            await Eventually.HoldsAsync(async () =>
            {
                foreach (var n in _cluster.Nodes)
                    if ((await ClusterHarness.Topology(n)).GetProperty("Leader").ValueKind != JsonValueKind.String)
                        return false;
                return true;
            }, "every node to know the leader", TimeSpan.FromSeconds(30), () => ClusterHarness.Describe(_cluster.Nodes));
            foreach (var n in _cluster.Nodes)
                Assert.Equal("A", (await ClusterHarness.Topology(n)).GetProperty("Leader").GetString());
        }
        var promoted = await _cluster.Nodes[0].Http.PostAsync("/admin/cluster/promote?nodeTag=B", null);
        Assert.True(promoted.StatusCode == HttpStatusCode.NoContent, await promoted.Content.ReadAsStringAsync() + " " + await ClusterHarness.Describe(_cluster.Nodes));
        await Eventually.HoldsAsync(async () => (await ClusterHarness.Topology(_cluster.Nodes[1])).GetProperty("Topology").GetProperty("Members").EnumerateObject().Select(p => p.Name).Order().SequenceEqual(["A", "B"]),
            "B to be a member again", state: () => ClusterHarness.Describe(_cluster.Nodes));
    }

    /// <summary>
    /// A secured cluster: three HTTPS servers sharing one server certificate form a cluster through the HTTP API with an
    /// admin client certificate — the leader calls the others, and Raft runs, over TLS with that certificate — then a
    /// database with replication factor 3 replicates a write through one node to the others, and a compare-exchange
    /// put through a follower commits.
    /// </summary>
    [Fact]
    public async Task Secured_servers_form_a_cluster_over_tls_and_replicate()
    {
        var now = DateTimeOffset.UtcNow;
        string certs = Path.Combine(_cluster.Root, "certs");
        using var ca = RavenLite.Cli.CertificateFactory.CreateCa("Cluster test CA", now.AddDays(-1), now.AddDays(30));
        using (var serverCertificate = RavenLite.Cli.CertificateFactory.CreateServer(ca, "localhost", ["localhost"], [System.Net.IPAddress.Loopback], now.AddMinutes(-5), now.AddDays(30)))
            RavenLite.Cli.CertificateFactory.Write(serverCertificate, [ca], certs, "server", null);
        using var admin = RavenLite.Cli.CertificateFactory.CreateClient(ca, "admin", now.AddMinutes(-5), now.AddDays(30));
        for (int i = 0; i < 3; i++)
        {
            // Each node its own copy of the certificate's file, as on separate machines (a replacement must reach each).
            string own = Path.Combine(certs, $"server-{i}.pfx");
            File.Copy(Path.Combine(certs, "server.pfx"), own);
            string masterKey = Path.Combine(certs, $"master-{i}.key"); // each node its own master key
            File.WriteAllText(masterKey, Convert.ToBase64String(System.Security.Cryptography.RandomNumberGenerator.GetBytes(32)));
            if (!OperatingSystem.IsWindows())
                File.SetUnixFileMode(masterKey, UnixFileMode.UserRead | UnixFileMode.UserWrite);
            string[] secured = ["--Security:Certificate:Path", own, "--Security:WellKnownAdminCertificates", admin.Thumbprint, "--Security:MasterKey:Path", masterKey];
            _cluster.Nodes.Add(await NodeProcess.StartSecuredAsync(Path.Combine(_cluster.Root, "n" + i), "A", secured));
        }
        using var handler = new HttpClientHandler { ClientCertificateOptions = ClientCertificateOption.Manual, ServerCertificateCustomValidationCallback = (_, c, _, _) => c?.Issuer == ca.Subject };
        handler.ClientCertificates.Add(admin);
        using var http = new HttpClient(handler) { Timeout = TimeSpan.FromSeconds(30) };
        Uri at(int i, string path) => new(_cluster.Nodes[i].Url, path);

        using (var anonymous = new HttpClient(new HttpClientHandler { ServerCertificateCustomValidationCallback = (_, _, _, _) => true }) { Timeout = TimeSpan.FromSeconds(10) })
            Assert.Equal(HttpStatusCode.Unauthorized, (await anonymous.GetAsync(at(0, "/cluster/topology"))).StatusCode);
        long last = 0;
        foreach (int i in new[] { 1, 2 })
        {
            var r = await http.PutAsync(at(0, $"/admin/cluster/node?url={Uri.EscapeDataString(_cluster.Nodes[i].Url.ToString().TrimEnd('/'))}"), null);
            var body = await TestServer.ReadJson(r);
            Assert.True(r.IsSuccessStatusCode, body.ToString());
            last = body.GetProperty("RaftCommandIndex").GetInt64();
        }
        var created = await http.PutAsync(at(1, "/admin/databases?name=vault&replicationFactor=3"), null);
        var answer = await TestServer.ReadJson(created);
        Assert.True(created.StatusCode == HttpStatusCode.Created, answer.ToString());
        long index = answer.GetProperty("RaftCommandIndex").GetInt64();
        for (int i = 0; i < 3; i++)
            Assert.Equal(HttpStatusCode.OK, (await http.GetAsync(at(i, $"/rachis/waitfor?index={index}"))).StatusCode);
        var topology = await TestServer.ReadJson(await http.GetAsync(at(2, "/cluster/topology")));
        Assert.Equal(["A", "B", "C"], topology.GetProperty("Topology").GetProperty("Members").EnumerateObject().Select(p => p.Name).Order().ToArray());

        Assert.Equal(HttpStatusCode.Created, (await http.PutAsync(at(0, "/databases/vault/docs?id=secrets/1"), TestServer.Json("""{"Text":"over TLS","@metadata":{"@collection":"Secrets"}}"""))).StatusCode);
        foreach (int i in new[] { 1, 2 })
        {
            int n = i;
            await Eventually.HoldsAsync(async () => (await http.GetAsync(at(n, "/databases/vault/docs?id=secrets/1"))).StatusCode == HttpStatusCode.OK, $"secrets/1 on node {n}");
        }
        // Raft listens with TLS and keeps only a node's connection: .NET checks a client certificate once the TLS 1.2
        // handshake is done, so a refused one shows as the server closing the connection at once, while a node's stays
        // open waiting for Raft's messages.
        var raft = System.Net.IPEndPoint.Parse((await TestServer.ReadJson(await http.GetAsync(at(0, "/cluster/node-info")))).GetProperty("RaftEndPoint").GetString()!);
        async Task<bool> ClosedByRaftAsync(System.Security.Cryptography.X509Certificates.X509Certificate2 certificate, TimeSpan wait)
        {
            using var tcp = new System.Net.Sockets.TcpClient();
            await tcp.ConnectAsync(raft);
            using var ssl = new System.Net.Security.SslStream(tcp.GetStream());
            try
            {
                await ssl.AuthenticateAsClientAsync(new System.Net.Security.SslClientAuthenticationOptions
                {
                    TargetHost = "localhost",
                    ClientCertificates = [certificate],
                    EnabledSslProtocols = System.Security.Authentication.SslProtocols.Tls12,
                    RemoteCertificateValidationCallback = (_, c, _, _) => c?.Issuer == ca.Subject,
                }).WaitAsync(TimeSpan.FromSeconds(10));
                var read = ssl.ReadAsync(new byte[1]).AsTask();
                return await Task.WhenAny(read, Task.Delay(wait)) == read;
            }
            catch (Exception e) when (e is System.Security.Authentication.AuthenticationException or IOException)
            {
                return true;
            }
        }
        using (var stranger = RavenLite.Cli.CertificateFactory.CreateClient(ca, "stranger", now.AddMinutes(-5), now.AddDays(30)))
            Assert.True(await ClosedByRaftAsync(stranger, TimeSpan.FromSeconds(10)), "Raft kept a TLS connection from a certificate of no node");
        using (var nodeCertificate = RavenLite.Cli.CertificateFactory.LoadPfx(Path.Combine(certs, "server.pfx"), null))
            Assert.False(await ClosedByRaftAsync(nodeCertificate, TimeSpan.FromSeconds(2)), "Raft closed a TLS connection from a node's certificate");

        string follower = topology.GetProperty("Leader").GetString() == "A" ? "B" : "A";
        var put = await http.PutAsync(at(follower[0] - 'A', "/databases/vault/cmpxchg?key=k&index=0"), TestServer.Json("""{"Object":1}"""));
        var cx = await TestServer.ReadJson(put);
        Assert.True(put.IsSuccessStatusCode && cx.GetProperty("Successful").GetBoolean(), cx.ToString());

        // Registered certificates are cluster state: one registered through C opens every node, deleted through A none.
        using var reader = RavenLite.Cli.CertificateFactory.CreateClient(ca, "reader", now.AddMinutes(-5), now.AddDays(30));
        var registration = new JsonObject
        {
            ["Name"] = "reader",
            ["Certificate"] = Convert.ToBase64String(reader.RawData),
            ["SecurityClearance"] = "ValidUser",
            ["Permissions"] = new JsonObject { ["vault"] = "Read" },
        };
        var registered = await http.PutAsync(at(2, "/admin/certificates"), TestServer.Json(registration.ToJsonString()));
        Assert.True(registered.StatusCode == HttpStatusCode.Created, await registered.Content.ReadAsStringAsync());
        using var readerHandler = new HttpClientHandler { ClientCertificateOptions = ClientCertificateOption.Manual, ServerCertificateCustomValidationCallback = (_, c, _, _) => c?.Issuer == ca.Subject };
        readerHandler.ClientCertificates.Add(reader);
        using var readerHttp = new HttpClient(readerHandler) { Timeout = TimeSpan.FromSeconds(30) };
        for (int i = 0; i < 3; i++)
        {
            int n = i;
            await Eventually.HoldsAsync(async () => (await readerHttp.GetAsync(at(n, "/databases/vault/docs?id=secrets/1"))).StatusCode == HttpStatusCode.OK,
                $"the certificate registered through C to read on node {n}");
            var listed = await TestServer.ReadJson(await http.GetAsync(at(n, $"/admin/certificates?thumbprint={reader.Thumbprint}")));
            Assert.Contains("reader", listed.ToString(), StringComparison.Ordinal);
        }
        Assert.Equal(HttpStatusCode.NoContent, (await http.DeleteAsync(at(0, $"/admin/certificates?thumbprint={reader.Thumbprint}"))).StatusCode);
        for (int i = 0; i < 3; i++)
        {
            int n = i;
            await Eventually.HoldsAsync(async () => (await readerHttp.GetAsync(at(n, "/databases/vault/docs?id=secrets/1"))).StatusCode is HttpStatusCode.Forbidden or HttpStatusCode.Unauthorized,
                $"the certificate deleted through A to be refused on node {n}");
        }

        // The server certificate replaced through B (RavenDB's replace-cluster-cert) reaches every node, and the nodes —
        // presenting old and new certificates while it goes round — still talk: a write through C replicates.
        using var renewed = RavenLite.Cli.CertificateFactory.CreateServer(ca, "localhost", ["localhost"], [System.Net.IPAddress.Loopback], now.AddMinutes(-5), now.AddDays(60));
        var renewal = new X509Certificate2Collection { renewed, X509CertificateLoader.LoadCertificate(ca.RawData) };
        var replace = await http.PostAsync(at(1, "/admin/certificates/replace-cluster-cert"), TestServer.Json(new JsonObject
        {
            ["Name"] = "renewed",
            ["Certificate"] = Convert.ToBase64String(renewal.Export(X509ContentType.Pkcs12, "pw")!),
            ["Password"] = "pw",
        }.ToJsonString()));
        Assert.True(replace.StatusCode == HttpStatusCode.OK, await replace.Content.ReadAsStringAsync());
        for (int i = 0; i < 3; i++)
        {
            int n = i;
            await Eventually.HoldsAsync(async () =>
            {
                string? seen = null;
                using var fresh = new HttpClientHandler { ClientCertificateOptions = ClientCertificateOption.Manual, ServerCertificateCustomValidationCallback = (_, c, _, _) => (seen = c?.Thumbprint) != null };
                fresh.ClientCertificates.Add(admin);
                using var client = new HttpClient(fresh) { Timeout = TimeSpan.FromSeconds(10) };
                return (await client.GetAsync(at(n, "/cluster/topology"))).IsSuccessStatusCode && seen == renewed.Thumbprint;
            }, $"node {n} to serve the replaced certificate");
        }
        Assert.Equal(HttpStatusCode.Created, (await http.PutAsync(at(2, "/databases/vault/docs?id=secrets/2"), TestServer.Json("""{"Text":"after the renewal","@metadata":{"@collection":"Secrets"}}"""))).StatusCode);
        foreach (int i in new[] { 0, 1 })
        {
            int n = i;
            await Eventually.HoldsAsync(async () => (await http.GetAsync(at(n, "/databases/vault/docs?id=secrets/2"))).StatusCode == HttpStatusCode.OK, $"secrets/2 on node {n}");
        }
        var cmp = await http.PutAsync(at(0, "/databases/vault/cmpxchg?key=k2&index=0"), TestServer.Json("""{"Object":2}"""));
        Assert.True(cmp.IsSuccessStatusCode && (await TestServer.ReadJson(cmp)).GetProperty("Successful").GetBoolean(), "a Raft write after the renewal");

        // An encrypted database in a group of three: its key distributed through B to every node, the group created
        // through C; a write through A replicates, and no node's files show it.
        string key = await http.GetStringAsync(at(0, "/admin/secrets/generate"));
        using (var content = new StringContent(key, Encoding.UTF8, "text/plain"))
        {
            var distributed = await http.PostAsync(at(1, "/admin/secrets/distribute?name=sealed&node=A&node=B&node=C"), content);
            Assert.True(distributed.StatusCode == HttpStatusCode.Created, await distributed.Content.ReadAsStringAsync());
        }
        var group = await http.PutAsync(at(2, "/admin/databases?name=sealed&replicationFactor=3"), TestServer.Json("""{"DatabaseName":"sealed","Encrypted":true}"""));
        var groupAnswer = await TestServer.ReadJson(group);
        Assert.True(group.StatusCode == HttpStatusCode.Created, groupAnswer.ToString());
        for (int i = 0; i < 3; i++)
            Assert.Equal(HttpStatusCode.OK, (await http.GetAsync(at(i, $"/rachis/waitfor?index={groupAnswer.GetProperty("RaftCommandIndex").GetInt64()}"))).StatusCode);
        const string Secret = "MARKER-group-8c1d-never-on-disk";
        await Eventually.HoldsAsync(async () => (await http.PutAsync(at(0, "/databases/sealed/docs?id=secrets/1"), TestServer.Json($$$"""{"Text":"{{{Secret}}}","@metadata":{"@collection":"Secrets"}}"""))).StatusCode == HttpStatusCode.Created,
            "a write to the encrypted group through A");
        for (int i = 0; i < 3; i++)
        {
            int n = i;
            await Eventually.HoldsAsync(async () => (await http.GetAsync(at(n, "/databases/sealed/docs?id=secrets/1"))).StatusCode == HttpStatusCode.OK, $"the encrypted document on node {n}");
            Assert.True((await TestServer.ReadJson(await http.GetAsync(at(n, "/admin/databases?name=sealed")))).GetProperty("Encrypted").GetBoolean(), $"node {n}'s instance is encrypted");
        }
        foreach (var node in _cluster.Nodes)
            foreach (string file in Directory.GetFiles(Path.Combine(node.DataDir, "Databases", "sealed"), "*", SearchOption.AllDirectories))
                Assert.True(File.ReadAllBytes(file).AsSpan().IndexOf(Encoding.UTF8.GetBytes(Secret)) < 0, $"'{file}' holds the secret in plain text");
    }

    /// <summary>
    /// Start-up settings alone form a cluster: B and C started plain, then A started with both as its
    /// <c>ClusterPeers</c> — A adds them as it would through <c>PUT /admin/cluster/node</c>, and all three agree.
    /// </summary>
    [Fact]
    public async Task A_node_started_with_its_peers_forms_the_cluster_by_itself()
    {
        var b = await NodeProcess.StartAsync(Path.Combine(_cluster.Root, "n1"), "A");
        var c = await NodeProcess.StartAsync(Path.Combine(_cluster.Root, "n2"), "A");
        string peers = string.Join(",", new[] { b, c }.Select(n => n.Url.ToString().TrimEnd('/')));
        var a = await NodeProcess.StartAsync(Path.Combine(_cluster.Root, "n0"), "A", "--ClusterPeers", peers);
        _cluster.Nodes.AddRange([a, b, c]);
        await Eventually.HoldsAsync(() => ClusterHarness.AgreeAsync(_cluster.Nodes, ["A", "B", "C"], l => l == "A"), "A to add its peers B and C", TimeSpan.FromSeconds(60), () => ClusterHarness.Describe(_cluster.Nodes));
    }

    public void Dispose() => _cluster.Dispose();
}
