namespace RavenLite.Server.Tests.Indexing;

/// <summary>
/// Background indexing (docs/architecture.md): staleness and WaitForNonStaleResults,
/// updates and tombstones reaching the index, auto-index widening, positions surviving a restart,
/// per-document map errors, and docs/reliability.md R12 (SIGKILL during indexing, a corrupted index file).
/// </summary>
public sealed class IndexingTests(ITestOutputHelper output)
{
    private const string UsersIndex = """{"Indexes":[{"Name":"Users/ByName","Maps":["from u in docs.Users select new { u.Name, u.Age, Total = u.A + u.B }"]}]}""";

    private static async Task Put(HttpClient http, int from, int count, string prefix = "users/")
    {
        var commands = new JsonArray();
        for (int i = from; i < from + count; i++)
        {
            commands.Add(new JsonObject
            {
                ["Id"] = prefix + i,
                ["Type"] = "PUT",
                ["Document"] = new JsonObject { ["Name"] = "user" + (i % 100), ["Age"] = i % 70, ["A"] = 1, ["B"] = i, ["@metadata"] = new JsonObject { ["@collection"] = "Users" } },
            });
        }
        var r = await http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()));
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
    }

    private static async Task<JsonElement> Query(HttpClient http, string rql, bool wait, HttpStatusCode expect = HttpStatusCode.OK, string timeout = "00:00:30")
    {
        var body = new JsonObject { ["Query"] = rql, ["WaitForNonStaleResults"] = wait, ["WaitForNonStaleResultsTimeout"] = timeout };
        var r = await http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(expect == r.StatusCode, $"{rql} → {(int)r.StatusCode}: {json}");
        return json;
    }

    private static async Task<JsonElement> Stats(HttpClient http, string name)
    {
        var r = await http.GetAsync("/databases/db/indexes/stats?name=" + Uri.EscapeDataString(name));
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        return (await TestServer.ReadJson(r)).GetProperty("Results")[0];
    }

    /// <summary>
    /// Resetting an index closes its Lucene reader and opens a new one while queries and stats keep
    /// coming: each query answers 200 (possibly stale) or 503 "being reset" — never a 500 — and stats
    /// always answer; afterwards the index is exact again.
    /// </summary>
    [Fact]
    public async Task Queries_and_stats_keep_answering_while_an_index_is_reset_again_and_again()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        for (int i = 0; i < 3000; i += 1000)
            await Put(http, i, 1000);
        Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/admin/indexes", TestServer.Json(UsersIndex))).StatusCode);
        await Query(http, "from index 'Users/ByName' where Age = 3", wait: true);
        using var stop = new CancellationTokenSource();
        var statuses = new System.Collections.Concurrent.ConcurrentBag<int>();
        var load = Enumerable.Range(0, 3).Select(k => Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                var body = new JsonObject { ["Query"] = "from index 'Users/ByName' where Age = 3 order by Name" };
                var r = await http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
                statuses.Add((int)r.StatusCode);
                var stats = await http.GetAsync("/databases/db/indexes/stats?name=Users%2FByName");
                statuses.Add((int)stats.StatusCode == 200 ? 200 : 1000 + (int)stats.StatusCode);
            }
        })).ToArray();
        for (int round = 0; round < 5; round++)
        {
            var reset = await http.PostAsync("/databases/db/indexes/reset?name=Users%2FByName", TestServer.Json(""));
            Assert.Equal(HttpStatusCode.NoContent, reset.StatusCode);
            await Task.Delay(150);
        }
        stop.Cancel();
        await Task.WhenAll(load);
        output.WriteLine(string.Join(", ", statuses.GroupBy(x => x).Select(g => $"{g.Key}: {g.Count()}")));
        Assert.All(statuses, st => Assert.True(st is 200 or 503, $"status {st}"));
        var q = await Query(http, "from index 'Users/ByName' where Age = 3", wait: true);
        Assert.Equal(Enumerable.Range(0, 3000).Count(i => i % 70 == 3), q.GetProperty("TotalResults").GetInt32());
    }

    [Fact]
    public async Task Stale_while_behind_and_wait_for_non_stale_returns_fresh_results()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await Put(server.Http, 0, 200);
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(UsersIndex))).StatusCode);
        var before = await Query(server.Http, "from index 'Users/ByName' where Name = 'user7'", wait: true);
        Assert.Equal(2, before.GetProperty("TotalResults").GetInt32());
        Assert.False(before.GetProperty("IsStale").GetBoolean());

        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.PostAsync("/databases/db/admin/indexes/stop", null)).StatusCode);
        await Put(server.Http, 200, 100); // users/207, users/007... : one more 'user7'
        var stale = await Query(server.Http, "from index 'Users/ByName' where Name = 'user7'", wait: false);
        Assert.True(stale.GetProperty("IsStale").GetBoolean());
        Assert.Equal(2, stale.GetProperty("TotalResults").GetInt32());
        var stats = await Stats(server.Http, "Users/ByName");
        Assert.True(stats.GetProperty("IsStale").GetBoolean());
        Assert.Equal("Paused", stats.GetProperty("Status").GetString());
        Assert.Equal(100, stats.GetProperty("Collections").GetProperty("Users").GetProperty("DocumentLag").GetInt64());
        var timedOut = await Query(server.Http, "from index 'Users/ByName' where Name = 'user7'", wait: true, HttpStatusCode.RequestTimeout, timeout: "00:00:00.300");
        Assert.Contains("non stale", timedOut.GetProperty("Message").GetString(), StringComparison.Ordinal);

        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.PostAsync("/databases/db/admin/indexes/start", null)).StatusCode);
        var fresh = await Query(server.Http, "from index 'Users/ByName' where Name = 'user7'", wait: true);
        Assert.False(fresh.GetProperty("IsStale").GetBoolean());
        Assert.Equal(3, fresh.GetProperty("TotalResults").GetInt32());
        var staleness = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes/staleness?name=Users/ByName"));
        Assert.False(staleness.GetProperty("IsStale").GetBoolean());
    }

    [Fact]
    public async Task Every_query_that_finds_an_auto_index_in_its_first_build_waits_for_it_not_only_its_creator()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        for (int i = 0; i < 20_000; i += 5_000)
            await Put(server.Http, i, 5_000);
        int expected = Enumerable.Range(0, 20_000).Count(i => i % 70 == 5);
        // Concurrent first queries: one creates Auto/Users/ByAge, the others find it building.
        var answers = await Task.WhenAll(Enumerable.Range(0, 4).Select(_ => Query(server.Http, "from Users where Age = 5", wait: false)));
        Assert.All(answers, a => Assert.Equal(expected, a.GetProperty("TotalResults").GetInt32()));
        // Widening: a query on another field builds a wider index while the narrow one still answers.
        answers = await Task.WhenAll(Enumerable.Range(0, 4).Select(_ => Query(server.Http, "from Users where Name = 'user7' and Age = 7", wait: false)));
        int both = Enumerable.Range(0, 20_000).Count(i => i % 100 == 7 && i % 70 == 7);
        Assert.All(answers, a => Assert.Equal(both, a.GetProperty("TotalResults").GetInt32()));
    }

    [Fact]
    public async Task Updates_and_deletes_reach_the_index_and_positions_survive_a_restart()
    {
        string dir = Path.Combine(Path.GetTempPath(), "ravenlite-idx-" + Guid.NewGuid().ToString("N"));
        try
        {
            await using (var server = await TestServer.StartWithDatabaseAsync(dataDir: dir))
            {
                await Put(server.Http, 0, 300);
                Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(UsersIndex))).StatusCode);
                await Query(server.Http, "from index 'Users/ByName'", wait: true);
                // Delete 100, re-create 10 of them with new values.
                var del = new JsonArray(Enumerable.Range(0, 100).Select(i => (JsonNode?)new JsonObject { ["Id"] = "users/" + i, ["Type"] = "DELETE" }).ToArray());
                Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = del }.ToJsonString()))).StatusCode);
                await Put(server.Http, 0, 10, "USERS/"); // other casing: the same documents
                var age = await Query(server.Http, "from index 'Users/ByName' where Age < 5", wait: true);
                Assert.Equal(Enumerable.Range(0, 300).Count(i => (i >= 100 || i < 10) && i % 70 < 5), age.GetProperty("TotalResults").GetInt32());
                var stats = await Stats(server.Http, "Users/ByName");
                Assert.Equal(210, stats.GetProperty("EntriesCount").GetInt64()); // tombstones removed entries, not only hidden them
                // Auto index on the same collection, then a wider one: the narrower is retired.
                await Query(server.Http, "from Users where Age = 3", wait: true);
                var wide = await Query(server.Http, "from Users where Age = 3 and Name = 'user3'", wait: false);
                Assert.Equal("Auto/Users/ByAgeAndName", wide.GetProperty("IndexName").GetString());
                Assert.Equal(Enumerable.Range(0, 300).Count(i => (i >= 100 || i < 10) && i % 70 == 3 && i % 100 == 3), wide.GetProperty("TotalResults").GetInt32());
                var names = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes?namesOnly=true"));
                Assert.Equal(["Auto/Users/ByAgeAndName", "Users/ByName"], names.GetProperty("Results").EnumerateArray().Select(n => n.GetString()!).Order(StringComparer.Ordinal));
            }
            await using (var again = await TestServer.StartAsync(dataDir: dir))
            {
                var stats = await Stats(again.Http, "Users/ByName");
                Assert.False(stats.GetProperty("IsStale").GetBoolean());
                Assert.Equal(210, stats.GetProperty("EntriesCount").GetInt64());
                Assert.Equal(0, stats.GetProperty("MapAttempts").GetInt64()); // nothing re-indexed after the restart
                var q = await Query(again.Http, "from index 'Users/ByName' where Name = 'user5'", wait: false);
                Assert.Equal(3, q.GetProperty("TotalResults").GetInt32()); // users/5 (re-created), users/105, users/205
            }
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }

    [Fact]
    public async Task A_document_the_map_fails_on_is_an_index_error_and_indexing_goes_on()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(UsersIndex))).StatusCode);
        var bad = """{"Name":"overflow","A":1e308,"B":1e308,"@metadata":{"@collection":"Users"}}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/docs?id=users/bad", TestServer.Json(bad))).StatusCode);
        await Put(server.Http, 0, 20);
        var q = await Query(server.Http, "from index 'Users/ByName' where Total > 0", wait: true);
        Assert.Equal(20, q.GetProperty("TotalResults").GetInt32());
        var stats = await Stats(server.Http, "Users/ByName");
        Assert.Equal(1, stats.GetProperty("MapErrors").GetInt64());
        Assert.Equal(1, stats.GetProperty("ErrorsCount").GetInt64());
        var errors = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes/errors?name=Users/ByName"));
        var error = errors.GetProperty("Results")[0].GetProperty("Errors")[0];
        Assert.Equal("users/bad", error.GetProperty("Document").GetString());
        output.WriteLine(error.GetProperty("Error").GetString());
    }

    [Theory]
    [InlineData("from o in docs.Orders select new { Products = o.Lines.Select(l => l.Product), o.Total }")]
    [InlineData("docs.Orders.Select(o => new { Products = o.Lines.Select(l => l.Product), Total = o.Total })")]
    [InlineData("map('Orders', function (o) { return { Products: o.Lines.map(l => l.Product), Total: o.Total }; })")]
    public async Task Map_forms_index_values_through_arrays(string map)
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var commands = new JsonArray();
        for (int i = 0; i < 30; i++)
        {
            var lines = new JsonArray(Enumerable.Range(0, i % 4).Select(l => (JsonNode?)new JsonObject { ["Product"] = $"p{(i + l) % 5}" }).ToArray());
            commands.Add(new JsonObject { ["Id"] = $"orders/{i}", ["Type"] = "PUT", ["Document"] = new JsonObject { ["Lines"] = lines, ["Total"] = i, ["@metadata"] = new JsonObject { ["@collection"] = "Orders" } } });
        }
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        var put = new JsonObject { ["Indexes"] = new JsonArray(new JsonObject { ["Name"] = "Orders/ByProduct", ["Maps"] = new JsonArray(map) }) };
        var r = await server.Http.PutAsync("/databases/db/indexes", TestServer.Json(put.ToJsonString()));
        Assert.True(r.StatusCode == HttpStatusCode.Created, await r.Content.ReadAsStringAsync());
        var q = await Query(server.Http, "from index 'Orders/ByProduct' where Products = 'P2' and Total < 20", wait: true);
        int expected = Enumerable.Range(0, 20).Count(i => Enumerable.Range(0, i % 4).Any(l => (i + l) % 5 == 2));
        Assert.Equal(expected, q.GetProperty("TotalResults").GetInt32());
    }

    /// <summary>
    /// docs/reliability.md R12: the server is SIGKILLed while the index worker is committing batches, then
    /// (after a clean catch-up and a second kill) every commit point (segments_N) of the Lucene index is overwritten with garbage.
    /// Each time the restarted server brings the index back to the documents — resumed from its last
    /// commit, or rebuilt — and the documents are untouched.
    /// </summary>
    [Fact]
    public async Task R12_sigkill_during_indexing_and_a_corrupted_index_file_recover_and_leave_documents_alone()
    {
        const int count = 60_000;
        using var dir = new RavenLite.TestKit.TempDirectory("ravenlite-r12");
        int expectedAge3 = Enumerable.Range(0, count).Count(i => i % 70 == 3);
        using (var server = await ServerProcess.StartAsync(dir.Path))
        {
            using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(60) };
            Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/admin/databases?name=db", TestServer.Json("{\"DatabaseName\":\"db\"}"))).StatusCode);
            for (int i = 0; i < count; i += 5000)
                await Put(http, i, 5000);
            Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/admin/indexes", TestServer.Json(UsersIndex))).StatusCode);
            long processed = 0;
            var deadline = DateTime.UtcNow.AddSeconds(60);
            while (DateTime.UtcNow < deadline)
            {
                var stats = await Stats(http, "Users/ByName");
                processed = stats.GetProperty("Collections").GetProperty("Users").GetProperty("LastProcessedDocumentEtag").GetInt64();
                if (processed > 0 || !stats.GetProperty("IsStale").GetBoolean())
                    break;
                await Task.Delay(2);
            }
            server.Kill();
            output.WriteLine($"killed with the index at etag {processed} of {count}");
        }
        // Killed again once the recovered index has committed (it commits when idle), so that there is a commit point to corrupt.
        await CheckRecoveredAsync(dir.Path, count, expectedAge3, killAfter: true, waitForCommit: true);

        string folder = Directory.GetDirectories(Path.Combine(dir.Path, "Databases", "db", "Indexes")).Single();
        // Every commit point (segments_N) of the Lucene index made unreadable: it must be rebuilt from the documents.
        var random = new Random(12);
        var commitPoints = Directory.GetFiles(Path.Combine(folder, "lucene"), "segments*");
        Assert.NotEmpty(commitPoints);
        foreach (string segments in commitPoints)
        {
            var garbage = new byte[new FileInfo(segments).Length];
            random.NextBytes(garbage);
            await File.WriteAllBytesAsync(segments, garbage);
        }
        var errors = await CheckRecoveredAsync(dir.Path, count, expectedAge3, killAfter: false);
        Assert.Contains("rebuilt", errors, StringComparison.Ordinal);
    }

    /// <summary>
    /// RELIABILITY R12 for map-reduce: SIGKILL while a map-reduce index builds (its map and reduce results in the
    /// database's storage, its entries in Lucene), and again while deletes are being re-reduced; after each restart
    /// the reduce results equal a brute-force grouping of the documents — no key missing, none counted twice.
    /// </summary>
    [Fact]
    public async Task R12_sigkill_during_map_reduce_indexing_leaves_reduce_results_equal_to_the_documents()
    {
        const int count = 40_000;
        using var dir = new RavenLite.TestKit.TempDirectory("ravenlite-r12-mr");
        const string index = """{"Indexes":[{"Name":"Users/ByAge","Maps":["from u in docs.Users select new { u.Age, Count = 1, Total = u.B }"],"Reduce":"from r in results group r by r.Age into g select new { Age = g.Key, Count = g.Sum(x => x.Count), Total = g.Sum(x => x.Total) }"}]}""";
        var live = Enumerable.Range(0, count).ToHashSet();
        async Task Check(HttpClient http)
        {
            var q = await Query(http, "from index 'Users/ByAge' order by Age as long", wait: true, timeout: "00:01:30");
            var want = live.GroupBy(i => i % 70).OrderBy(g => g.Key).Select(g => $"{g.Key}:{g.Count()}:{g.Sum(i => (long)i)}");
            Assert.Equal(want, q.GetProperty("Results").EnumerateArray().Select(r => $"{r.GetProperty("Age").GetInt32()}:{r.GetProperty("Count").GetInt32()}:{r.GetProperty("Total").GetInt64()}"));
        }
        using (var server = await ServerProcess.StartAsync(dir.Path))
        {
            using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(60) };
            Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/admin/databases?name=db", TestServer.Json("{\"DatabaseName\":\"db\"}"))).StatusCode);
            for (int i = 0; i < count; i += 5000)
                await Put(http, i, 5000);
            Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
            var deadline = DateTime.UtcNow.AddSeconds(60);
            while (DateTime.UtcNow < deadline && (await Stats(http, "Users/ByAge")).GetProperty("Collections").GetProperty("Users").GetProperty("LastProcessedDocumentEtag").GetInt64() == 0)
                await Task.Delay(2);
            server.Kill();
        }
        using (var server = await ServerProcess.StartAsync(dir.Path))
        {
            using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(120) };
            await Check(http);
            // Deletes in small transactions while the index re-reduces them, killed in the middle.
            var doomed = Enumerable.Range(0, count).Where(i => i % 7 == 0).ToList();
            for (int k = 0; k < doomed.Count; k += 200)
            {
                var commands = new JsonArray(doomed.Skip(k).Take(200).Select(i => (JsonNode?)new JsonObject { ["Id"] = "users/" + i, ["Type"] = "DELETE" }).ToArray());
                var r = await http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()));
                Assert.Equal(HttpStatusCode.Created, r.StatusCode);
            }
            live.ExceptWith(doomed);
            server.Kill();
        }
        using (var server = await ServerProcess.StartAsync(dir.Path))
        {
            using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(120) };
            await Check(http);
            string errors = await http.GetStringAsync("/databases/db/indexes/errors?name=Users/ByAge");
            Assert.DoesNotContain("Document", errors, StringComparison.Ordinal);
        }
    }

    /// <summary>
    /// An index whose entries are in the doc-value layout before sort keys (field <c>@entry</c>) is deleted and
    /// rebuilt from the documents when the server opens it, even though its commit says it is caught up.
    /// </summary>
    [Fact]
    public async Task An_index_in_the_entry_format_before_sort_keys_is_rebuilt_from_the_documents()
    {
        using var dir = new RavenLite.TestKit.TempDirectory("ravenlite-legacy-entry");
        const int count = 700;
        int expectedAge3 = Enumerable.Range(0, count).Count(i => i % 70 == 3);
        await using (var server = await TestServer.StartWithDatabaseAsync(dataDir: dir.Path))
        {
            await Put(server.Http, 0, count);
            Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(UsersIndex))).StatusCode);
            Assert.Equal(expectedAge3, (await Query(server.Http, "from index 'Users/ByName' where Age = 3", wait: true)).GetProperty("TotalResults").GetInt32());
        }
        // Replace the index's Lucene files by one legacy entry whose commit claims every document is indexed.
        string lucene = Path.Combine(Directory.GetDirectories(Path.Combine(dir.Path, "Databases", "db", "Indexes")).Single(), "lucene");
        Directory.Delete(lucene, recursive: true);
        using (var d = Lucene.Net.Store.FSDirectory.Open(lucene))
        using (var w = new Lucene.Net.Index.IndexWriter(d, new Lucene.Net.Index.IndexWriterConfig(Lucene.Net.Util.LuceneVersion.LUCENE_48, new Lucene.Net.Analysis.Core.KeywordAnalyzer())))
        {
            w.AddDocument(new Lucene.Net.Documents.Document
            {
                new Lucene.Net.Documents.StringField("@id", "users/3", Lucene.Net.Documents.Field.Store.NO),
                new Lucene.Net.Documents.BinaryDocValuesField("@entry", new Lucene.Net.Util.BytesRef(new byte[] { 1, 0, 0, 0, 0, 0, 0, 0, 7, 0, (byte)'u', (byte)'s', (byte)'e', (byte)'r', (byte)'s', (byte)'/', (byte)'3', (byte)'{', (byte)'}' })),
            });
            w.SetCommitData(new Dictionary<string, string> { ["etag:users"] = "1000000", ["tombstone"] = "1000000" });
            w.Commit();
        }
        await using (var server = await TestServer.StartAsync(dir.Path))
        {
            var answer = await Query(server.Http, "from index 'Users/ByName' where Age = 3", wait: true);
            Assert.Equal(expectedAge3, answer.GetProperty("TotalResults").GetInt32());
            var stats = await Stats(server.Http, "Users/ByName");
            Assert.Equal(count, stats.GetProperty("EntriesCount").GetInt64());
        }
    }

    /// <summary>Restarts on <paramref name="dataDir"/>, waits for the index, and checks it against the documents; returns the index errors text.</summary>
    private async Task<string> CheckRecoveredAsync(string dataDir, int count, int expectedAge3, bool killAfter, bool waitForCommit = false)
    {
        using var server = await ServerProcess.StartAsync(dataDir);
        using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(120) };
        var q = await Query(http, "from index 'Users/ByName' where Age = 3", wait: true, timeout: "00:01:30");
        Assert.False(q.GetProperty("IsStale").GetBoolean());
        Assert.Equal(expectedAge3, q.GetProperty("TotalResults").GetInt32());
        var stats = await Stats(http, "Users/ByName");
        Assert.Equal(count, stats.GetProperty("EntriesCount").GetInt64());
        var lucene = stats.GetProperty("Lucene");
        Assert.True(lucene.GetProperty("Segments").GetInt32() >= 1 && lucene.GetProperty("SizeInBytes").GetInt64() > 0, lucene.ToString());
        var db = await TestServer.ReadJson(await http.GetAsync("/databases/db/stats"));
        Assert.Equal(count, db.GetProperty("CountOfDocuments").GetInt64());
        var one = await http.GetAsync("/databases/db/docs?id=users/12345");
        Assert.Contains("user45", await one.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        string errors = await http.GetStringAsync("/databases/db/indexes/errors?name=Users/ByName");
        output.WriteLine($"recovered: map attempts after restart {stats.GetProperty("MapAttempts").GetInt64()}; errors {errors}");
        string luceneDir = Path.Combine(Directory.GetDirectories(Path.Combine(dataDir, "Databases", "db", "Indexes")).Single(), "lucene");
        for (var until = DateTime.UtcNow.AddSeconds(15); waitForCommit && DateTime.UtcNow < until && Directory.GetFiles(luceneDir, "segments_*").Length == 0;)
            await Task.Delay(20);
        if (killAfter)
            server.Kill();
        return errors;
    }
}
