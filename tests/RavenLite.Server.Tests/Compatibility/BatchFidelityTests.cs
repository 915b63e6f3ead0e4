namespace RavenLite.Server.Tests.Compatibility;

/// <summary>
/// Batch commands as RavenDB answers them: BatchPATCH (one patch over several documents, change vectors checked),
/// attachment copies and moves onto a name the destination has (409), an attachment delete after the document's delete
/// in the same batch (nothing to do), and <c>waitForIndexesTimeout</c> waiting for the affected indexes.
/// </summary>
public sealed class BatchFidelityTests
{
    private static async Task<JsonElement> Send(TestServer server, HttpMethod method, string path, string? body, HttpStatusCode expect)
    {
        using var request = new HttpRequestMessage(method, path) { Content = body == null ? null : TestServer.Json(body) };
        var r = await server.Http.SendAsync(request);
        string text = await r.Content.ReadAsStringAsync();
        Assert.True(expect == r.StatusCode, $"{method} {path} → {(int)r.StatusCode}: {text}");
        return text.Length == 0 ? default : JsonDocument.Parse(text).RootElement.Clone();
    }

    private static Task<JsonElement> Batch(TestServer server, string commands, HttpStatusCode expect = HttpStatusCode.Created, string query = "") =>
        Send(server, HttpMethod.Post, "/databases/db/bulk_docs" + query, $$"""{"Commands":[{{commands}}]}""", expect);

    private static async Task<JsonElement> Doc(TestServer server, string id) =>
        (await Send(server, HttpMethod.Get, "/databases/db/docs?id=" + id, null, HttpStatusCode.OK)).GetProperty("Results")[0];

    private static string Put(string id, string name) =>
        new JsonObject { ["Id"] = id, ["Type"] = "PUT", ["Document"] = new JsonObject { ["Name"] = name, ["@metadata"] = new JsonObject { ["@collection"] = "Companies" } } }.ToJsonString();

    private static async Task<TestServer> StartWithCompaniesAsync()
    {
        var server = await TestServer.StartWithDatabaseAsync();
        await Batch(server, string.Join(",", Enumerable.Range(1, 4).Select(i => Put($"companies/{i}", $"C{i}"))));
        return server;
    }

    [Fact]
    public async Task A_batch_patch_patches_each_document_and_checks_change_vectors()
    {
        await using var server = await StartWithCompaniesAsync();
        var answer = await Batch(server, """
            {"Type":"BatchPATCH","Ids":[{"Id":"companies/1"},{"Id":"companies/3"}],"Patch":{"Script":"this.Name = $name","Values":{"name":"test"}}},
            {"Type":"BatchPATCH","Ids":[{"Id":"companies/4"}],"Patch":{"Script":"this.Name = 'test2'","Values":{}}}
            """);
        Assert.Equal(["BatchPATCH", "BatchPATCH"], answer.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Type").GetString()));
        Assert.Equal(["companies/1", "companies/3"], answer.GetProperty("Results")[0].GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Id").GetString()));
        Assert.Equal(["test", "C2", "test", "test2"], await Task.WhenAll(Enumerable.Range(1, 4).Select(async i => (await Doc(server, $"companies/{i}")).GetProperty("Name").GetString()!)));

        // A change vector that does not match: 409, and nothing of the batch is written.
        var refused = await Batch(server, """{"Type":"BatchPATCH","Ids":[{"Id":"companies/1"},{"Id":"companies/2","ChangeVector":"A:1-invalid"}],"Patch":{"Script":"this.Name = 'no'"}}""", HttpStatusCode.Conflict);
        Assert.Contains("ConcurrencyException", refused.GetProperty("Type").GetString());
        Assert.Equal("test", (await Doc(server, "companies/1")).GetProperty("Name").GetString());
        // The current change vector patches.
        string cv = (await Doc(server, "companies/2")).GetProperty("@metadata").GetProperty("@change-vector").GetString()!;
        await Batch(server, $$$"""{"Type":"BatchPATCH","Ids":[{"Id":"companies/2","ChangeVector":"{{{cv}}}"}],"Patch":{"Script":"this.Name = 'yes'"}}""");
        Assert.Equal("yes", (await Doc(server, "companies/2")).GetProperty("Name").GetString());
        await Batch(server, """{"Type":"BatchPATCH","Ids":[],"Patch":{"Script":"this.Name = 'x'"}}""", HttpStatusCode.BadRequest);
    }

    [Fact]
    public async Task Attachment_copies_onto_an_existing_name_conflict_and_deletes_after_the_document_are_no_ops()
    {
        await using var server = await StartWithCompaniesAsync();
        foreach (var (id, name) in new[] { ("companies/1", "a.txt"), ("companies/2", "b.txt") })
            Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync($"/databases/db/attachments?id={id}&name={name}", new ByteArrayContent([1, 2, 3]))).StatusCode);
        foreach (string type in new[] { "AttachmentCOPY", "AttachmentMOVE" })
        {
            var conflict = await Batch(server, $$"""{"Type":"{{type}}","Id":"companies/1","Name":"a.txt","DestinationId":"companies/2","DestinationName":"b.txt"}""", HttpStatusCode.Conflict);
            Assert.Contains("ConcurrencyException", conflict.GetProperty("Type").GetString());
        }
        // Both attachments are as they were.
        Assert.Equal(HttpStatusCode.OK, (await server.Http.GetAsync("/databases/db/attachments?id=companies/1&name=a.txt")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await server.Http.GetAsync("/databases/db/attachments?id=companies/2&name=b.txt")).StatusCode);
        await Batch(server, """{"Type":"AttachmentCOPY","Id":"companies/1","Name":"a.txt","DestinationId":"companies/2","DestinationName":"c.txt"}""");

        var deleted = await Batch(server, """{"Type":"DELETE","Id":"companies/2"},{"Type":"AttachmentDELETE","Id":"companies/2","Name":"b.txt"}""");
        Assert.Equal(["DELETE", "AttachmentDELETE"], deleted.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Type").GetString()));
        await Send(server, HttpMethod.Get, "/databases/db/docs?id=companies/2", null, HttpStatusCode.NotFound);
    }

    [Fact]
    public async Task Wait_for_indexes_answers_once_the_affected_indexes_have_the_batch()
    {
        await using var server = await StartWithCompaniesAsync();
        await Send(server, HttpMethod.Put, "/databases/db/admin/indexes", """{"Indexes":[{"Name":"Companies/ByName","Maps":["from c in docs.Companies select new { c.Name }"]}]}""", HttpStatusCode.Created);
        for (int i = 0; i < 5; i++)
        {
            await Batch(server, Put($"companies/new{i}", $"N{i}"),
                query: "?waitForIndexesTimeout=00:00:30&waitForIndexThrow=true");
            // Answered without waiting: the index already has the document.
            var found = await Send(server, HttpMethod.Post, "/databases/db/queries", $$"""{"Query":"from index 'Companies/ByName' where Name = 'N{{i}}'"}""", HttpStatusCode.OK);
            Assert.False(found.GetProperty("IsStale").GetBoolean());
            Assert.Equal(1, found.GetProperty("TotalResults").GetInt32());
        }
        await Batch(server, """{"Id":"companies/x","Type":"PUT","Document":{"Name":"X","@metadata":{"@collection":"Companies"}}}""", HttpStatusCode.BadRequest,
            "?waitForIndexesTimeout=00:00:30&waitForSpecificIndex=Nope");
        await Send(server, HttpMethod.Get, "/databases/db/docs?id=companies/x", null, HttpStatusCode.NotFound); // refused before anything was written
        await Batch(server, """{"Id":"companies/y","Type":"PUT","Document":{"Name":"Y","@metadata":{"@collection":"Companies"}}}""", HttpStatusCode.BadRequest, "?waitForIndexesTimeout=soon");

        // A stopped index cannot catch up: with waitForIndexThrow the answer is RavenDB's 408 (the write stays), without it a 201.
        await Send(server, HttpMethod.Post, "/databases/db/admin/indexes/stop?name=Companies/ByName", null, HttpStatusCode.NoContent);
        var timeout = await Batch(server, """{"Id":"companies/z","Type":"PUT","Document":{"Name":"Z","@metadata":{"@collection":"Companies"}}}""", HttpStatusCode.RequestTimeout,
            "?waitForIndexesTimeout=00:00:00.200&waitForIndexThrow=true&waitForSpecificIndex=Companies/ByName");
        Assert.Equal("System.TimeoutException", timeout.GetProperty("Type").GetString());
        await Doc(server, "companies/z");
        await Batch(server, """{"Id":"companies/w","Type":"PUT","Document":{"Name":"W","@metadata":{"@collection":"Companies"}}}""",
            query: "?waitForIndexesTimeout=00:00:00.200&waitForIndexThrow=false");
    }
}
