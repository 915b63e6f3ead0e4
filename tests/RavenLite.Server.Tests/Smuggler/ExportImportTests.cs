using System.IO.Compression;
using System.Net.Http.Headers;
using System.Security.Cryptography;
using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Smuggler;

/// <summary>
/// <c>/smuggler/export</c> and <c>/smuggler/import</c>: a dump laid out as RavenDB 6/7 writes it (built below from
/// RavenDB's smuggler format: attachment contents inline after their header objects, counter groups per database id,
/// binary time-series segments, auto indexes, tombstones, revisions) imports what RavenLite reads and reports the rest;
/// RavenLite's own export imports back into another database with nothing lost; truncated and corrupt dumps are 400s
/// that name the problem, report what was imported, and leave no staged attachment content behind.
/// </summary>
public sealed class ExportImportTests
{
    private static byte[] RavenDbSample(byte[] logo, byte[] segment)
    {
        string hash = Convert.ToBase64String(SHA512.HashData(logo)[..32]); // RavenDB's hash is its own (not SHA-256): only matched by name
        var ms = new MemoryStream();
        using (var gz = new GZipStream(ms, CompressionLevel.Optimal, leaveOpen: true))
        {
            void W(string s) => gz.Write(Encoding.UTF8.GetBytes(s));
            W("""{"BuildVersion":60016,"DatabaseRecord":{"DatabaseName":"Northwind","Encrypted":false,"UnusedDatabaseIds":[],"LockMode":"Unlock","Settings":{},"Revisions":null,"Expiration":null,"Client":null,"Sorters":{},"Analyzers":{},"Studio":{"Environment":"None","Disabled":false}},""");
            W("\"Docs\":[");
            W($$"""{"@metadata":{"@export-type":"Attachment"},"Hash":"{{hash}}","Size":{{logo.Length}},"Tag":"A"}""");
            gz.Write(logo);
            W($$$""",{"Name":"Alfreds","Address":{"City":"Berlin"},"@metadata":{"@collection":"Companies","@change-vector":"A:1-AAAAAAAAAAAAAAAAAAAAAA, B:7-BBBBBBBBBBBBBBBBBBBBBB","@id":"companies/1-A","@last-modified":"2024-05-01T10:00:00.0000000Z","@flags":"HasAttachments, HasCounters","@attachments":[{"Name":"logo.png","Hash":"{{{hash}}}","ContentType":"image/png","Size":{{{logo.Length}}}}],"@counters":["Likes","Views"]}}""");
            W(""",{"FirstName":"Ana","@metadata":{"@collection":"Employees","@change-vector":"A:2-AAAAAAAAAAAAAAAAAAAAAA","@id":"employees/1-A","@last-modified":"2024-05-01T10:00:01.0000000Z","@flags":"HasTimeSeries","@timeseries":["HeartRate"]}}""");
            W(""",{"Total":42,"@metadata":{"@collection":"OrderTotals","@change-vector":"A:3-AAAAAAAAAAAAAAAAAAAAAA","@id":"OrderTotals/1234","@flags":"Artificial, FromIndex"}}""");
            W("],");
            W("""
                "RevisionDocuments":[{"Name":"Alfreds (old)","@metadata":{"@collection":"Companies","@id":"companies/1-A","@flags":"Revision","@change-vector":"A:0-AAAAAAAAAAAAAAAAAAAAAA"}}],
                "Tombstones":[{"Key":"companies/9-a","Type":"Document","Collection":"Companies","Flags":"None","ChangeVector":"A:9-AAAAAAAAAAAAAAAAAAAAAA","DeletedEtag":8,"Etag":9,"LastModified":"2024-05-01T10:00:02.0000000Z"}],
                "Conflicts":[],
                "Indexes":[
                  {"Type":"Map","IndexDefinition":{"Name":"Companies/ByCity","Maps":["from c in docs.Companies select new { City = c.Address.City }"],"Reduce":null,"Fields":{},"Configuration":{},"LockMode":"Unlock","Priority":"Normal","State":null,"SourceType":"Documents","Type":"Map","AdditionalSources":{},"AdditionalAssemblies":[],"OutputReduceToCollection":null}},
                  {"Type":"AutoMap","IndexDefinition":{"Name":"Auto/Employees/ByFirstName","Collections":["Employees"],"MapFields":{"FirstName":{"Indexing":"Default"}}}}],
                "Identities":[{"Key":"companies|","Value":"12"}],
                "CompareExchange":[{"Key":"emails/ana@northwind.com","Value":"{\"Object\":\"employees/1-A\",\"@metadata\":{}}"},{"Key":"gone"}],
                "CounterGroups":[{"DocId":"companies/1-A","ChangeVector":"A:3-AAAAAAAAAAAAAAAAAAAAAA","Values":{"@dbIds":["AAAAAAAAAAAAAAAAAAAAAA","BBBBBBBBBBBBBBBBBBBBBB"],"@counters":{"likes":[5,1,3,2],"views":[10,3,0,0],"shares":"AAAAAAAAAAAAAAAAAAAAAA:4"},"@names":{"likes":"Likes","views":"Views"}}}],
                "Subscriptions":[{"Query":"from Companies","ChangeVectorForNextBatchStartingPoint":null,"SubscriptionId":5,"SubscriptionName":"all","Disabled":false}],
                "TimeSeries":[{"Document":{"DocId":"employees/1-A","Name":"HeartRate","ChangeVector":"A:4-AAAAAAAAAAAAAAAAAAAAAA","Collection":"Employees","Baseline":"2024-01-01T00:00:00.0000000Z"},"Size":
                """ + segment.Length + "}");
            gz.Write(segment);
            W("""],"TimeSeriesDeletedRanges":[],"ReplicationHubCertificates":[]}""");
        }
        return ms.ToArray();
    }

    private static async Task<JsonElement> Import(TestServer s, string db, byte[] dump, HttpStatusCode expect, bool multipart = true)
    {
        HttpContent content;
        if (multipart)
        {
            var form = new MultipartFormDataContent { { new StringContent("""{"OperateOnTypes":"Documents, Indexes"}"""), "importOptions" } };
            var file = new ByteArrayContent(dump);
            file.Headers.ContentType = new MediaTypeHeaderValue("application/octet-stream");
            form.Add(file, "file", "dump.ravendbdump");
            content = form;
        }
        else
        {
            content = new ByteArrayContent(dump);
        }
        var r = await s.Http.PostAsync($"/databases/{db}/smuggler/import?operationId=77", content);
        var json = await ReadJson(r);
        Assert.True(r.StatusCode == expect, $"{(int)r.StatusCode}: {json}");
        return json;
    }

    private static async Task<JsonElement> Doc(TestServer s, string db, string id) =>
        (await ReadJson(await s.Http.GetAsync($"/databases/{db}/docs?id={Uri.EscapeDataString(id)}"))).GetProperty("Results")[0];

    private static async Task<long> TreeEntries(TestServer s, string db, string tree) =>
        (await ReadJson(await s.Http.GetAsync($"/studio-api/storage?database={db}"))).GetProperty("Trees").EnumerateArray()
            .Where(t => t.GetProperty("Name").GetString() == tree).Select(t => t.GetProperty("Entries").GetInt64()).FirstOrDefault();

    [Fact]
    public async Task A_dump_in_RavenDBs_format_imports_what_RavenLite_reads_and_reports_the_rest()
    {
        var logo = RandomNumberGenerator.GetBytes(70_000);
        await using var s = await StartWithDatabaseAsync();
        var result = await Import(s, "db", RavenDbSample(logo, RandomNumberGenerator.GetBytes(64)), HttpStatusCode.OK);
        Assert.Equal(2, result.GetProperty("Documents").GetProperty("ReadCount").GetInt64());
        Assert.Equal(1, result.GetProperty("Documents").GetProperty("SkippedCount").GetInt64()); // the artificial map-reduce output
        string messages = string.Join("\n", result.GetProperty("Messages").EnumerateArray().Select(m => m.GetString()));
        Assert.Contains("Auto/Employees/ByFirstName", messages);
        Assert.Contains("time-series segments", messages);
        Assert.DoesNotContain("RevisionDocuments", messages); // imported now
        Assert.Contains("Tombstones", messages);
        var revisions = (await ReadJson(await s.Http.GetAsync("/databases/db/revisions?id=companies/1-A"))).GetProperty("Results");
        Assert.Equal("Alfreds (old)", revisions[0].GetProperty("Name").GetString());

        var company = await Doc(s, "db", "companies/1-A");
        Assert.Equal("Berlin", company.GetProperty("Address").GetProperty("City").GetString());
        var meta = company.GetProperty("@metadata");
        Assert.Equal("Companies", meta.GetProperty("@collection").GetString());
        Assert.Equal(["Likes", "Views"], meta.GetProperty("@counters").EnumerateArray().Select(c => c.GetString()));
        var att = meta.GetProperty("@attachments")[0];
        Assert.Equal(("logo.png", "image/png", 70_000L), (att.GetProperty("Name").GetString(), att.GetProperty("ContentType").GetString(), att.GetProperty("Size").GetInt64()));
        Assert.Equal(logo, await s.Http.GetByteArrayAsync("/databases/db/attachments?id=companies/1-A&name=logo.png"));
        var counters = (await ReadJson(await s.Http.GetAsync("/databases/db/counters?docId=companies/1-A"))).GetProperty("Counters");
        Assert.Equal([("Likes", 8L), ("Views", 10L)], counters.EnumerateArray().Select(c => (c.GetProperty("CounterName").GetString()!, c.GetProperty("TotalValue").GetInt64())).OrderBy(x => x.Item1));
        Assert.Equal(HttpStatusCode.NotFound, (await s.Http.GetAsync("/databases/db/docs?id=OrderTotals/1234")).StatusCode);
        Assert.Equal(12, (await ReadJson(await s.Http.GetAsync("/databases/db/debug/identities"))).GetProperty("companies|").GetInt64());
        var cmp = (await ReadJson(await s.Http.GetAsync("/databases/db/cmpxchg?key=emails/ana@northwind.com"))).GetProperty("Results")[0];
        Assert.Equal("employees/1-A", cmp.GetProperty("Value").GetProperty("Object").GetString());
        var query = await ReadJson(await s.Http.PostAsync("/databases/db/queries", Json("""{"Query":"from index 'Companies/ByCity' where City = 'Berlin'","WaitForNonStaleResults":true}""")));
        Assert.Equal(1, query.GetProperty("TotalResults").GetInt64());
        var state = await ReadJson(await s.Http.GetAsync("/databases/db/operations/state?id=77"));
        Assert.Equal("Completed", state.GetProperty("Status").GetString());
        Assert.Equal(2, state.GetProperty("Result").GetProperty("Documents").GetProperty("ReadCount").GetInt64());
    }

    [Fact]
    public async Task RavenLites_export_imports_into_another_database_with_nothing_lost()
    {
        await using var s = await StartWithDatabaseAsync();
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/admin/databases?name=copy", Json("""{"DatabaseName":"copy"}"""))).StatusCode);
        var contents = Enumerable.Range(0, 3).Select(i => RandomNumberGenerator.GetBytes(i == 2 ? 9_000_000 : 1000 + i)).ToArray(); // one spans chunks
        for (int i = 1; i <= 300; i++)
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync($"/databases/db/docs?id=items/{i}", Json("{\"N\":" + i + ",\"Tags\":[\"a\",\"b\"],\"@metadata\":{\"@collection\":\"Items\"}}"))).StatusCode);
        for (int i = 1; i <= 6; i++)
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync($"/databases/db/attachments?id=items/{i}&name=f{i}.bin&contentType=application/x-test", new ByteArrayContent(contents[i % 3]))).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await s.Http.PostAsync("/databases/db/counters", Json("""{"Documents":[{"DocumentId":"items/7","Operations":[{"Type":"Increment","CounterName":"Likes","Delta":41},{"Type":"Increment","CounterName":"Views","Delta":-3}]}]}"""))).StatusCode);
        Assert.Equal(HttpStatusCode.NoContent, (await s.Http.PostAsync("/databases/db/timeseries?docId=items/8", Json("""{"Name":"Temp","Appends":[{"Timestamp":"2026-01-01T00:00:00Z","Values":[1.5,2]},{"Timestamp":"2026-01-01T00:00:10Z","Values":[3],"Tag":"t"}]}"""))).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await s.Http.PutAsync("/databases/db/cmpxchg?key=k1&index=0", Json("""{"Object":{"V":1}}"""))).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await s.Http.PostAsync("/databases/db/identity/seed?name=items&value=500", null)).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/indexes", Json("""{"Indexes":[{"Name":"Items/ByN","Maps":["from i in docs.Items select new { i.N }"]}]}"""))).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await s.Http.PostAsync("/databases/db/admin/revisions/config", Json("""{"Collections":{"Notes":{"Disabled":false}}}"""))).StatusCode);
        foreach (string version in new[] { "v1", "v2", "v3" })
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/docs?id=notes/1", Json("{\"Text\":\"" + version + "\",\"@metadata\":{\"@collection\":\"Notes\"}}"))).StatusCode);

        Assert.Equal(HttpStatusCode.NoContent, (await s.Http.PutAsync("/databases/db/admin/configuration/client", Json("""{"MaxNumberOfRequestsPerSession":7}"""))).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await s.Http.PostAsync("/databases/db/admin/expiration/config", Json("""{"Disabled":false,"DeleteFrequencyInSec":30}"""))).StatusCode);
        Assert.Equal(HttpStatusCode.NoContent, (await s.Http.PutAsync("/databases/db/admin/configuration/settings", Json("""{"MergerMaxOperations":"300"}"""))).StatusCode);
        await Task.Delay(200); // the settings reopen the database

        var export = await s.Http.PostAsync("/databases/db/smuggler/export?operationId=5", Json("{}"));
        Assert.Equal(HttpStatusCode.OK, export.StatusCode);
        byte[] dump = await export.Content.ReadAsByteArrayAsync();
        var exported = await ReadJson(await s.Http.GetAsync("/databases/db/operations/state?id=5"));
        Assert.Equal(301, exported.GetProperty("Result").GetProperty("Documents").GetProperty("ReadCount").GetInt64()); // 300 items and a note
        Assert.Equal(3, exported.GetProperty("Result").GetProperty("RevisionDocuments").GetProperty("ReadCount").GetInt64());
        Assert.Equal(3, exported.GetProperty("Result").GetProperty("Attachments").GetProperty("ReadCount").GetInt64()); // contents once each

        var imported = await Import(s, "copy", dump, HttpStatusCode.OK, multipart: false);
        Assert.Equal(301, imported.GetProperty("Documents").GetProperty("ReadCount").GetInt64());
        Assert.Equal(3, imported.GetProperty("RevisionDocuments").GetProperty("ReadCount").GetInt64());
        Assert.Equal(["Settings MergerMaxOperations imported: they apply when the database next opens."], imported.GetProperty("Messages").EnumerateArray().Select(m => m.GetString()));
        // The database record's configurations came across.
        Assert.Equal(7, (await ReadJson(await s.Http.GetAsync("/databases/copy/configuration/client"))).GetProperty("Configuration").GetProperty("MaxNumberOfRequestsPerSession").GetInt32());
        Assert.Equal(30, (await ReadJson(await s.Http.GetAsync("/databases/copy/expiration/config"))).GetProperty("DeleteFrequencyInSec").GetInt64());
        Assert.Equal("300", (await ReadJson(await s.Http.GetAsync("/databases/copy/admin/record"))).GetProperty("Settings").GetProperty("MergerMaxOperations").GetString());
        Assert.Contains("Notes", (await s.Http.GetStringAsync("/databases/copy/revisions/config")), StringComparison.Ordinal);

        static string Body(JsonElement d)
        {
            var copy = JsonSerializer.Deserialize<Dictionary<string, JsonElement>>(d.GetRawText())!;
            var meta = JsonSerializer.Deserialize<Dictionary<string, JsonElement>>(copy["@metadata"].GetRawText())!;
            meta.Remove("@change-vector");
            meta.Remove("@last-modified");
            copy["@metadata"] = JsonSerializer.SerializeToElement(meta);
            return JsonSerializer.Serialize(copy);
        }
        for (int i = 1; i <= 300; i++)
            Assert.Equal(Body(await Doc(s, "db", $"items/{i}")), Body(await Doc(s, "copy", $"items/{i}")));
        for (int i = 1; i <= 6; i++)
            Assert.Equal(contents[i % 3], await s.Http.GetByteArrayAsync($"/databases/copy/attachments?id=items/{i}&name=f{i}.bin"));
        Assert.Equal((await s.Http.GetStringAsync("/databases/db/counters?docId=items/7")).Replace("\"ChangeVector\"", "", StringComparison.Ordinal).Length,
            (await s.Http.GetStringAsync("/databases/copy/counters?docId=items/7")).Replace("\"ChangeVector\"", "", StringComparison.Ordinal).Length);
        var likes = (await ReadJson(await s.Http.GetAsync("/databases/copy/counters?docId=items/7&counter=Likes&counter=Views"))).GetProperty("Counters");
        Assert.Equal([41L, -3L], likes.EnumerateArray().Select(c => c.GetProperty("TotalValue").GetInt64()));
        Assert.Equal((await ReadJson(await s.Http.GetAsync("/databases/db/timeseries?docId=items/8&name=Temp"))).GetProperty("Entries").GetRawText(),
            (await ReadJson(await s.Http.GetAsync("/databases/copy/timeseries?docId=items/8&name=Temp"))).GetProperty("Entries").GetRawText());
        Assert.Equal("""{"V":1}""", (await ReadJson(await s.Http.GetAsync("/databases/copy/cmpxchg?key=k1"))).GetProperty("Results")[0].GetProperty("Value").GetProperty("Object").GetRawText());
        Assert.Equal(500, (await ReadJson(await s.Http.GetAsync("/databases/copy/debug/identities"))).GetProperty("items|").GetInt64());
        var q = await ReadJson(await s.Http.PostAsync("/databases/copy/queries", Json("""{"Query":"from index 'Items/ByN' where N > 290","WaitForNonStaleResults":true}""")));
        Assert.Equal(10, q.GetProperty("TotalResults").GetInt64());
        // Revisions come across in their order (newest first when read back).
        static IEnumerable<string?> Texts(JsonElement r) => r.GetProperty("Results").EnumerateArray().Select(x => x.GetProperty("Text").GetString());
        Assert.Equal(["v3", "v2", "v1"], Texts(await ReadJson(await s.Http.GetAsync("/databases/db/revisions?id=notes/1"))));
        Assert.Equal(["v3", "v2", "v1"], Texts(await ReadJson(await s.Http.GetAsync("/databases/copy/revisions?id=notes/1"))));
    }

    [Fact]
    public async Task Truncated_and_corrupt_dumps_are_refused_with_what_was_imported_and_no_staged_content_left()
    {
        await using var s = await StartWithDatabaseAsync();
        var logo = RandomNumberGenerator.GetBytes(5_000_000);
        byte[] sample = RavenDbSample(logo, new byte[16]);
        byte[] plain;
        using (var gz = new GZipStream(new MemoryStream(sample), CompressionMode.Decompress))
        using (var ms = new MemoryStream())
        {
            gz.CopyTo(ms);
            plain = ms.ToArray();
        }
        int cut = Encoding.UTF8.GetByteCount("""{"BuildVersion":60016,""") + 400 + 1_000_000; // inside the attachment's bytes
        var truncated = await Import(s, "db", plain[..cut], HttpStatusCode.BadRequest, multipart: false);
        Assert.Contains("truncated", truncated.GetProperty("Message").GetString());
        Assert.Equal(0, await TreeEntries(s, "db", "AttachmentUploads"));
        Assert.Equal(0, await TreeEntries(s, "db", "AttachmentContent"));

        foreach (var (bad, what) in new[]
        {
            (Encoding.UTF8.GetBytes("""{"BuildVersion":1,"Docs":[{"A":1,"@metadata":{"@id":"x/1","@collection":"X"}} {"B":2}]}"""), "expected ','"),
            (Encoding.UTF8.GetBytes("""{"Docs":[{"A":tru}]}"""), "not valid JSON"),
            (new byte[] { 0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3 }, "Zstd"),
            (Encoding.UTF8.GetBytes("""{"Docs":[{"@metadata":{"@export-type":"Attachment"},"Hash":"h"}]}"""), "no Size"),
        })
        {
            var r = await Import(s, "db", bad, HttpStatusCode.BadRequest, multipart: false);
            Assert.Contains(what, r.GetProperty("Message").GetString());
        }
        // A dump that stops after some batches keeps those and says so.
        var many = new StringBuilder("""{"Docs":[""");
        for (int i = 0; i < 1200; i++)
            many.Append(i == 0 ? "" : ",").Append("{\"N\":").Append(i).Append(",\"@metadata\":{\"@id\":\"n/").Append(i).Append("\",\"@collection\":\"N\"}}");
        var partial = await Import(s, "db", Encoding.UTF8.GetBytes(many.ToString()), HttpStatusCode.BadRequest, multipart: false);
        Assert.Contains("1024 document(s)", partial.GetProperty("Message").GetString());
        Assert.Equal(HttpStatusCode.OK, (await s.Http.GetAsync("/databases/db/docs?id=n/1023")).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await s.Http.GetAsync("/databases/db/docs?id=n/1024")).StatusCode);
        Assert.Equal("Faulted", (await ReadJson(await s.Http.GetAsync("/databases/db/operations/state?id=77"))).GetProperty("Status").GetString());
    }
}
