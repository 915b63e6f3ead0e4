using System.Collections.Concurrent;
using System.Globalization;
using RavenLite.Server.Databases;
using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Backups;

/// <summary>
/// Backup and restore over HTTP. The oracle of exactness: 64 writers each own their ids and write them in sequence
/// (puts, and deletes sent in one batch with a put of the writer's marker document, so the delete's transaction is
/// known by the marker's etag); a backup taken meanwhile reports the last etag E of its transaction; the restored
/// database must hold, for every id, exactly the content of the last operation with an etag ≤ E (absent when that
/// was a delete or there was none) and nothing else — a full snapshot, then an incremental one over more writes.
/// Bad input (folders that are not writable or hold no backups, existing names, damaged files, Backup-type
/// incrementals) is a 4xx or a faulted operation that leaves no database behind.
/// </summary>
public sealed class BackupTests
{
    private const int Writers = 64;

    private sealed record Op(string Id, long Etag, string? Json);

    private static long EtagOf(string changeVector) =>
        long.Parse(changeVector.Split(':')[1].Split('-')[0], CultureInfo.InvariantCulture);

    /// <summary>Writes until <paramref name="stop"/>; every acknowledged operation lands in <paramref name="log"/>.</summary>
    private static async Task WriteAsync(TestServer s, int writer, ConcurrentBag<Op> log, CancellationToken stop)
    {
        var random = new Random(writer);
        int seq = 0;
        while (!stop.IsCancellationRequested)
        {
            string id = $"items/{writer}-{random.Next(40)}";
            seq++;
            if (random.Next(6) == 0)
            {
                string marker = $$$"""{"Seq":{{{seq}}},"@metadata":{"@collection":"Markers"}}""";
                string batch = $$"""{"Commands":[{"Type":"DELETE","Id":"{{id}}","ChangeVector":null},{"Type":"PUT","Id":"markers/{{writer}}","ChangeVector":null,"Document":{{marker}}}]}""";
                var r = await s.Http.PostAsync("/databases/src/bulk_docs", Json(batch), CancellationToken.None); // an operation is always waited for: an unlogged acknowledged write would break the oracle
                Assert.Equal(HttpStatusCode.Created, r.StatusCode);
                var results = (await ReadJson(r)).GetProperty("Results");
                long etag = EtagOf(results[1].GetProperty("@change-vector").GetString()!);
                log.Add(new Op(id, etag, null));
                log.Add(new Op($"markers/{writer}", etag, marker));
            }
            else
            {
                string body = $$$"""{"Writer":{{{writer}}},"Seq":{{{seq}}},"Text":"{{{new string('x', random.Next(10, 400))}}}","@metadata":{"@collection":"Items"}}""";
                var r = await s.Http.PutAsync($"/databases/src/docs?id={id}", Json(body), CancellationToken.None);
                Assert.Equal(HttpStatusCode.Created, r.StatusCode);
                log.Add(new Op(id, EtagOf((await ReadJson(r)).GetProperty("ChangeVector").GetString()!), body));
            }
        }
    }

    private static async Task<JsonElement> WaitForOperation(TestServer s, string stateUrl)
    {
        for (int i = 0; i < 1200; i++)
        {
            var state = await ReadJson(await s.Http.GetAsync(stateUrl));
            if (state.GetProperty("Status").GetString() != "InProgress")
                return state;
            await Task.Delay(50);
        }
        throw new TimeoutException("The operation did not end in 60 s: " + stateUrl);
    }

    private static async Task<JsonElement> Backup(TestServer s, string url, string? body = null)
    {
        var r = await s.Http.PostAsync(url, body == null ? null : Json(body));
        var answer = await ReadJson(r);
        Assert.True(r.StatusCode == HttpStatusCode.OK, answer.ToString());
        long id = answer.GetProperty("OperationId").GetInt64();
        var state = await WaitForOperation(s, $"/databases/src/operations/state?id={id}");
        Assert.True(state.GetProperty("Status").GetString() == "Completed", state.ToString());
        return state.GetProperty("Result");
    }

    private static async Task<JsonElement> Restore(TestServer s, string name, string folder, string? last = null)
    {
        string body = JsonSerializer.Serialize(new { DatabaseName = name, BackupLocation = folder, LastFileNameToRestore = last, Type = "Local" });
        var r = await s.Http.PostAsync("/admin/restore/database", Json(body));
        var answer = await ReadJson(r);
        Assert.True(r.StatusCode == HttpStatusCode.OK, answer.ToString());
        return await WaitForOperation(s, $"/operations/state?id={answer.GetProperty("OperationId").GetInt64()}");
    }

    private static async Task<Dictionary<string, string>> Documents(TestServer s, string db)
    {
        var docs = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        foreach (string prefix in new[] { "items/", "markers/" })
        {
            var r = await s.Http.GetAsync($"/databases/{db}/streams/docs?startsWith={prefix}");
            Assert.Equal(HttpStatusCode.OK, r.StatusCode);
            foreach (var d in (await ReadJson(r)).GetProperty("Results").EnumerateArray())
                docs[d.GetProperty("@metadata").GetProperty("@id").GetString()!] = d.GetRawText();
        }
        return docs;
    }

    /// <summary>Asserts <paramref name="db"/> holds exactly what the acknowledged operations left at etag <paramref name="e"/>.</summary>
    private static async Task AssertStateAt(TestServer s, string db, IEnumerable<Op> log, long e)
    {
        var expected = log.Where(o => o.Etag <= e).GroupBy(o => o.Id, StringComparer.OrdinalIgnoreCase)
            .Select(g => g.MaxBy(o => o.Etag)!).Where(o => o.Json != null).ToDictionary(o => o.Id, o => o.Json!, StringComparer.OrdinalIgnoreCase);
        var actual = await Documents(s, db);
        Assert.Equal(expected.Count, actual.Count);
        foreach (var (id, json) in expected)
        {
            Assert.True(actual.TryGetValue(id, out var got), $"{id} is missing from {db} (etag ≤ {e})");
            using var want = JsonDocument.Parse(json);
            using var have = JsonDocument.Parse(got);
            foreach (var p in want.RootElement.EnumerateObject().Where(p => p.Name != "@metadata"))
                Assert.True(have.RootElement.GetProperty(p.Name).GetRawText() == p.Value.GetRawText(), $"{id}.{p.Name} in {db}: {got}, expected {json}");
            Assert.True(EtagOf(have.RootElement.GetProperty("@metadata").GetProperty("@change-vector").GetString()!) <= e);
        }
    }

    [Fact]
    public async Task A_backup_taken_under_64_client_writes_restores_the_database_at_its_transaction_exactly_full_then_incremental()
    {
        using var backups = new TestKit.TempDirectory("ravenlite-backups");
        await using var s = await StartWithDatabaseAsync("src");
        var index = await s.Http.PutAsync("/databases/src/admin/indexes", Json("""{"Indexes":[{"Name":"Items/ByWriter","Maps":["from i in docs.Items select new { i.Writer }"]}]}"""));
        Assert.True(index.IsSuccessStatusCode, index.StatusCode.ToString());
        string config = JsonSerializer.Serialize(new { Name = "t", BackupType = "Snapshot", LocalSettings = new { FolderPath = backups.Path }, FullBackupFrequency = "0 3 * * *", IncrementalBackupFrequency = "0 * * * *" });
        var put = await ReadJson(await s.Http.PostAsync("/databases/src/admin/periodic-backup", Json(config)));
        long taskId = put.GetProperty("TaskId").GetInt64();

        // Documents no writer touches: their pages stay as they were, so the incremental backup must leave them out.
        string pad = new('s', 500);
        for (int batch = 0; batch < 4; batch++)
        {
            var commands = string.Join(",", Enumerable.Range(batch * 500, 500).Select(i =>
                $$$$"""{"Type":"PUT","Id":"static/{{{{i}}}}","ChangeVector":null,"Document":{"Pad":"{{{{pad}}}}","@metadata":{"@collection":"Static"}}}"""));
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PostAsync("/databases/src/bulk_docs", Json($$"""{"Commands":[{{commands}}]}"""))).StatusCode);
        }

        var log = new ConcurrentBag<Op>();
        using var stop = new CancellationTokenSource();
        var writers = Enumerable.Range(0, Writers).Select(w => Task.Run(() => WriteAsync(s, w, log, stop.Token))).ToArray();
        await Task.Delay(1500);
        var full = await Backup(s, $"/databases/src/admin/backup/database?isFullBackup=true&taskId={taskId}");
        await Task.Delay(700);
        var incremental = await Backup(s, $"/databases/src/admin/backup/database?isFullBackup=false&taskId={taskId}");
        await Task.Delay(300);
        stop.Cancel();
        await Task.WhenAll(writers);

        long fullEtag = full.GetProperty("LastEtag").GetInt64();
        long incrementalEtag = incremental.GetProperty("LastEtag").GetInt64();
        Assert.False(full.GetProperty("IsIncremental").GetBoolean());
        Assert.True(incremental.GetProperty("IsIncremental").GetBoolean());
        Assert.True(log.Any(o => o.Etag > incrementalEtag), "writes went on after the incremental backup");
        Assert.True(log.Any(o => o.Etag > fullEtag && o.Etag <= incrementalEtag), "writes landed between the two backups");
        Assert.True(incremental.GetProperty("PagesWritten").GetInt64() < incremental.GetProperty("PagesReachable").GetInt64(),
            $"the incremental wrote {incremental.GetProperty("PagesWritten").GetInt64()} of {incremental.GetProperty("PagesReachable").GetInt64()} pages");
        string folder = full.GetProperty("LocalBackup").GetProperty("BackupDirectory").GetString()!;
        Assert.Equal(folder, incremental.GetProperty("LocalBackup").GetProperty("BackupDirectory").GetString());

        // The task's status names what it did last.
        var status = (await ReadJson(await s.Http.GetAsync($"/periodic-backup/status?name=src&taskId={taskId}"))).GetProperty("Status");
        Assert.False(status.GetProperty("IsFull").GetBoolean());
        Assert.Equal(incrementalEtag, status.GetProperty("LastEtag").GetInt64());
        Assert.Equal(JsonValueKind.String, status.GetProperty("LastFullBackup").ValueKind);
        // The database's ongoing tasks list it too (RavenDB's OngoingTaskBackup), with its next run.
        var listed = (await ReadJson(await s.Http.GetAsync("/databases/src/tasks"))).GetProperty("OngoingTasks").EnumerateArray().Single(t => t.GetProperty("TaskType").GetString() == "Backup");
        Assert.Equal(taskId, listed.GetProperty("TaskId").GetInt64());
        Assert.Equal("t", listed.GetProperty("TaskName").GetString());
        Assert.Equal(JsonValueKind.String, listed.GetProperty("LastFullBackup").ValueKind);
        Assert.Equal(JsonValueKind.Object, listed.GetProperty("NextBackup").ValueKind);

        // The full snapshot alone, then the chain.
        string fullFile = full.GetProperty("LocalBackup").GetProperty("FileName").GetString()!;
        var restored = await Restore(s, "at-full", folder, fullFile);
        Assert.True(restored.GetProperty("Status").GetString() == "Completed", restored.ToString());
        await AssertStateAt(s, "at-full", log, fullEtag);
        restored = await Restore(s, "at-incremental", folder);
        Assert.True(restored.GetProperty("Status").GetString() == "Completed", restored.ToString());
        await AssertStateAt(s, "at-incremental", log, incrementalEtag);

        // The restored index answers over the restored documents once caught up; the database takes writes.
        var query = await ReadJson(await s.Http.PostAsync("/databases/at-incremental/queries?waitForNonStaleResultsTimeout=00:00:30",
            Json("""{"Query":"from index 'Items/ByWriter' where Writer = 7","WaitForNonStaleResults":true}""")));
        int expectedOfWriter7 = (await Documents(s, "at-incremental")).Count(d => d.Key.StartsWith("items/7-", StringComparison.OrdinalIgnoreCase));
        Assert.Equal(expectedOfWriter7, query.GetProperty("TotalResults").GetInt32());
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/at-incremental/docs?id=items/new", Json("""{"New":true}"""))).StatusCode);

        // The restored database's tasks start afresh: no status, so its next backup is a full one.
        var restoredStatus = await ReadJson(await s.Http.GetAsync($"/periodic-backup/status?name=at-incremental&taskId={taskId}"));
        Assert.Equal(JsonValueKind.Null, restoredStatus.GetProperty("Status").ValueKind);
    }

    [Fact]
    public async Task A_due_periodic_task_runs_on_its_own_and_a_dump_backup_restores_by_import()
    {
        using var backups = new TestKit.TempDirectory("ravenlite-backups");
        await using var s = await StartWithDatabaseAsync("src");
        for (int i = 0; i < 30; i++)
            await s.Http.PutAsync($"/databases/src/docs?id=people/{i}", Json($$$"""{"N":{{{i}}},"@metadata":{"@collection":"People"}}"""));
        string config = JsonSerializer.Serialize(new { BackupType = "Backup", LocalSettings = new { FolderPath = backups.Path }, FullBackupFrequency = "*/5 * * * *" });
        long taskId = (await ReadJson(await s.Http.PostAsync("/databases/src/admin/periodic-backup", Json(config)))).GetProperty("TaskId").GetInt64();
        var registry = (DatabaseRegistry)s.Services.GetService(typeof(DatabaseRegistry))!;
        var db = registry.Acquire("src");
        try
        {
            var task = db.Backups.Get(taskId)!;
            Assert.True(db.Backups.NextRun(task)!.Value.At > DateTime.UtcNow); // not due yet: created just now
            task.CreatedAt = DateTime.UtcNow.AddMinutes(-6); // as if created six minutes ago: a run is due
            Assert.True(db.Backups.NextRun(task)!.Value.At <= DateTime.UtcNow);
        }
        finally
        {
            db.Release();
        }
        JsonElement status = default;
        for (int i = 0; i < 200 && status.ValueKind != JsonValueKind.Object; i++)
        {
            await Task.Delay(50);
            status = (await ReadJson(await s.Http.GetAsync($"/periodic-backup/status?name=src&taskId={taskId}"))).GetProperty("Status");
        }
        Assert.Equal(JsonValueKind.Object, status.ValueKind);
        Assert.True(status.GetProperty("IsFull").GetBoolean());
        string folder = status.GetProperty("LocalBackup").GetProperty("BackupDirectory").GetString()!;
        Assert.EndsWith(".ravendb-full-backup", status.GetProperty("LocalBackup").GetProperty("FileName").GetString(), StringComparison.Ordinal);

        var restored = await Restore(s, "from-dump", folder);
        Assert.True(restored.GetProperty("Status").GetString() == "Completed", restored.ToString());
        var doc = await ReadJson(await s.Http.GetAsync("/databases/from-dump/docs?id=people/17"));
        Assert.Equal(17, doc.GetProperty("Results")[0].GetProperty("N").GetInt32());
    }

    [Fact]
    public async Task Bad_backup_and_restore_requests_are_refused_and_leave_nothing_behind()
    {
        using var backups = new TestKit.TempDirectory("ravenlite-backups");
        await using var s = await StartWithDatabaseAsync("src");
        await s.Http.PutAsync("/databases/src/docs?id=a/1", Json("""{"A":1}"""));

        async Task<string> Refused(string url, string body)
        {
            var r = await s.Http.PostAsync(url, Json(body));
            var json = await ReadJson(r);
            Assert.True(r.StatusCode == HttpStatusCode.BadRequest, $"{url}: {(int)r.StatusCode} {json}");
            return json.GetProperty("Message").GetString()!;
        }

        string notWritable = Path.Combine(backups.Path, "file");
        await File.WriteAllTextAsync(notWritable, "a file, not a folder");
        Assert.Contains("not writable", await Refused("/databases/src/admin/backup", JsonSerializer.Serialize(new { BackupType = "Snapshot", LocalSettings = new { FolderPath = Path.Combine(notWritable, "sub") } })), StringComparison.Ordinal);
        Assert.Contains("FolderPath is required", await Refused("/databases/src/admin/backup", """{"BackupType":"Snapshot"}"""), StringComparison.Ordinal);
        Assert.Contains("local folder only", await Refused("/databases/src/admin/backup", JsonSerializer.Serialize(new { LocalSettings = new { FolderPath = backups.Path }, S3Settings = new { BucketName = "b" } })), StringComparison.Ordinal);
        Assert.Contains("needs BackupType 'Snapshot'", await Refused("/databases/src/admin/periodic-backup", JsonSerializer.Serialize(new { LocalSettings = new { FolderPath = backups.Path }, IncrementalBackupFrequency = "0 * * * *" })), StringComparison.Ordinal);
        Assert.Contains("cron", await Refused("/databases/src/admin/periodic-backup", JsonSerializer.Serialize(new { BackupType = "Snapshot", LocalSettings = new { FolderPath = backups.Path }, FullBackupFrequency = "every night" })), StringComparison.Ordinal);
        Assert.Contains("holds no backup files", await Refused("/admin/restore/database", JsonSerializer.Serialize(new { DatabaseName = "x", BackupLocation = backups.Path })), StringComparison.Ordinal);
        Assert.Contains("is not a folder", await Refused("/admin/restore/database", JsonSerializer.Serialize(new { DatabaseName = "x", BackupLocation = "/nonexistent/backups" })), StringComparison.Ordinal);

        var result = await Backup(s, "/databases/src/admin/backup", JsonSerializer.Serialize(new { BackupType = "Snapshot", LocalSettings = new { FolderPath = backups.Path } }));
        string folder = result.GetProperty("LocalBackup").GetProperty("BackupDirectory").GetString()!;
        string file = Path.Combine(folder, result.GetProperty("LocalBackup").GetProperty("FileName").GetString()!);
        Assert.Contains("already exists", await Refused("/admin/restore/database", JsonSerializer.Serialize(new { DatabaseName = "src", BackupLocation = folder })), StringComparison.Ordinal);
        Assert.Contains("is not a backup file", await Refused("/admin/restore/database", JsonSerializer.Serialize(new { DatabaseName = "x", BackupLocation = folder, LastFileNameToRestore = "nope" })), StringComparison.Ordinal);

        // A damaged snapshot: the restore operation fails naming the problem, and no database is left.
        var bytes = await File.ReadAllBytesAsync(file);
        using (var zip = new System.IO.Compression.ZipArchive(new MemoryStream(bytes)))
        using (var pages = zip.GetEntry("storage.pages")!.Open())
        using (var copy = new MemoryStream())
        {
            await pages.CopyToAsync(copy);
            var damaged = copy.ToArray();
            damaged[damaged.Length / 2] ^= 1;
            string damagedFolder = Path.Combine(backups.Path, "damaged");
            Directory.CreateDirectory(damagedFolder);
            using (var outZip = System.IO.Compression.ZipFile.Open(Path.Combine(damagedFolder, Path.GetFileName(file)), System.IO.Compression.ZipArchiveMode.Create))
            {
                foreach (var entry in zip.Entries)
                {
                    using var target = outZip.CreateEntry(entry.FullName).Open();
                    if (entry.FullName == "storage.pages")
                        target.Write(damaged);
                    else
                        await entry.Open().CopyToAsync(target);
                }
            }
            var failed = await Restore(s, "broken", damagedFolder);
            Assert.Equal("Faulted", failed.GetProperty("Status").GetString());
            Assert.Contains("checksum", failed.GetProperty("Result").GetProperty("Message").GetString(), StringComparison.Ordinal);
        }
        var names = await ReadJson(await s.Http.GetAsync("/databases"));
        Assert.DoesNotContain("broken", names.GetRawText(), StringComparison.OrdinalIgnoreCase);
        Assert.Empty(Directory.GetDirectories(Path.Combine(s.DataDir, "Databases"), ".restoring-*"));
        Assert.Equal(HttpStatusCode.ServiceUnavailable, (await s.Http.GetAsync("/databases/broken/docs?id=a/1")).StatusCode);
        Assert.Empty(Directory.GetFiles(folder, "*.in-progress"));
    }
}
