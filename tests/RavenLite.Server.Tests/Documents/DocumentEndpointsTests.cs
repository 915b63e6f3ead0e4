using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Documents;

public sealed class DocumentEndpointsTests
{
    private static async Task<JsonElement> Put(TestServer s, string id, string json, string? ifMatch = null, HttpStatusCode expect = HttpStatusCode.Created)
    {
        using var req = new HttpRequestMessage(HttpMethod.Put, $"/databases/db/docs?id={Uri.EscapeDataString(id)}") { Content = Json(json) };
        if (ifMatch != null)
            req.Headers.TryAddWithoutValidation("If-Match", $"\"{ifMatch}\"");
        var r = await s.Http.SendAsync(req);
        Assert.Equal(expect, r.StatusCode);
        return await ReadJson(r);
    }

    [Fact]
    public async Task Requests_pipelined_behind_single_document_writes_are_all_answered_even_one_that_deletes_the_database()
    {
        // A single-document write is answered on the merger thread; a request the client already sent behind it is then
        // read there too. It must move off that thread: deleting the database there made the merger wait for itself.
        await using var s = await StartWithDatabaseAsync("pipe");
        using var raw = await RawHttp.ConnectAsync(s.Url);
        const string Doc = "{\"Name\":\"x\"}";
        static string PutRequest(string id) => $"PUT /databases/pipe/docs?id={id} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {Doc.Length}\r\n\r\n{Doc}";
        await raw.SendAsync(PutRequest("a/1") + PutRequest("a/2")
            + "DELETE /databases/pipe/docs?id=a/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
            + "GET /databases/pipe/docs?id=a/2 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            + "DELETE /admin/databases?name=pipe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
            + "GET /databases HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        var timeout = TimeSpan.FromSeconds(20);
        Assert.Contains("\"a/1\"", (await raw.ReadResponseAsync(timeout)).Body);
        Assert.Contains("\"a/2\"", (await raw.ReadResponseAsync(timeout)).Body);
        Assert.Equal(204, (await raw.ReadResponseAsync(timeout)).Status);
        var get = await raw.ReadResponseAsync(timeout);
        Assert.Equal(200, get.Status);
        Assert.Contains("\"Name\":\"x\"", get.Body);
        Assert.Equal(200, (await raw.ReadResponseAsync(timeout)).Status);
        var list = await raw.ReadResponseAsync(timeout);
        Assert.Equal(200, list.Status);
        Assert.DoesNotContain("pipe", list.Body);
    }

    [Fact]
    public async Task Put_then_get_returns_the_document_with_server_metadata_and_client_metadata_verbatim()
    {
        await using var s = await StartWithDatabaseAsync();
        var put = await Put(s, "Users/1-A", """{"Name":"Alice","Age":30,"@metadata":{"@collection":"Users","Raven-Node-Type":"User","@nested-object-types":{},"@id":"ignored","@change-vector":"bogus"}}""");
        Assert.Equal("Users/1-A", put.GetProperty("Id").GetString());
        string cv = put.GetProperty("ChangeVector").GetString()!;
        Assert.Matches(@"^A:\d+-[A-Za-z0-9+/]{22}$", cv);

        // Different casing finds it; the stored casing is returned.
        var r = await s.Http.GetAsync("/databases/DB/docs?&id=users%2F1-a");
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        var doc = (await ReadJson(r)).GetProperty("Results")[0];
        Assert.Equal("Alice", doc.GetProperty("Name").GetString());
        var meta = doc.GetProperty("@metadata");
        Assert.Equal("Users/1-A", meta.GetProperty("@id").GetString());
        Assert.Equal("Users", meta.GetProperty("@collection").GetString());
        Assert.Equal(cv, meta.GetProperty("@change-vector").GetString());
        Assert.Equal("User", meta.GetProperty("Raven-Node-Type").GetString());
        Assert.Equal(JsonValueKind.Object, meta.GetProperty("@nested-object-types").ValueKind);
        Assert.Matches(@"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$", meta.GetProperty("@last-modified").GetString()!);
    }

    [Fact]
    public async Task Missing_single_id_is_404_with_empty_body_and_multi_get_has_nulls_in_request_order()
    {
        await using var s = await StartWithDatabaseAsync();
        await Put(s, "a/1", """{"V":1}""");
        await Put(s, "a/2", """{"V":2}""");
        var r = await s.Http.GetAsync("/databases/db/docs?id=nope");
        Assert.Equal(HttpStatusCode.NotFound, r.StatusCode);
        Assert.Equal(0, r.Content.Headers.ContentLength);

        var multi = await ReadJson(await s.Http.GetAsync("/databases/db/docs?&id=a/2&id=nope&id=A/1"));
        var results = multi.GetProperty("Results");
        Assert.Equal(3, results.GetArrayLength());
        Assert.Equal(2, results[0].GetProperty("V").GetInt32());
        Assert.Equal(JsonValueKind.Null, results[1].ValueKind);
        Assert.Equal(1, results[2].GetProperty("V").GetInt32());

        var post = await ReadJson(await s.Http.PostAsync("/databases/db/docs?&loadHash=x", Json("""{"Ids":["A/1","missing","a/2"]}""")));
        Assert.Equal(3, post.GetProperty("Results").GetArrayLength());
        Assert.Equal(JsonValueKind.Null, post.GetProperty("Results")[1].ValueKind);
    }

    [Fact]
    public async Task Includes_load_referenced_documents_through_arrays_and_nested_paths()
    {
        await using var s = await StartWithDatabaseAsync();
        await Put(s, "companies/1", """{"Name":"Acme"}""");
        await Put(s, "products/1", """{"Name":"Anvil"}""");
        await Put(s, "products/2", """{"Name":"Rocket"}""");
        await Put(s, "orders/1", """{"Company":"companies/1","Lines":[{"Product":"products/1"},{"Product":"products/2"},{"Product":"products/404"}]}""");
        var r = await ReadJson(await s.Http.GetAsync("/databases/db/docs?id=orders/1&include=Company&include=Lines[].Product"));
        var inc = r.GetProperty("Includes");
        Assert.Equal("Acme", inc.GetProperty("companies/1").GetProperty("Name").GetString());
        Assert.Equal("Anvil", inc.GetProperty("products/1").GetProperty("Name").GetString());
        Assert.Equal("Rocket", inc.GetProperty("products/2").GetProperty("Name").GetString());
        Assert.False(inc.TryGetProperty("products/404", out _));
        Assert.Equal("products/1", inc.GetProperty("products/1").GetProperty("@metadata").GetProperty("@id").GetString());
    }

    [Fact]
    public async Task Optimistic_concurrency_follows_null_empty_and_exact_rules_with_409_json()
    {
        await using var s = await StartWithDatabaseAsync();
        var first = await Put(s, "u/1", """{"V":1}""", ifMatch: "");
        string cv = first.GetProperty("ChangeVector").GetString()!;
        var conflict = await Put(s, "u/1", """{"V":2}""", ifMatch: "", expect: HttpStatusCode.Conflict);
        Assert.Equal("Raven.Client.Exceptions.ConcurrencyException", conflict.GetProperty("Type").GetString());
        Assert.Contains("u/1", conflict.GetProperty("Message").GetString());
        Assert.True(conflict.TryGetProperty("Error", out _) && conflict.TryGetProperty("Url", out _));
        await Put(s, "u/1", """{"V":3}""", ifMatch: "A:999-xxxxxxxxxxxxxxxxxxxxxx", expect: HttpStatusCode.Conflict);
        var second = await Put(s, "u/1", """{"V":4}""", ifMatch: cv);
        Assert.NotEqual(cv, second.GetProperty("ChangeVector").GetString());
        await Put(s, "u/1", """{"V":5}""");
        var doc = (await ReadJson(await s.Http.GetAsync("/databases/db/docs?id=u/1"))).GetProperty("Results")[0];
        Assert.Equal(5, doc.GetProperty("V").GetInt32());
    }

    [Fact]
    public async Task Head_answers_etag_404_and_304_and_delete_leaves_a_tombstone()
    {
        await using var s = await StartWithDatabaseAsync();
        string cv = (await Put(s, "u/1", """{"V":1}""")).GetProperty("ChangeVector").GetString()!;
        using (var head = new HttpRequestMessage(HttpMethod.Head, "/databases/db/docs?id=U/1"))
        {
            var r = await s.Http.SendAsync(head);
            Assert.Equal(HttpStatusCode.OK, r.StatusCode);
            Assert.Equal($"\"{cv}\"", r.Headers.ETag!.Tag);
        }
        using (var head = new HttpRequestMessage(HttpMethod.Head, "/databases/db/docs?id=u/1"))
        {
            head.Headers.TryAddWithoutValidation("If-None-Match", cv);
            Assert.Equal(HttpStatusCode.NotModified, (await s.Http.SendAsync(head)).StatusCode);
        }
        using (var del = new HttpRequestMessage(HttpMethod.Delete, "/databases/db/docs?id=u/1"))
        {
            del.Headers.TryAddWithoutValidation("If-Match", "\"A:1-wrongwrongwrongwrongwr\"");
            Assert.Equal(HttpStatusCode.Conflict, (await s.Http.SendAsync(del)).StatusCode);
        }
        Assert.Equal(HttpStatusCode.NoContent, (await s.Http.DeleteAsync("/databases/db/docs?id=u/1")).StatusCode);
        using (var head = new HttpRequestMessage(HttpMethod.Head, "/databases/db/docs?id=u/1"))
            Assert.Equal(HttpStatusCode.NotFound, (await s.Http.SendAsync(head)).StatusCode);
        var stats = await ReadJson(await s.Http.GetAsync("/databases/db/stats"));
        Assert.Equal(0, stats.GetProperty("CountOfDocuments").GetInt64());
        Assert.Equal(1, stats.GetProperty("CountOfTombstones").GetInt64());
        Assert.Equal(2, stats.GetProperty("LastDocEtag").GetInt64());
        Assert.Equal("0 Bytes", stats.GetProperty("TempBuffersSizeOnDisk").GetProperty("HumaneSize").GetString());
        Assert.True(stats.GetProperty("SizeOnDisk").GetProperty("SizeInBytes").GetInt64() > 0);
    }

    [Fact]
    public async Task Documents_without_collection_have_no_collection_metadata_count_as_empty_and_an_update_cannot_change_collection()
    {
        await using var s = await StartWithDatabaseAsync();
        await Put(s, "x/1", """{"A":1}""");
        var doc = (await ReadJson(await s.Http.GetAsync("/databases/db/docs?id=x/1"))).GetProperty("Results")[0];
        Assert.False(doc.GetProperty("@metadata").TryGetProperty("@collection", out _), "RavenDB sends no @collection for a document without one");
        var stats = await ReadJson(await s.Http.GetAsync("/databases/db/collections/stats"));
        Assert.Equal(1, stats.GetProperty("Collections").GetProperty("@empty").GetInt64());
        await Put(s, "u/1", """{"@metadata":{"@collection":"Users"}}""");
        var err = await Put(s, "u/1", """{"@metadata":{"@collection":"Orders"}}""", expect: HttpStatusCode.BadRequest);
        Assert.Contains("Delete it and recreate", err.GetProperty("Message").GetString());
        Assert.Equal("Raven.Client.Exceptions.Documents.DocumentCollectionMismatchException", err.GetProperty("Type").GetString());
        // Same collection in other casing is the same collection.
        await Put(s, "u/1", """{"B":2,"@metadata":{"@collection":"users"}}""");
    }

    [Fact]
    public async Task Listing_by_etag_and_by_collection_pages_and_collection_stats_count()
    {
        await using var s = await StartWithDatabaseAsync();
        for (int i = 1; i <= 30; i++)
            await Put(s, $"users/{i}", $$$"""{"N":{{{i}}},"@metadata":{"@collection":"Users"}}""");
        for (int i = 1; i <= 5; i++)
            await Put(s, $"orders/{i}", $$$"""{"N":{{{i}}},"@metadata":{"@collection":"Orders"}}""");
        await Put(s, "users/3", """{"N":3,"@metadata":{"@collection":"Users"}}"""); // moves to the newest etag

        var page = await ReadJson(await s.Http.GetAsync("/databases/db/collections/docs?name=users&start=10&pageSize=5"));
        var ns = page.GetProperty("Results").EnumerateArray().Select(d => d.GetProperty("N").GetInt32()).ToList();
        Assert.Equal([12, 13, 14, 15, 16], ns);

        var afterEtag = await ReadJson(await s.Http.GetAsync("/databases/db/docs?etag=30&pageSize=100"));
        var ids = afterEtag.GetProperty("Results").EnumerateArray().Select(d => d.GetProperty("@metadata").GetProperty("@id").GetString()).ToList();
        Assert.Equal(["orders/1", "orders/2", "orders/3", "orders/4", "orders/5", "users/3"], ids);

        var latest = await ReadJson(await s.Http.GetAsync("/databases/db/docs?start=0&pageSize=2"));
        Assert.Equal("users/3", latest.GetProperty("Results")[0].GetProperty("@metadata").GetProperty("@id").GetString());

        var stats = await ReadJson(await s.Http.GetAsync("/databases/db/collections/stats"));
        Assert.Equal(30, stats.GetProperty("Collections").GetProperty("Users").GetInt64());
        Assert.Equal(5, stats.GetProperty("Collections").GetProperty("Orders").GetInt64());
        Assert.Equal(35, stats.GetProperty("CountOfDocuments").GetInt64());
    }

    [Fact]
    public async Task Server_generated_ids_for_prefix_slash_and_identity_pipe()
    {
        await using var s = await StartWithDatabaseAsync();
        string a = (await Put(s, "users/", """{}""")).GetProperty("Id").GetString()!;
        Assert.Matches(@"^users/\d{19}-A$", a);
        Assert.Equal("things/1", (await Put(s, "things|", """{}""")).GetProperty("Id").GetString());
        Assert.Equal("things/2", (await Put(s, "things|", """{}""")).GetProperty("Id").GetString());
    }
}
