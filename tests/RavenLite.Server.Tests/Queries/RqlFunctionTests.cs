namespace RavenLite.Server.Tests.Queries;

/// <summary>
/// The RQL that RavenDB's clients write for their query options (docs/http-api.md "Queries"): boost(), proximity(),
/// intersect(), fuzzy(), lucene(), exact(), the filter clause with filter_limit, open range bounds, object parameters,
/// missing fields against null (and Indexing.IndexMissingFieldsAsNull), and ?debug=explain — each answered as RavenDB does.
/// </summary>
public sealed class RqlFunctionTests
{
    private static async Task<TestServer> StartAsync()
    {
        var server = await TestServer.StartWithDatabaseAsync();
        string[] docs =
        [
            """{"Name":"John","Age":30,"Bio":"the quick brown fox","Address":{"City":"Oslo"},"@metadata":{"@collection":"Users"}}""",
            """{"Name":"Jane","Age":25,"Bio":"quick red fox jumps","Nick":null,"Address":{"City":"Rome"},"@metadata":{"@collection":"Users"}}""",
            """{"Name":"jOHN","Age":41,"Bio":"a fox that is quick","@metadata":{"@collection":"Users"}}""",
        ];
        var commands = new JsonArray();
        for (int i = 0; i < docs.Length; i++)
            commands.Add(new JsonObject { ["Id"] = $"users/{i + 1}", ["Type"] = "PUT", ["Document"] = JsonNode.Parse(docs[i]) });
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        return server;
    }

    private static async Task<JsonElement> Query(TestServer server, string rql, JsonObject? parameters = null, HttpStatusCode expect = HttpStatusCode.OK, string path = "/databases/db/queries")
    {
        var body = new JsonObject { ["Query"] = rql, ["QueryParameters"] = parameters?.DeepClone() ?? new JsonObject(), ["WaitForNonStaleResults"] = true, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
        var r = await server.Http.PostAsync(path, TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(expect == r.StatusCode, $"{rql} → {(int)r.StatusCode}: {json}");
        return json;
    }

    private static async Task<string[]> Names(TestServer server, string rql, JsonObject? parameters = null) =>
        (await Query(server, rql + " select Name", parameters)).GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Name").GetString()!).ToArray();

    [Fact]
    public async Task Boost_multiplies_the_relevance_of_its_matches()
    {
        await using var server = await StartAsync();
        var boosted = await Query(server, "from Users where boost(Name = 'Jane', 5) or Age > 26 order by score() select Name");
        var results = boosted.GetProperty("Results").EnumerateArray().ToList();
        Assert.Equal("Jane", results[0].GetProperty("Name").GetString());
        Assert.Equal(5, results[0].GetProperty("@metadata").GetProperty("@index-score").GetDouble());
        Assert.Equal(3, results.Count);
        // A boosted search() multiplies Lucene's score.
        var plain = await Query(server, "from Users where search(Bio, 'red') select Name");
        var times = await Query(server, "from Users where boost(search(Bio, 'red'), 4) select Name");
        double p = plain.GetProperty("Results")[0].GetProperty("@metadata").GetProperty("@index-score").GetDouble();
        double t = times.GetProperty("Results")[0].GetProperty("@metadata").GetProperty("@index-score").GetDouble();
        Assert.Equal(p * 4, t, 3);
        await Query(server, "from Users where boost(Name = 'x', 'big')", expect: HttpStatusCode.BadRequest);
    }

    [Fact]
    public async Task Proximity_matches_terms_near_each_other_and_refuses_what_RavenDB_refuses()
    {
        await using var server = await StartAsync();
        // "quick" and "fox" are next to each other only in "quick red fox"'s neighbour-free form: slop 0 needs adjacency in order.
        Assert.Empty(await Names(server, "from Users where proximity(search(Bio, 'quick fox'), 0)"));
        Assert.Equal(["John", "Jane"], await Names(server, "from Users where proximity(search(Bio, 'quick fox'), 1)"));
        Assert.Equal(["John", "Jane", "jOHN"], await Names(server, "from Users where proximity(search(Bio, $terms), 4)", new JsonObject { ["terms"] = "quick fox" }));
        var one = await Query(server, "from Users where proximity(search(Bio, 'quick'), 2)", expect: HttpStatusCode.BadRequest);
        Assert.Equal("Proximity search works only on multiple search terms", one.GetProperty("Message").GetString());
        var wild = await Query(server, "from Users where proximity(search(Bio, 'qu* fox'), 2)", expect: HttpStatusCode.BadRequest);
        Assert.Equal("Proximity search works only on simple string terms, not wildcard or prefix ones", wild.GetProperty("Message").GetString());
        Assert.EndsWith("InvalidQueryException", wild.GetProperty("Type").GetString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Intersect_fuzzy_lucene_and_exact()
    {
        await using var server = await StartAsync();
        Assert.Equal(["John"], await Names(server, "from Users where intersect(Name = 'john', Age = 30)"));
        Assert.Equal(["John", "jOHN"], await Names(server, "from Users where intersect(Name = 'john', Age > 20, Bio != 'x')"));
        // Jhon is one transposition from john (Lucene's fuzzy counts it as one edit); 0.9 of four letters allows none.
        Assert.Equal(["John", "jOHN"], await Names(server, "from Users where fuzzy(Name = 'Jhon', 0.5)"));
        Assert.Empty(await Names(server, "from Users where fuzzy(Name = 'Jhon', 0.9)"));
        Assert.Equal(["Jane"], await Names(server, "from Users where fuzzy(Name = 'Jana', 1)"));
        Assert.Equal(["Jane"], await Names(server, "from Users where lucene(Name, 'Ja*')"));
        Assert.Equal(["John", "Jane"], await Names(server, "from Users where lucene(Bio, 'quick AND (brown OR red)')"));
        Assert.Equal(["jOHN"], await Names(server, "from Users where exact(Name = 'jOHN')"));
        Assert.Equal(["John", "jOHN"], await Names(server, "from Users where Name = 'JOHN'"));
        Assert.Empty(await Names(server, "from Users where exact(Name = 'JOHN')"));
        Assert.Equal(["John"], await Names(server, "from Users where exact(Name in ('John', 'JANE'))"));
        await Query(server, "from Users where fuzzy(Age > 3, 0.5)", expect: HttpStatusCode.BadRequest);
    }

    [Fact]
    public async Task Filter_checks_documents_after_the_where_clause_up_to_filter_limit()
    {
        await using var server = await StartAsync();
        var filtered = await Query(server, "from Users filter Name = 'Jane' select Name");
        Assert.Equal(1, filtered.GetProperty("TotalResults").GetInt32());
        Assert.Equal("Jane", filtered.GetProperty("Results")[0].GetProperty("Name").GetString());
        Assert.Equal(["John", "jOHN"], await Names(server, "from Users where Age > 20 filter Bio != 'quick red fox jumps'"));
        // filter_limit: at most that many documents are checked by the filter.
        Assert.Equal(["John", "Jane"], await Names(server, "from Users filter Age > 1 limit 0, 10 filter_limit 2"));
        Assert.Equal(["John"], await Names(server, "from Users filter Age > 1 and Age < 35 limit 0, 10 filter_limit $f", new JsonObject { ["f"] = 1 }));
        // The filter reads the document, not an index: the where clause's auto index has no Bio field.
        var explained = await Query(server, "from Users where Age > 20 filter Bio = 'a fox that is quick'");
        Assert.Equal("Auto/Users/ByAge", explained.GetProperty("IndexName").GetString());
    }

    [Fact]
    public async Task Open_range_bounds_object_parameters_and_null()
    {
        await using var server = await StartAsync();
        // RavenDB's clients send '*' for a missing lower bound and 'NULL' for a missing upper one.
        var p = new JsonObject { ["star"] = "*", ["high"] = 26, ["none"] = "NULL", ["low"] = 26 };
        Assert.Equal(["Jane"], await Names(server, "from Users where Age between $star and $high", p));
        Assert.Equal(["John", "jOHN"], await Names(server, "from Users where Age between $low and $none", p));
        Assert.Equal(["John", "Jane", "jOHN"], await Names(server, "from Users where Age > $star", p));
        Assert.Equal(["John", "Jane", "jOHN"], await Names(server, "from Users where Age < $none", p));
        Assert.Equal(["John"], await Names(server, "from Users where Address = $a", new JsonObject { ["a"] = new JsonObject { ["City"] = "Oslo" } }));
        Assert.Empty(await Names(server, "from Users where Address = $a", new JsonObject { ["a"] = new JsonObject { ["City"] = "Paris" } }));
        // A missing field is not null (only Jane's Nick is); != null is its negation.
        Assert.Equal(["Jane"], await Names(server, "from Users where Nick = null"));
        Assert.Equal(["John", "jOHN"], await Names(server, "from Users where Nick != null"));
        var index = """{"Indexes":[{"Name":"Users/ByNick","Maps":["from u in docs.Users select new { u.Nick, u.Name }"]},{"Name":"Users/ByNickOrNull","Maps":["from u in docs.Users select new { u.Nick, u.Name }"],"Configuration":{"Indexing.IndexMissingFieldsAsNull":"true"}}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        Assert.Equal(["Jane"], await Names(server, "from index 'Users/ByNick' where Nick = null"));
        Assert.Equal(["John", "Jane", "jOHN"], await Names(server, "from index 'Users/ByNickOrNull' where Nick = null"));
        var definition = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes?name=Users/ByNickOrNull"));
        Assert.Equal("true", definition.GetProperty("Results")[0].GetProperty("Configuration").GetProperty("Indexing.IndexMissingFieldsAsNull").GetString());
    }

    [Fact]
    public async Task Debug_explain_names_the_index_without_running_the_query()
    {
        await using var server = await StartAsync();
        const string explain = "/databases/db/queries?debug=explain";
        var before = await Query(server, "from Users where Age > 3", path: explain);
        var result = before.GetProperty("Results")[0];
        Assert.Equal("Auto/Users/ByAge", result.GetProperty("Index").GetString());
        Assert.Contains("created", result.GetProperty("Reason").GetString(), StringComparison.Ordinal);
        // Nothing was created by the explanation; the query itself creates the index, then the explanation finds it.
        var indexes = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes"));
        Assert.Equal(0, indexes.GetProperty("Results").GetArrayLength());
        Assert.NotEmpty(await Names(server, "from Users where Age > 3"));
        var after = await Query(server, "from Users where Age > 3", path: explain);
        Assert.Contains("covers", after.GetProperty("Results")[0].GetProperty("Reason").GetString(), StringComparison.Ordinal);
        Assert.Equal("collection/Users", (await Query(server, "from Users", path: explain)).GetProperty("Results")[0].GetProperty("Index").GetString());
        var missing = await Query(server, "from index 'Nope'", expect: HttpStatusCode.InternalServerError, path: explain);
        Assert.EndsWith("IndexDoesNotExistException", missing.GetProperty("Type").GetString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task MoreLikeThis_matches_an_artificial_document_by_field_names_in_any_case_or_nesting()
    {
        await using var server = await StartAsync();
        var index = """{"Indexes":[{"Name":"Users/ByBio","Maps":["from u in docs.Users select new { u.Bio }"],"Fields":{"Bio":{"Indexing":"Search"}}}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        var options = new JsonObject { ["MinimumTermFrequency"] = 1, ["MinimumDocumentFrequency"] = 1 };
        foreach (string artificial in new[] { """{"Bio":"red jumps"}""", """{"bio":"red jumps"}""", """{"Property":{"Bio":"red jumps"}}""", """{"Property":{"BIO":"red jumps"}}""" })
            Assert.Equal(["Jane"], await Names(server, "from index 'Users/ByBio' where moreLikeThis($d, $o)", new JsonObject { ["d"] = artificial, ["o"] = options.DeepClone() }));
        Assert.Empty(await Names(server, "from index 'Users/ByBio' where moreLikeThis($d, $o)", new JsonObject { ["d"] = """{"Other":"red jumps"}""", ["o"] = options.DeepClone() }));
    }
}
