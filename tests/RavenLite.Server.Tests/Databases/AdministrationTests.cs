using RavenLite.Server.Databases;
using RavenLite.Storage;
using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Databases;

/// <summary>
/// Database administration over HTTP: settings are kept in the record and applied when the database reopens;
/// compaction takes the database offline (503), shrinks its data file after mass deletes and keeps every document and
/// index position; an interrupted compaction swap is finished or undone at open; index lock modes and state survive a
/// restart; bad settings and client configurations are 400s.
/// </summary>
public sealed class AdministrationTests
{
    private static Database Open(TestServer s, string name) => ((DatabaseRegistry)s.Services.GetService(typeof(DatabaseRegistry))!).Acquire(name);

    /// <summary>
    /// A reload (a settings change, a disable) closes the instance once its requests end; a request meanwhile waits for
    /// that rather than opening a second instance over the same files (found as a cluster member that lost record changes).
    /// </summary>
    [Fact]
    public async Task A_reloading_database_opens_again_only_after_its_old_instance_closed()
    {
        await using var s = await StartWithDatabaseAsync("db");
        var registry = (DatabaseRegistry)s.Services.GetService(typeof(DatabaseRegistry))!;
        var old = registry.Acquire("db"); // a request still running on the old instance
        var reload = Task.Run(() => registry.Reload("db"));
        static bool Leasable(Database db)
        {
            if (!db.TryAcquire())
                return false;
            db.Release();
            return true;
        }
        await Eventually.HoldsAsync(() => Task.FromResult(!Leasable(old)), "the old instance to start closing");
        var next = Task.Run(() => registry.Acquire("db"));
        // While the old instance is held, nothing opens (a second instance over its files would answer at once).
        Assert.NotSame(next, await Task.WhenAny(next, Task.Delay(500)));
        old.Release();
        var reopened = await next;
        Assert.NotSame(old, reopened);
        Assert.True(reload.IsCompleted);
        reopened.Release();
    }

    [Fact]
    public async Task Settings_are_applied_when_the_database_reopens_and_bad_ones_are_refused()
    {
        await using var s = await StartWithDatabaseAsync("db");
        var r = await s.Http.PutAsync("/databases/db/admin/configuration/settings", Json("""{"Durability":"Buffered","MergerMaxOperations":"64"}"""));
        Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
        DurabilityMode mode = DurabilityMode.Sync;
        for (int i = 0; i < 100 && mode != DurabilityMode.Buffered; i++)
        {
            await Task.Delay(50);
            var db = Open(s, "db");
            try
            {
                mode = db.Environment.Options.Durability;
            }
            finally
            {
                db.Release();
            }
        }
        Assert.Equal(DurabilityMode.Buffered, mode);
        var record = await ReadJson(await s.Http.GetAsync("/databases/db/admin/record"));
        Assert.Equal("64", record.GetProperty("Settings").GetProperty("MergerMaxOperations").GetString());

        foreach (string bad in new[] { """{"Durability":"Sometimes"}""", """{"MergerMaxOperations":"0"}""", """{"Indexing.MapBatchSize":{}}""", "[1]" })
            Assert.Equal(HttpStatusCode.BadRequest, (await s.Http.PutAsync("/databases/db/admin/configuration/settings", Json(bad))).StatusCode);
        // RavenDB settings RavenLite does not use are kept as sent and read back (clients set them).
        Assert.True((await s.Http.PutAsync("/databases/db/admin/configuration/settings", Json("""{"Indexing.MapBatchSize":"128","Durability":"Buffered"}"""))).IsSuccessStatusCode);
        var kept = (await ReadJson(await s.Http.GetAsync("/databases/db/admin/record"))).GetProperty("Settings");
        Assert.Equal("128", kept.GetProperty("Indexing.MapBatchSize").GetString());
        Assert.Equal("Buffered", kept.GetProperty("Durability").GetString());
        foreach (string bad in new[] { """{"MaxNumberOfRequestsPerSession":0}""", """{"IdentityPartsSeparator":"|"}""", """{"ReadBalanceBehavior":"Fast"}""" })
            Assert.Equal(HttpStatusCode.BadRequest, (await s.Http.PutAsync("/databases/db/admin/configuration/client", Json(bad))).StatusCode);
    }

    [Fact]
    public async Task Compaction_shrinks_the_data_file_and_keeps_every_document_and_index()
    {
        await using var s = await StartWithDatabaseAsync("db");
        await s.Http.PutAsync("/databases/db/admin/indexes", Json("""{"Indexes":[{"Name":"Docs/ByN","Maps":["from d in docs.Docs select new { d.N }"]}]}"""));
        // Random padding: documents are stored compressed, and a repeated one would take next to no room.
        string Pad() => Convert.ToBase64String(System.Security.Cryptography.RandomNumberGenerator.GetBytes(1500));
        for (int batch = 0; batch < 20; batch++)
        {
            var commands = string.Join(",", Enumerable.Range(batch * 500, 500).Select(i =>
                $$$$"""{"Type":"PUT","Id":"docs/{{{{i}}}}","ChangeVector":null,"Document":{"N":{{{{i}}}},"Pad":"{{{{Pad()}}}}","@metadata":{"@collection":"Docs"}}}"""));
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PostAsync("/databases/db/bulk_docs", Json($$"""{"Commands":[{{commands}}]}"""))).StatusCode);
        }
        for (int batch = 0; batch < 18; batch++)
        {
            var commands = string.Join(",", Enumerable.Range(batch * 500, 500).Select(i => $$$"""{"Type":"DELETE","Id":"docs/{{{i}}}","ChangeVector":null}"""));
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PostAsync("/databases/db/bulk_docs", Json($$"""{"Commands":[{{commands}}]}"""))).StatusCode);
        }
        await ReadJson(await s.Http.PostAsync("/databases/db/queries?waitForNonStaleResultsTimeout=00:00:30", Json("""{"Query":"from index 'Docs/ByN' where N >= 9990","WaitForNonStaleResults":true}""")));
        string storage = Path.Combine(s.DataDir, "Databases", "db", "storage", "data");

        var answer = await ReadJson(await s.Http.PostAsync("/admin/compact", Json("""{"DatabaseName":"db","Documents":true,"Indexes":["Docs/ByN"]}""")));
        long id = answer.GetProperty("OperationId").GetInt64();
        JsonElement state = default;
        bool sawOffline = false;
        for (int i = 0; i < 600; i++)
        {
            state = await ReadJson(await s.Http.GetAsync($"/operations/state?id={id}"));
            if (state.GetProperty("Status").GetString() != "InProgress")
                break;
            sawOffline |= (await s.Http.GetAsync("/databases/db/docs?id=docs/9999")).StatusCode == HttpStatusCode.ServiceUnavailable;
            await Task.Delay(10);
        }
        Assert.True(state.GetProperty("Status").GetString() == "Completed", state.ToString());
        var result = state.GetProperty("Result");
        long before = result.GetProperty("StorageBytesBefore").GetInt64(), after = result.GetProperty("StorageBytesAfter").GetInt64();
        Assert.True(after < before / 2, $"data file {before} -> {after} bytes");
        Assert.Equal(after, new FileInfo(storage).Length);
        Assert.Contains("Docs/ByN", result.GetProperty("IndexesCompacted").EnumerateArray().Select(e => e.GetString()));
        _ = sawOffline; // the compaction of a small file may end between two polls

        var stats = await ReadJson(await s.Http.GetAsync("/databases/db/stats"));
        Assert.Equal(1000, stats.GetProperty("CountOfDocuments").GetInt64());
        var doc = await ReadJson(await s.Http.GetAsync("/databases/db/docs?id=docs/9999"));
        Assert.Equal(9999, doc.GetProperty("Results")[0].GetProperty("N").GetInt32());
        var q = await ReadJson(await s.Http.PostAsync("/databases/db/queries", Json("""{"Query":"from index 'Docs/ByN' where N >= 9990"}""")));
        Assert.Equal(10, q.GetProperty("TotalResults").GetInt32());
        Assert.False(q.GetProperty("IsStale").GetBoolean()); // the index kept its position: nothing to do again
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/docs?id=docs/new", Json("""{"N":1}"""))).StatusCode);
        Assert.Equal(HttpStatusCode.BadRequest, (await s.Http.PostAsync("/admin/compact", Json("""{"DatabaseName":"db"}"""))).StatusCode);
    }

    [Fact]
    public void An_interrupted_compaction_swap_keeps_the_old_storage_or_finishes()
    {
        using var dir = new TestKit.TempDirectory("ravenlite-compact");
        string storage = Path.Combine(dir.Path, "storage");
        // Crashed between the renames: only storage.old and a half-written storage.compacting exist.
        Directory.CreateDirectory(storage + ".old");
        File.WriteAllText(Path.Combine(storage + ".old", "data"), "old");
        Directory.CreateDirectory(storage + ".compacting");
        DatabaseCompaction.Recover(dir.Path);
        Assert.Equal("old", File.ReadAllText(Path.Combine(storage, "data")));
        Assert.False(Directory.Exists(storage + ".compacting"));
        // Crashed after both renames: the new storage stays, the old one goes.
        Directory.CreateDirectory(storage + ".old");
        DatabaseCompaction.Recover(dir.Path);
        Assert.True(Directory.Exists(storage));
        Assert.False(Directory.Exists(storage + ".old"));
    }

    [Fact]
    public async Task Index_lock_mode_priority_and_state_survive_a_restart()
    {
        using var data = new TestKit.TempDirectory("ravenlite-admin");
        await using (var s = await StartWithDatabaseAsync("db", dataDir: data.Path))
        {
            await s.Http.PutAsync("/databases/db/admin/indexes", Json("""{"Indexes":[{"Name":"A","Maps":["from d in docs.Docs select new { d.N }"]}]}"""));
            Assert.Equal(HttpStatusCode.NoContent, (await s.Http.PostAsync("/databases/db/indexes/set-lock", Json("""{"IndexNames":["A"],"Mode":"LockedError"}"""))).StatusCode);
            Assert.Equal(HttpStatusCode.NoContent, (await s.Http.PostAsync("/databases/db/indexes/set-priority", Json("""{"IndexNames":["A"],"Priority":"Low"}"""))).StatusCode);
            if (OperatingSystem.IsLinux())
            {
                // The worker thread (named "index A") runs at nice 10: the priority reaches the OS. Other threads may end
                // between the listing and the read (their /proc entry is gone then): those are skipped.
                static string? Read(string path)
                {
                    try
                    {
                        return File.ReadAllText(path);
                    }
                    catch (Exception e) when (e is DirectoryNotFoundException or FileNotFoundException or IOException)
                    {
                        return null;
                    }
                }
                var nices = Directory.GetDirectories("/proc/self/task")
                    .Where(t => Read(Path.Combine(t, "comm"))?.Trim() == "index A")
                    .Select(t => Read(Path.Combine(t, "stat"))!)
                    .Select(stat => int.Parse(stat[(stat.LastIndexOf(')') + 2)..].Split(' ')[16], System.Globalization.CultureInfo.InvariantCulture))
                    .ToList();
                Assert.Equal([10], nices);
            }
            Assert.Equal(HttpStatusCode.NoContent, (await s.Http.PostAsync("/databases/db/admin/indexes/disable?name=A", null)).StatusCode);
            Assert.Equal(HttpStatusCode.BadRequest, (await s.Http.PostAsync("/databases/db/indexes/set-lock", Json("""{"IndexNames":["A"],"Mode":"Sometimes"}"""))).StatusCode);
            Assert.Equal(HttpStatusCode.InternalServerError, (await s.Http.PostAsync("/databases/db/indexes/set-priority", Json("""{"IndexNames":["Nope"],"Priority":"Low"}"""))).StatusCode);
        }
        await using (var s = await StartAsync(data.Path))
        {
            await s.Http.PutAsync("/databases/db/docs?id=docs/1", Json("""{"N":1,"@metadata":{"@collection":"Docs"}}"""));
            var stats = await ReadJson(await s.Http.GetAsync("/databases/db/indexes/stats?name=A"));
            var a = stats.GetProperty("Results")[0];
            Assert.Equal("LockedError", a.GetProperty("LockMode").GetString());
            Assert.Equal("Low", a.GetProperty("Priority").GetString());
            Assert.Equal("Disabled", a.GetProperty("State").GetString());
            Assert.Equal("Disabled", a.GetProperty("Status").GetString());
            await Task.Delay(300);
            Assert.Equal(0, (await ReadJson(await s.Http.GetAsync("/databases/db/indexes/stats?name=A"))).GetProperty("Results")[0].GetProperty("EntriesCount").GetInt64());
            var put = await s.Http.PutAsync("/databases/db/admin/indexes", Json("""{"Indexes":[{"Name":"A","Maps":["from d in docs.Docs select new { d.M }"]}]}"""));
            Assert.Equal(HttpStatusCode.BadRequest, put.StatusCode);
            Assert.Equal(HttpStatusCode.NoContent, (await s.Http.PostAsync("/databases/db/admin/indexes/enable?name=A", null)).StatusCode);
            var q = await ReadJson(await s.Http.PostAsync("/databases/db/queries", Json("""{"Query":"from index 'A' where N = 1","WaitForNonStaleResults":true}""")));
            Assert.Equal(1, q.GetProperty("TotalResults").GetInt32());
        }
    }
}
