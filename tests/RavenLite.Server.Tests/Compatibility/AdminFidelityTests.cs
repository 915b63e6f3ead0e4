namespace RavenLite.Server.Tests.Compatibility;

/// <summary>
/// Administration routes as RavenDB's clients use them: disabling and enabling databases, the deletion lock, updating a
/// record with its ETag, and the record's <c>AutoIndexes</c> (RavenDB's auto-index shape), <c>IndexesHistory</c>,
/// <c>Analyzers</c> and <c>Sorters</c>.
/// </summary>
public sealed class AdminFidelityTests
{
    private static async Task<JsonElement> Send(TestServer server, HttpMethod method, string path, string? body, HttpStatusCode expect, string? etag = null)
    {
        using var request = new HttpRequestMessage(method, path) { Content = body == null ? null : TestServer.Json(body) };
        if (etag != null)
            request.Headers.TryAddWithoutValidation("ETag", etag);
        var r = await server.Http.SendAsync(request);
        string text = await r.Content.ReadAsStringAsync();
        Assert.True(expect == r.StatusCode, $"{method} {path} → {(int)r.StatusCode}: {text}");
        return text.Length == 0 ? default : JsonDocument.Parse(text).RootElement.Clone();
    }

    [Fact]
    public async Task Databases_are_disabled_and_enabled_and_deletes_honour_the_lock()
    {
        using var dir = new TempDirectory("ravenlite-admin");
        await using (var server = await TestServer.StartWithDatabaseAsync(dataDir: dir.Path))
        {
            await Send(server, HttpMethod.Put, "/databases/db/docs?id=a/1", """{"A":1}""", HttpStatusCode.Created);
            var disabled = await Send(server, HttpMethod.Post, "/admin/databases/disable", """{"DatabaseNames":["db"]}""", HttpStatusCode.OK);
            var status = disabled.GetProperty("Status")[0];
            Assert.Equal("db", status.GetProperty("Name").GetString());
            Assert.True(status.GetProperty("Success").GetBoolean());
            Assert.True(status.GetProperty("Disabled").GetBoolean());
            var refused = await Send(server, HttpMethod.Get, "/databases/db/docs?id=a/1", null, HttpStatusCode.ServiceUnavailable);
            Assert.Contains("DatabaseDisabledException", refused.GetProperty("Type").GetString());
            Assert.True((await Send(server, HttpMethod.Get, "/admin/databases?name=db", null, HttpStatusCode.OK)).GetProperty("Disabled").GetBoolean());
            Assert.True((await Send(server, HttpMethod.Get, "/databases", null, HttpStatusCode.OK)).GetProperty("Databases")[0].GetProperty("Disabled").GetBoolean());
        }
        // Disabled is kept in the record: still so after a restart, until enabled.
        await using (var server = await TestServer.StartAsync(dir.Path))
        {
            await Send(server, HttpMethod.Get, "/databases/db/docs?id=a/1", null, HttpStatusCode.ServiceUnavailable);
            await Send(server, HttpMethod.Post, "/admin/databases/enable", """{"DatabaseNames":["db"]}""", HttpStatusCode.OK);
            await Send(server, HttpMethod.Get, "/databases/db/docs?id=a/1", null, HttpStatusCode.OK);
            await Send(server, HttpMethod.Post, "/admin/databases/disable", """{"DatabaseNames":["nope"]}""", HttpStatusCode.ServiceUnavailable);

            await Send(server, HttpMethod.Post, "/admin/databases/set-lock", """{"DatabaseNames":["db"],"Mode":"PreventDeletesError"}""", HttpStatusCode.OK);
            var locked = await Send(server, HttpMethod.Delete, "/admin/databases", """{"DatabaseNames":["db"],"HardDelete":true}""", HttpStatusCode.BadRequest);
            Assert.Contains("cannot be deleted because of the set lock mode", locked.GetProperty("Message").GetString());
            Assert.Equal("PreventDeletesError", (await Send(server, HttpMethod.Get, "/admin/databases?name=db", null, HttpStatusCode.OK)).GetProperty("LockMode").GetString());
            await Send(server, HttpMethod.Post, "/admin/databases/set-lock", """{"DatabaseNames":["db"],"Mode":"PreventDeletesIgnore"}""", HttpStatusCode.OK);
            await Send(server, HttpMethod.Delete, "/admin/databases", """{"DatabaseNames":["db"],"HardDelete":true}""", HttpStatusCode.OK);
            await Send(server, HttpMethod.Get, "/databases/db/docs?id=a/1", null, HttpStatusCode.OK); // ignored: still there
            await Send(server, HttpMethod.Post, "/admin/databases/set-lock", """{"DatabaseNames":["db"],"Mode":"Sometimes"}""", HttpStatusCode.BadRequest);
            await Send(server, HttpMethod.Post, "/admin/databases/set-lock", """{"DatabaseNames":["db"],"Mode":"Unlock"}""", HttpStatusCode.OK);
            await Send(server, HttpMethod.Delete, "/admin/databases", """{"DatabaseNames":["db"],"HardDelete":true}""", HttpStatusCode.OK);
            await Send(server, HttpMethod.Get, "/databases/db/docs?id=a/1", null, HttpStatusCode.ServiceUnavailable);
        }
    }

    [Fact]
    public async Task A_record_put_with_its_etag_updates_the_database()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var record = await Send(server, HttpMethod.Get, "/admin/databases?name=db", null, HttpStatusCode.OK);
        // Without an ETag a second PUT is a creation of a database that exists.
        await Send(server, HttpMethod.Put, "/admin/databases", """{"DatabaseName":"db"}""", HttpStatusCode.Conflict);
        var updated = await Send(server, HttpMethod.Put, "/admin/databases",
            """{"DatabaseName":"db","Settings":{"Durability":"Buffered","Some.RavenDB.Setting":"5"},"LockMode":"PreventDeletesIgnore"}""", HttpStatusCode.Created,
            etag: record.GetProperty("Etag").GetInt64().ToString(System.Globalization.CultureInfo.InvariantCulture));
        Assert.Equal("db", updated.GetProperty("Name").GetString());
        var after = await Send(server, HttpMethod.Get, "/admin/databases?name=db", null, HttpStatusCode.OK);
        Assert.Equal("Buffered", after.GetProperty("Settings").GetProperty("Durability").GetString());
        Assert.Equal("5", after.GetProperty("Settings").GetProperty("Some.RavenDB.Setting").GetString());
        Assert.Equal("PreventDeletesIgnore", after.GetProperty("LockMode").GetString());
        await Send(server, HttpMethod.Put, "/admin/databases", """{"DatabaseName":"db","Settings":{"Durability":"Sometimes"}}""", HttpStatusCode.BadRequest, etag: "1");
    }

    [Fact]
    public async Task The_record_lists_auto_indexes_in_their_shape_and_keeps_index_history()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await Send(server, HttpMethod.Put, "/databases/db/docs?id=orders/1", """{"Company":"c/1","Total":5,"Lines":[{"P":"x"}],"@metadata":{"@collection":"Orders"}}""", HttpStatusCode.Created);
        await Send(server, HttpMethod.Post, "/databases/db/queries", """{"Query":"from Orders where search(Company, 'c') and Total > 1"}""", HttpStatusCode.OK);
        await Send(server, HttpMethod.Post, "/databases/db/queries", """{"Query":"from Orders group by Company select Company, sum(Total), count()"}""", HttpStatusCode.OK);
        foreach (string text in new[] { "from o in docs.Orders select new { o.Company }", "from o in docs.Orders select new { o.Company, o.Total }" })
            await Send(server, HttpMethod.Put, "/databases/db/admin/indexes", new JsonObject { ["Indexes"] = new JsonArray(new JsonObject { ["Name"] = "Orders/ByCompany", ["Maps"] = new JsonArray(text) }) }.ToJsonString(), HttpStatusCode.Created);
        await Send(server, HttpMethod.Put, "/databases/db/admin/sorters", """{"Sorters":[{"Name":"S","Code":"public class S : RavenLite.Server.Indexing.Analysis.CustomSorter { public override int Compare(string x, string y) => 0; }"}]}""", HttpStatusCode.Created);

        var record = await Send(server, HttpMethod.Get, "/admin/databases?name=db", null, HttpStatusCode.OK);
        var auto = record.GetProperty("AutoIndexes");
        var map = auto.EnumerateObject().Single(p => p.Value.GetProperty("Type").GetString() == "AutoMap").Value;
        Assert.Equal("Orders", map.GetProperty("Collection").GetString());
        Assert.Equal("Search", map.GetProperty("MapFields").GetProperty("Company").GetProperty("Indexing").GetString());
        Assert.Equal("Default", map.GetProperty("MapFields").GetProperty("Total").GetProperty("Indexing").GetString());
        var reduce = auto.EnumerateObject().Single(p => p.Value.GetProperty("Type").GetString() == "AutoMapReduce").Value;
        Assert.Equal(["Company"], reduce.GetProperty("GroupByFieldNames").EnumerateArray().Select(n => n.GetString()));
        Assert.Equal("Sum", reduce.GetProperty("MapFields").GetProperty("Total").GetProperty("Aggregation").GetString());
        Assert.Equal("Count", reduce.GetProperty("MapFields").GetProperty("Count").GetProperty("Aggregation").GetString());
        Assert.False(record.GetProperty("Indexes").TryGetProperty(reduce.GetProperty("Name").GetString()!, out _));

        var history = record.GetProperty("IndexesHistory").GetProperty("Orders/ByCompany").EnumerateArray().ToList();
        Assert.Equal(2, history.Count);
        Assert.Contains("o.Total", history[0].GetProperty("Definition").GetProperty("Maps")[0].GetString());
        Assert.DoesNotContain("o.Total", history[1].GetProperty("Definition").GetProperty("Maps")[0].GetString());
        Assert.Equal("S", record.GetProperty("Sorters").GetProperty("S").GetProperty("Name").GetString());
        Assert.Equal(JsonValueKind.Object, record.GetProperty("Analyzers").ValueKind);
    }
    [Fact]
    public async Task Ongoing_tasks_are_read_one_at_a_time_and_backups_need_no_destination()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var backup = await Send(server, HttpMethod.Post, "/databases/db/admin/periodic-backup", """{"Name":"Nightly","BackupType":"Backup","FullBackupFrequency":"0 2 * * *"}""", HttpStatusCode.OK);
        long taskId = backup.GetProperty("TaskId").GetInt64();
        var info = await Send(server, HttpMethod.Get, $"/databases/db/task?key={taskId}&type=Backup", null, HttpStatusCode.OK);
        Assert.Equal("Nightly", info.GetProperty("TaskName").GetString());
        Assert.Equal("Backup", info.GetProperty("TaskType").GetString());
        Assert.Equal("Enabled", info.GetProperty("TaskState").GetString());
        Assert.Equal(["Local"], info.GetProperty("BackupDestinations").EnumerateArray().Select(d => d.GetString()));
        Assert.True(info.GetProperty("NextBackup").GetProperty("IsFull").GetBoolean());
        // No destination: a folder of the data directory, kept in the task's configuration.
        var record = await Send(server, HttpMethod.Get, "/admin/databases?name=db", null, HttpStatusCode.OK);
        string folder = record.GetProperty("PeriodicBackups")[0].GetProperty("LocalSettings").GetProperty("FolderPath").GetString()!;
        Assert.Equal(Path.Combine(Path.GetFullPath(server.DataDir), "Backups", "db"), folder);
        Assert.Equal("Nightly", (await Send(server, HttpMethod.Get, "/databases/db/task?taskName=nightly&type=Backup", null, HttpStatusCode.OK)).GetProperty("TaskName").GetString());

        await Send(server, HttpMethod.Put, "/databases/db/subscriptions", """{"Query":"from Orders","Name":"Feed"}""", HttpStatusCode.Created);
        var subscription = await Send(server, HttpMethod.Get, "/databases/db/task?taskName=Feed&type=Subscription", null, HttpStatusCode.OK);
        Assert.Equal("from Orders", subscription.GetProperty("Query").GetString());
        Assert.Equal("Feed", subscription.GetProperty("SubscriptionName").GetString());
        await Send(server, HttpMethod.Get, $"/databases/db/task?key={subscription.GetProperty("SubscriptionId").GetInt64()}&type=Subscription", null, HttpStatusCode.OK);
        await Send(server, HttpMethod.Get, "/databases/db/task?key=424242&type=Replication", null, HttpStatusCode.NotFound);
        await Send(server, HttpMethod.Get, "/databases/db/task?taskName=Nope&type=Subscription", null, HttpStatusCode.NotFound);
        await Send(server, HttpMethod.Get, "/databases/db/task?key=1&type=Kafka", null, HttpStatusCode.BadRequest);
    }

    [Fact]
    public async Task Log_mode_and_documents_compression_configuration_are_set_and_read_back()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var logs = await Send(server, HttpMethod.Get, "/admin/logs/configuration", null, HttpStatusCode.OK);
        Assert.Equal("Operations", logs.GetProperty("Mode").GetString()); // the tests run the server at Warning
        await Send(server, HttpMethod.Post, "/admin/logs/configuration", """{"Mode":"None","RetentionTime":"3.00:00:00","Compress":false,"Persist":false}""", HttpStatusCode.NoContent);
        Assert.Equal("None", (await Send(server, HttpMethod.Get, "/admin/logs/configuration", null, HttpStatusCode.OK)).GetProperty("CurrentMode").GetString());
        await Send(server, HttpMethod.Post, "/admin/logs/configuration", """{"Mode":"Loud"}""", HttpStatusCode.BadRequest);
        await Send(server, HttpMethod.Post, "/admin/logs/configuration", """{"Mode":"Operations"}""", HttpStatusCode.NoContent);

        await Send(server, HttpMethod.Post, "/databases/db/admin/documents-compression/config", """{"Collections":["Orders"],"CompressRevisions":true,"CompressAllCollections":false}""", HttpStatusCode.OK);
        var compression = (await Send(server, HttpMethod.Get, "/admin/databases?name=db", null, HttpStatusCode.OK)).GetProperty("DocumentsCompression");
        Assert.Equal(["Orders"], compression.GetProperty("Collections").EnumerateArray().Select(c => c.GetString()));
        Assert.True(compression.GetProperty("CompressRevisions").GetBoolean());
        await Send(server, HttpMethod.Post, "/databases/db/admin/documents-compression/config", """{"Collections":[1]}""", HttpStatusCode.BadRequest);
    }
    [Fact]
    public async Task Sample_data_creates_the_types_asked_and_an_export_writes_the_types_asked()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await Send(server, HttpMethod.Post, "/databases/db/studio/sample-data?operateOnTypes=Documents,Indexes,Attachments,RevisionDocuments", null, HttpStatusCode.NoContent);
        var stats = await Send(server, HttpMethod.Get, "/databases/db/stats", null, HttpStatusCode.OK);
        Assert.True(stats.GetProperty("CountOfDocuments").GetInt64() > 1000);
        Assert.Equal(3, stats.GetProperty("CountOfIndexes").GetInt32());
        Assert.Equal(9, stats.GetProperty("CountOfAttachments").GetInt64()); // one per employee
        Assert.Equal(830, stats.GetProperty("CountOfRevisionDocuments").GetInt64()); // one per order
        var totals = await Send(server, HttpMethod.Post, "/databases/db/queries", """{"Query":"from index 'Orders/Totals' order by Total as double desc","WaitForNonStaleResults":true}""", HttpStatusCode.OK);
        Assert.True(totals.GetProperty("TotalResults").GetInt32() > 0);
        await Send(server, HttpMethod.Post, "/databases/db/studio/sample-data", null, HttpStatusCode.BadRequest); // not empty any more
        await Send(server, HttpMethod.Post, "/databases/db/studio/sample-data?operateOnTypes=Tombstones", null, HttpStatusCode.BadRequest);

        long operation = 70;
        async Task<JsonElement> Export(string options)
        {
            long id = ++operation;
            var r = await server.Http.PostAsync($"/databases/db/smuggler/export?operationId={id}", TestServer.Json(options, contentType: true));
            Assert.Equal(HttpStatusCode.OK, r.StatusCode);
            await using var gzip = new System.IO.Compression.GZipStream(await r.Content.ReadAsStreamAsync(), System.IO.Compression.CompressionMode.Decompress);
            await gzip.CopyToAsync(Stream.Null); // the whole dump read: the export has completed
            return (await Send(server, HttpMethod.Get, $"/databases/db/operations/state?id={id}", null, HttpStatusCode.OK)).GetProperty("Result");
        }
        var onlyIndexes = await Export("""{"OperateOnTypes":"Indexes"}""");
        Assert.Equal(0, onlyIndexes.GetProperty("Documents").GetProperty("ReadCount").GetInt64());
        Assert.Equal(3, onlyIndexes.GetProperty("Indexes").GetProperty("ReadCount").GetInt64());
        var documents = await Export("""{"OperateOnTypes":"Documents,RevisionDocuments"}""");
        Assert.True(documents.GetProperty("Documents").GetProperty("ReadCount").GetInt64() > 1000);
        Assert.Equal(830, documents.GetProperty("RevisionDocuments").GetProperty("ReadCount").GetInt64());
        Assert.Equal(0, documents.GetProperty("Attachments").GetProperty("ReadCount").GetInt64());
        Assert.Equal(0, documents.GetProperty("Indexes").GetProperty("ReadCount").GetInt64());
        var everything = await Export("{}");
        Assert.Equal(9, everything.GetProperty("Attachments").GetProperty("ReadCount").GetInt64());
    }
}
