namespace RavenLite.Server.Tests.Operations;

/// <summary>
/// Patch and delete by query (PATCH/DELETE /databases/{db}/queries) as background operations: exactly the documents
/// the query matches change (checked against a brute-force evaluation), a script that does not parse is a 400 naming
/// its line and starts nothing, a script failing for one document faults the operation naming it, progress and the
/// result show in /operations/state, and a killed operation stops.
/// </summary>
public sealed class OperationsByQueryTests
{
    private static async Task<JsonElement> Send(HttpClient http, HttpMethod method, string url, string body, HttpStatusCode expect = HttpStatusCode.OK)
    {
        var r = await http.SendAsync(new HttpRequestMessage(method, url) { Content = TestServer.Json(body) });
        var json = await TestServer.ReadJson(r);
        Assert.True(r.StatusCode == expect, $"{method} {url} → {(int)r.StatusCode}: {json}");
        return json;
    }

    private static async Task<JsonElement> WaitFor(HttpClient http, long id)
    {
        for (int i = 0; i < 600; i++)
        {
            var state = await TestServer.ReadJson(await http.GetAsync($"/databases/db/operations/state?id={id}"));
            if (state.GetProperty("Status").GetString() != "InProgress")
                return state;
            await Task.Delay(50);
        }
        throw new TimeoutException($"operation {id} did not finish");
    }

    private static async Task Load(HttpClient http, int count)
    {
        var commands = new JsonArray();
        for (int i = 1; i <= count; i++)
            commands.Add(new JsonObject { ["Id"] = $"orders/{i}", ["Type"] = "PUT", ["Document"] = new JsonObject { ["Freight"] = i % 50, ["Company"] = $"companies/{i % 7}", ["@metadata"] = new JsonObject { ["@collection"] = "Orders" } } });
        var r = await http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()));
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
    }

    private static async Task<Dictionary<string, JsonElement>> All(HttpClient http)
    {
        var r = await TestServer.ReadJson(await http.GetAsync("/databases/db/collections/docs?name=Orders&pageSize=100000"));
        return r.GetProperty("Results").EnumerateArray().ToDictionary(d => d.GetProperty("@metadata").GetProperty("@id").GetString()!, d => d.Clone());
    }

    [Fact]
    public async Task Patch_by_query_changes_exactly_the_matching_documents()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        await Load(http, 500);
        var before = await All(http);
        var started = await Send(http, HttpMethod.Patch, "/databases/db/queries", """
            {"Query":{"Query":"from Orders where Freight >= $min and Company != 'companies/3'\nupdate {\n  this.Freight = this.Freight * 2 + args.extra;\n  this.Patched = id(this);\n}","QueryParameters":{"min":30,"extra":$extra}}}
            """.Replace("$extra", "1", StringComparison.Ordinal));
        var state = await WaitFor(http, started.GetProperty("OperationId").GetInt64());
        Assert.Equal("Completed", state.GetProperty("Status").GetString());
        var after = await All(http);
        var expected = before.Where(kv => kv.Value.GetProperty("Freight").GetInt32() >= 30 && kv.Value.GetProperty("Company").GetString() != "companies/3").Select(kv => kv.Key).ToHashSet();
        Assert.Equal(expected.Count, state.GetProperty("Result").GetProperty("Total").GetInt64());
        foreach (var (id, doc) in after)
        {
            int old = before[id].GetProperty("Freight").GetInt32();
            if (expected.Contains(id))
            {
                Assert.Equal(old * 2 + 1, doc.GetProperty("Freight").GetInt32());
                Assert.Equal(id, doc.GetProperty("Patched").GetString());
            }
            else
            {
                Assert.Equal(old, doc.GetProperty("Freight").GetInt32());
                Assert.False(doc.TryGetProperty("Patched", out _));
                Assert.Equal(before[id].GetProperty("@metadata").GetProperty("@change-vector").GetString(), doc.GetProperty("@metadata").GetProperty("@change-vector").GetString());
            }
            Assert.Equal("Orders", doc.GetProperty("@metadata").GetProperty("@collection").GetString());
        }
        // put() in a patch by query: one copy per match, written with the batch.
        var copies = await Send(http, HttpMethod.Patch, "/databases/db/queries", """{"Query":{"Query":"from Orders where Freight >= 45 update { put('copies/' + id(this).split('/')[1], { F: this.Freight, '@metadata': { '@collection': 'Copies' } }); }"}}""");
        Assert.Equal("Completed", (await WaitFor(http, copies.GetProperty("OperationId").GetInt64())).GetProperty("Status").GetString());
        var copyStats = await TestServer.ReadJson(await http.GetAsync("/databases/db/collections/stats"));
        Assert.Equal(after.Count(kv => kv.Value.GetProperty("Freight").GetInt32() >= 45), copyStats.GetProperty("Collections").GetProperty("Copies").GetInt32());
        after = await All(http);

        // A patch that leaves documents as they are writes nothing.
        var noop = await Send(http, HttpMethod.Patch, "/databases/db/queries", """{"Query":{"Query":"from Orders update { this.Freight = this.Freight; }"}}""");
        Assert.Equal("Completed", (await WaitFor(http, noop.GetProperty("OperationId").GetInt64())).GetProperty("Status").GetString());
        var unchanged = await All(http);
        Assert.All(unchanged, kv => Assert.Equal(after[kv.Key].GetProperty("@metadata").GetProperty("@change-vector").GetString(), kv.Value.GetProperty("@metadata").GetProperty("@change-vector").GetString()));
    }

    [Fact]
    public async Task Bad_scripts_are_refused_or_fault_naming_the_problem()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        await Load(http, 50);
        var before = await All(http);
        var parse = await Send(http, HttpMethod.Patch, "/databases/db/queries", """{"Query":{"Query":"from Orders\nupdate {\n  this.Freight = ;\n}"}}""", HttpStatusCode.BadRequest);
        Assert.Contains("JavaScriptParseException", parse.GetProperty("Type").GetString(), StringComparison.Ordinal);
        Assert.Contains("line 3", parse.GetProperty("Message").GetString(), StringComparison.Ordinal);
        var noUpdate = await Send(http, HttpMethod.Patch, "/databases/db/queries", """{"Query":{"Query":"from Orders"}}""", HttpStatusCode.BadRequest);
        Assert.Contains("update", noUpdate.GetProperty("Message").GetString(), StringComparison.Ordinal);
        var post = await Send(http, HttpMethod.Post, "/databases/db/queries", """{"Query":"from Orders update { this.X = 1; }"}""", HttpStatusCode.BadRequest);
        Assert.Contains("PATCH", post.GetProperty("Message").GetString(), StringComparison.Ordinal);
        var failing = await Send(http, HttpMethod.Patch, "/databases/db/queries", """{"Query":{"Query":"from Orders update { if (id(this) === 'orders/7') throw new Error('no seven'); }"}}""");
        var state = await WaitFor(http, failing.GetProperty("OperationId").GetInt64());
        Assert.Equal("Faulted", state.GetProperty("Status").GetString());
        Assert.Contains("orders/7", state.GetProperty("Result").GetProperty("Message").GetString(), StringComparison.Ordinal);
        Assert.Contains("no seven", state.GetProperty("Result").GetProperty("Message").GetString(), StringComparison.Ordinal);
        var runaway = await Send(http, HttpMethod.Patch, "/databases/db/queries", """{"Query":{"Query":"from Orders update { while (true) { } }"}}""");
        Assert.Equal("Faulted", (await WaitFor(http, runaway.GetProperty("OperationId").GetInt64())).GetProperty("Status").GetString());
        var after = await All(http);
        Assert.All(after, kv => Assert.Equal(before[kv.Key].GetRawText(), kv.Value.GetRawText()));
    }

    [Fact]
    public async Task Delete_by_query_deletes_the_matching_documents_and_a_killed_patch_stops()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        await Load(http, 400);
        var before = await All(http);
        var deleted = await Send(http, HttpMethod.Delete, "/databases/db/queries", """{"Query":"from Orders where Company = $c","QueryParameters":{"c":"companies/2"}}""");
        var state = await WaitFor(http, deleted.GetProperty("OperationId").GetInt64());
        Assert.Equal("Completed", state.GetProperty("Status").GetString());
        var after = await All(http);
        Assert.Equal(before.Where(kv => kv.Value.GetProperty("Company").GetString() != "companies/2").Select(kv => kv.Key).Order(), after.Keys.Order());
        Assert.Equal(before.Count - after.Count, state.GetProperty("Result").GetProperty("Total").GetInt64());

        // 50 documents a second: killed after a moment, it stops with most documents untouched.
        var slow = await Send(http, HttpMethod.Patch, "/databases/db/queries?maxOpsPerSec=50", """{"Query":{"Query":"from Orders update { this.Slow = true; }"}}""");
        long id = slow.GetProperty("OperationId").GetInt64();
        await Task.Delay(300);
        var progress = await TestServer.ReadJson(await http.GetAsync($"/databases/db/operations/state?id={id}"));
        Assert.Equal("InProgress", progress.GetProperty("Status").GetString());
        Assert.Equal(after.Count, progress.GetProperty("Progress").GetProperty("Total").GetInt64());
        Assert.Equal(HttpStatusCode.NoContent, (await http.PostAsync($"/databases/db/operations/kill?id={id}", null)).StatusCode);
        Assert.Equal("Canceled", (await WaitFor(http, id)).GetProperty("Status").GetString());
        int slowed = (await All(http)).Count(kv => kv.Value.TryGetProperty("Slow", out _));
        Assert.InRange(slowed, 1, after.Count / 2);
    }
}

/// <summary>
/// Patching one document (RavenDB's PATCH in bulk_docs and PATCH /docs): Patched / NotModified / Created /
/// DocumentDoesNotExist, PatchIfMissing, a change-vector mismatch (409, or skipped when asked), test=true writing
/// nothing, and a failing script (400) leaving the whole batch unwritten.
/// </summary>
public sealed class DocumentPatchTests
{
    private static async Task<(HttpStatusCode Status, JsonElement Json)> Send(HttpClient http, HttpMethod method, string url, string body, string? ifMatch = null)
    {
        var request = new HttpRequestMessage(method, url) { Content = TestServer.Json(body) };
        if (ifMatch != null)
            request.Headers.TryAddWithoutValidation("If-Match", ifMatch);
        var r = await http.SendAsync(request);
        string text = await r.Content.ReadAsStringAsync();
        return (r.StatusCode, text.Length == 0 ? default : JsonDocument.Parse(text).RootElement.Clone());
    }

    private static async Task<JsonElement?> Get(HttpClient http, string id)
    {
        var r = await http.GetAsync($"/databases/db/docs?id={id}");
        return r.StatusCode == HttpStatusCode.NotFound ? null : (await TestServer.ReadJson(r)).GetProperty("Results")[0];
    }

    [Fact]
    public async Task Bulk_docs_patch_commands_patch_create_and_fail_atomically()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/docs?id=users/1", TestServer.Json("""{"Name":"Ann","Visits":1,"@metadata":{"@collection":"Users"}}"""))).StatusCode);
        var (status, json) = await Send(http, HttpMethod.Post, "/databases/db/bulk_docs", """
            {"Commands":[
              {"Id":"users/1","Type":"PATCH","Patch":{"Script":"this.Visits += args.n; this.Tags = ['a'];","Values":{"n":4}},"ReturnDocument":true},
              {"Id":"users/1","Type":"PATCH","Patch":{"Script":"this.Visits = this.Visits;"}},
              {"Id":"users/2","Type":"PATCH","Patch":{"Script":"this.Visits++;"}},
              {"Id":"users/3","Type":"PATCH","Patch":{"Script":"this.Visits++;"},"PatchIfMissing":{"Script":"this.Visits = 1; this['@metadata'] = { '@collection': 'Users' };"}},
              {"Id":"users/4","Type":"PUT","Document":{"Name":"Bo","@metadata":{"@collection":"Users"}}}
            ]}
            """);
        Assert.True(status == HttpStatusCode.Created, json.ToString());
        var results = json.GetProperty("Results");
        Assert.Equal("Patched", results[0].GetProperty("PatchStatus").GetString());
        Assert.Equal(5, results[0].GetProperty("ModifiedDocument").GetProperty("Visits").GetInt32());
        Assert.Equal("NotModified", results[1].GetProperty("PatchStatus").GetString());
        Assert.Equal("DocumentDoesNotExist", results[2].GetProperty("PatchStatus").GetString());
        Assert.Equal("Created", results[3].GetProperty("PatchStatus").GetString());
        var ann = (await Get(http, "users/1"))!.Value;
        Assert.Equal(5, ann.GetProperty("Visits").GetInt32());
        Assert.Equal(results[0].GetProperty("ChangeVector").GetString(), ann.GetProperty("@metadata").GetProperty("@change-vector").GetString());
        Assert.Null(await Get(http, "users/2"));
        var created = (await Get(http, "users/3"))!.Value;
        Assert.Equal(1, created.GetProperty("Visits").GetInt32());
        Assert.Equal("Users", created.GetProperty("@metadata").GetProperty("@collection").GetString());

        // A failing script or a stale change vector: nothing of the batch is written.
        var (failed, error) = await Send(http, HttpMethod.Post, "/databases/db/bulk_docs", """
            {"Commands":[{"Id":"users/5","Type":"PUT","Document":{"Name":"Cy"}},{"Id":"users/1","Type":"PATCH","Patch":{"Script":"throw new Error('no');"}}]}
            """);
        Assert.Equal(HttpStatusCode.BadRequest, failed);
        Assert.Contains("JavaScriptException", error.GetProperty("Type").GetString(), StringComparison.Ordinal);
        Assert.Null(await Get(http, "users/5"));
        var (conflict, _) = await Send(http, HttpMethod.Post, "/databases/db/bulk_docs", """
            {"Commands":[{"Id":"users/5","Type":"PUT","Document":{"Name":"Cy"}},{"Id":"users/1","Type":"PATCH","ChangeVector":"A:1-stale","Patch":{"Script":"this.Visits = 0;"}}]}
            """);
        Assert.Equal(HttpStatusCode.Conflict, conflict);
        Assert.Null(await Get(http, "users/5"));
        Assert.Equal(5, (await Get(http, "users/1"))!.Value.GetProperty("Visits").GetInt32());
        var (parse, parseError) = await Send(http, HttpMethod.Post, "/databases/db/bulk_docs", """{"Commands":[{"Id":"users/1","Type":"PATCH","Patch":{"Script":"this.Visits = ;"}}]}""");
        Assert.Equal(HttpStatusCode.BadRequest, parse);
        Assert.Contains("JavaScriptParseException", parseError.GetProperty("Type").GetString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Patch_docs_answers_the_status_and_test_writes_nothing()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/docs?id=users/1", TestServer.Json("""{"Name":"Ann","Visits":1,"@metadata":{"@collection":"Users"}}"""))).StatusCode);
        var (status, json) = await Send(http, HttpMethod.Patch, "/databases/db/docs?id=users/1&test=true", """{"Patch":{"Script":"this.Visits = 100;"}}""");
        Assert.Equal(HttpStatusCode.OK, status);
        Assert.Equal("Patched", json.GetProperty("Status").GetString());
        Assert.Equal(100, json.GetProperty("ModifiedDocument").GetProperty("Visits").GetInt32());
        Assert.Equal(1, (await Get(http, "users/1"))!.Value.GetProperty("Visits").GetInt32());
        (status, json) = await Send(http, HttpMethod.Patch, "/databases/db/docs?id=users/1", """{"Patch":{"Script":"this.Visits += $add;","Values":{"add":2}}}""");
        Assert.Equal(HttpStatusCode.OK, status);
        Assert.Equal(3, json.GetProperty("ModifiedDocument").GetProperty("Visits").GetInt32());
        Assert.Equal(1, json.GetProperty("OriginalDocument").GetProperty("Visits").GetInt32());
        Assert.Equal(3, (await Get(http, "users/1"))!.Value.GetProperty("Visits").GetInt32());
        (status, json) = await Send(http, HttpMethod.Patch, "/databases/db/docs?id=users/1&skipPatchIfChangeVectorMismatch=true", """{"Patch":{"Script":"this.Visits = 0;"}}""", ifMatch: "A:1-stale");
        Assert.Equal("Skipped", json.GetProperty("Status").GetString());
        Assert.Equal(HttpStatusCode.Conflict, (await Send(http, HttpMethod.Patch, "/databases/db/docs?id=users/1", """{"Patch":{"Script":"this.Visits = 0;"}}""", ifMatch: "A:1-stale")).Status);
        Assert.Equal(HttpStatusCode.NotFound, (await Send(http, HttpMethod.Patch, "/databases/db/docs?id=users/9", """{"Patch":{"Script":"this.Visits = 0;"}}""")).Status);
        Assert.Equal(3, (await Get(http, "users/1"))!.Value.GetProperty("Visits").GetInt32());

        // put(), del() and output(): other documents change in the same transaction; a later failing command undoes them.
        Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/docs?id=users/2", TestServer.Json("""{"Name":"Bo","@metadata":{"@collection":"Users"}}"""))).StatusCode);
        (status, json) = await Send(http, HttpMethod.Patch, "/databases/db/docs?id=users/1", """
            {"Patch":{"Script":"put('audits/1', { By: id(this), Visits: this.Visits, '@metadata': { '@collection': 'Audits' } }); del('users/2'); output('visits ' + this.Visits);"}}
            """);
        Assert.True(status == HttpStatusCode.OK, json.ToString());
        Assert.Equal("NotModified", json.GetProperty("Status").GetString());
        Assert.Equal("visits 3", json.GetProperty("Debug").GetProperty("Info")[0].GetString());
        var audit = (await Get(http, "audits/1"))!.Value;
        Assert.Equal("users/1", audit.GetProperty("By").GetString());
        Assert.Equal("Audits", audit.GetProperty("@metadata").GetProperty("@collection").GetString());
        Assert.Null(await Get(http, "users/2"));
        var (failed, _) = await Send(http, HttpMethod.Post, "/databases/db/bulk_docs", """
            {"Commands":[{"Id":"users/1","Type":"PATCH","Patch":{"Script":"put('audits/2', { X: 1 }); del('audits/1');"}},{"Id":"users/1","Type":"PATCH","Patch":{"Script":"throw new Error('undo');"}}]}
            """);
        Assert.Equal(HttpStatusCode.BadRequest, failed);
        Assert.Null(await Get(http, "audits/2"));
        Assert.NotNull(await Get(http, "audits/1"));
    }

    /// <summary>PatchMaxStatements stops a long script (400, nothing written); ignoreMaxStepsForScript lifts it for a patch by query.</summary>
    [Fact]
    public async Task The_statement_limit_is_a_setting()
    {
        await using var server = await TestServer.StartWithDatabaseAsync(configure: o => o.PatchMaxStatements = 200);
        var http = server.Http;
        Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/docs?id=users/1", TestServer.Json("""{"Name":"Ann","X":0,"@metadata":{"@collection":"Users"}}"""))).StatusCode);
        const string loop = "for (var i = 0; i < 1000; i++) { this.X = i; }";
        var (status, json) = await Send(http, HttpMethod.Patch, "/databases/db/docs?id=users/1", $$$"""{"Patch":{"Script":"{{{loop}}}"}}""");
        Assert.Equal(HttpStatusCode.BadRequest, status);
        Assert.Contains("JavaScriptException", json.GetProperty("Type").GetString(), StringComparison.Ordinal);
        Assert.Equal(0, (await Get(http, "users/1"))!.Value.GetProperty("X").GetInt32());
        (status, json) = await Send(http, HttpMethod.Patch, "/databases/db/docs?id=users/1", """{"Patch":{"Script":"this.X = 5;"}}""");
        Assert.Equal(HttpStatusCode.OK, status);
        var (started, op) = await Send(http, HttpMethod.Patch, "/databases/db/queries?ignoreMaxStepsForScript=true", $$$"""{"Query":{"Query":"from Users update { {{{loop}}} }"}}""");
        Assert.Equal(HttpStatusCode.OK, started);
        JsonElement state = default;
        for (int k = 0; k < 200; k++)
        {
            state = await TestServer.ReadJson(await http.GetAsync($"/databases/db/operations/state?id={op.GetProperty("OperationId").GetInt64()}"));
            if (state.GetProperty("Status").GetString() != "InProgress")
                break;
            await Task.Delay(50);
        }
        Assert.Equal("Completed", state.GetProperty("Status").GetString());
        Assert.Equal(999, (await Get(http, "users/1"))!.Value.GetProperty("X").GetInt32());
    }
}
