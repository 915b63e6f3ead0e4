namespace RavenLite.Server.Tests.Indexing;

/// <summary>
/// Index definitions and index administration as RavenDB's clients use them: <c>.Boost(n)</c> in C# maps (on a value
/// and on a whole entry) scoring search() matches, Lucene 3 analyzer names, <c>indexes/terms</c>,
/// <c>indexes/has-changed</c>, <c>DELETE indexes/errors</c>, the database's indexing status after stopping one index,
/// and the definition's Configuration and output-collection fields in <c>GET /indexes</c>.
/// </summary>
public sealed class IndexFidelityTests
{
    private static async Task<TestServer> StartAsync(params string[] docs)
    {
        var server = await TestServer.StartWithDatabaseAsync();
        var commands = new JsonArray();
        for (int i = 0; i < docs.Length; i++)
            commands.Add(new JsonObject { ["Id"] = $"users/{i + 1}", ["Type"] = "PUT", ["Document"] = JsonNode.Parse(docs[i]) });
        if (docs.Length > 0)
            Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        return server;
    }

    private static async Task PutIndex(TestServer server, string definition) =>
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json($$"""{"Indexes":[{{definition}}]}"""))).StatusCode);

    private static async Task<List<(string Name, double Score)>> Scored(TestServer server, string rql)
    {
        var body = new JsonObject { ["Query"] = rql, ["WaitForNonStaleResults"] = true, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
        var r = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(r.StatusCode == HttpStatusCode.OK, json.ToString());
        return json.GetProperty("Results").EnumerateArray()
            .Select(x => (x.GetProperty("Name").GetString()!, x.GetProperty("@metadata").GetProperty("@index-score").GetDouble())).ToList();
    }

    [Fact]
    public async Task Boost_in_a_CSharp_map_scores_search_matches_higher()
    {
        await using var server = await StartAsync(
            """{"Name":"John","LastName":"Doe","@metadata":{"@collection":"Users"}}""",
            """{"Name":"Doe","LastName":"Smith","@metadata":{"@collection":"Users"}}""");
        await PutIndex(server, """{"Name":"Plain","Maps":["from u in docs.Users select new { u.LastName, u.Name }"],"Fields":{"LastName":{"Indexing":"Search"},"Name":{"Indexing":"Search"}}}""");
        await PutIndex(server, """{"Name":"ByLastName","Maps":["from u in docs.Users select new { LastName = u.LastName.Boost(10), u.Name }"],"Fields":{"LastName":{"Indexing":"Search"},"Name":{"Indexing":"Search"}}}""");
        await PutIndex(server, """{"Name":"Whole","Maps":["from u in docs.Users select new { u.LastName, u.Name }.Boost(3)"],"Fields":{"LastName":{"Indexing":"Search"},"Name":{"Indexing":"Search"}}}""");
        const string where = "where search(LastName, 'doe') or search(Name, 'doe') order by score() select Name";
        var plain = await Scored(server, "from index Plain " + where);
        var boosted = await Scored(server, "from index ByLastName " + where);
        // Both match once, on different fields; the boost puts the LastName match ten times above the same match unboosted.
        Assert.Equal(2, plain.Count);
        Assert.Equal(plain[0].Score, plain[1].Score, 3);
        Assert.Equal(["John", "Doe"], boosted.Select(b => b.Name));
        Assert.Equal(plain.Single(p => p.Name == "John").Score * 10, boosted[0].Score, 3);
        Assert.Equal(plain.Single(p => p.Name == "Doe").Score, boosted[1].Score, 3);
        var whole = await Scored(server, "from index Whole " + where);
        Assert.All(whole, w => Assert.Equal(plain.Single(p => p.Name == w.Name).Score * 3, w.Score, 3));
        // The entry's values are unchanged by a boost.
        var terms = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes/terms?name=ByLastName&field=LastName"));
        Assert.Equal(["doe", "smith"], terms.GetProperty("Terms").EnumerateArray().Select(t => t.GetString()));
    }

    [Fact]
    public async Task Lucene_3_analyzer_names_resolve_to_their_Lucene_4_8_classes()
    {
        await using var server = await StartAsync("""{"Name":"Hello-World Again","@metadata":{"@collection":"Users"}}""");
        foreach (var (analyzer, expected) in new[]
                 {
                     ("Lucene.Net.Analysis.WhitespaceAnalyzer", new[] { "Hello-World", "Again" }),
                     ("Lucene.Net.Analysis.SimpleAnalyzer", ["again", "hello", "world"]),
                     ("Lucene.Net.Analysis.StopAnalyzer", ["again", "hello", "world"]),
                     ("Lucene.Net.Analysis.KeywordAnalyzer", ["Hello-World Again"]),
                     ("Lucene.Net.Analysis.Standard.StandardAnalyzer", ["again", "hello", "world"]),
                 })
        {
            string name = "By" + analyzer.Split('.')[^1];
            await PutIndex(server, new JsonObject
            {
                ["Name"] = name,
                ["Maps"] = new JsonArray("from u in docs.Users select new { u.Name }"),
                ["Fields"] = new JsonObject { ["Name"] = new JsonObject { ["Indexing"] = "Search", ["Analyzer"] = analyzer } },
            }.ToJsonString());
            var body = new JsonObject { ["Query"] = $"from index '{name}'", ["WaitForNonStaleResults"] = true };
            Assert.Equal(HttpStatusCode.OK, (await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()))).StatusCode);
            var terms = await TestServer.ReadJson(await server.Http.GetAsync($"/databases/db/indexes/terms?name={name}&field=Name"));
            Assert.Equal(expected.Order(StringComparer.Ordinal), terms.GetProperty("Terms").EnumerateArray().Select(t => t.GetString()!));
        }
        var bad = await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json("""{"Indexes":[{"Name":"Bad","Maps":["from u in docs.Users select new { u.Name }"],"Fields":{"Name":{"Indexing":"Search","Analyzer":"Lucene.Net.Analysis.NoSuchAnalyzer"}}}]}"""));
        Assert.Equal(HttpStatusCode.BadRequest, bad.StatusCode);
    }

    [Fact]
    public async Task Terms_has_changed_errors_and_status()
    {
        await using var server = await StartAsync(
            """{"Name":"b","Age":3,"@metadata":{"@collection":"Users"}}""",
            """{"Name":"A","Age":0,"@metadata":{"@collection":"Users"}}""",
            """{"Name":"c","Age":12.5,"@metadata":{"@collection":"Users"}}""");
        const string definition = """{"Name":"Users/Ratio","Maps":["from u in docs.Users select new { u.Name, u.Age, Ratio = 10 / (int)u.Age }"],"Configuration":{"Indexing.MapBatchSize":"128"}}""";
        await PutIndex(server, definition);
        var body = new JsonObject { ["Query"] = "from index 'Users/Ratio'", ["WaitForNonStaleResults"] = true };
        Assert.Equal(HttpStatusCode.OK, (await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()))).StatusCode);

        async Task<string[]> Terms(string query) =>
            (await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes/terms?name=Users/Ratio&" + query))).GetProperty("Terms").EnumerateArray().Select(t => t.GetString()!).ToArray();
        Assert.Equal(["b", "c"], await Terms("field=Name")); // users/2's map failed: it has no entry
        Assert.Equal(["c"], await Terms("field=Name&fromValue=b"));
        Assert.Equal(["b"], await Terms("field=Name&pageSize=1"));
        Assert.Equal(["12.5", "3"], await Terms("field=Age"));
        Assert.Equal(HttpStatusCode.BadRequest, (await server.Http.GetAsync("/databases/db/indexes/terms?name=Users/Ratio&field=Nope")).StatusCode);
        var missing = await server.Http.GetAsync("/databases/db/indexes/terms?name=Nope&field=Name");
        Assert.Equal(HttpStatusCode.InternalServerError, missing.StatusCode);
        Assert.EndsWith("IndexDoesNotExistException", (await TestServer.ReadJson(missing)).GetProperty("Type").GetString(), StringComparison.Ordinal);

        async Task<bool> Changed(string d) =>
            (await TestServer.ReadJson(await server.Http.PostAsync("/databases/db/indexes/has-changed", TestServer.Json(d)))).GetProperty("Changed").GetBoolean();
        Assert.False(await Changed(definition));
        Assert.True(await Changed(definition.Replace("u.Age }", "u.Age, X = 1 }", StringComparison.Ordinal)));
        Assert.True(await Changed(definition.Replace("128", "256", StringComparison.Ordinal)));
        Assert.True(await Changed(definition.Replace("Users/Ratio", "Users/Other", StringComparison.Ordinal)));

        async Task<int> ErrorCount() => (await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes/errors?name=Users/Ratio")))
            .GetProperty("Results")[0].GetProperty("Errors").GetArrayLength();
        Assert.Equal(1, await ErrorCount());
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync("/databases/db/indexes/errors?name=Users/Ratio")).StatusCode);
        Assert.Equal(0, await ErrorCount());
        Assert.Equal(HttpStatusCode.InternalServerError, (await server.Http.DeleteAsync("/databases/db/indexes/errors?name=Nope")).StatusCode);
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync("/databases/db/indexes/errors")).StatusCode);

        async Task<JsonElement> Status() => await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes/status"));
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.PostAsync("/databases/db/admin/indexes/stop?name=Users/Ratio", null)).StatusCode);
        var one = await Status();
        Assert.Equal("Running", one.GetProperty("Status").GetString());
        Assert.Equal("Paused", one.GetProperty("Indexes")[0].GetProperty("Status").GetString());
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.PostAsync("/databases/db/admin/indexes/stop", null)).StatusCode);
        Assert.Equal("Paused", (await Status()).GetProperty("Status").GetString());
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.PostAsync("/databases/db/admin/indexes/start", null)).StatusCode);
        Assert.Equal("Running", (await Status()).GetProperty("Status").GetString());

        var listed = (await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes?name=Users/Ratio"))).GetProperty("Results")[0];
        Assert.Equal("128", listed.GetProperty("Configuration").GetProperty("Indexing.MapBatchSize").GetString());
        Assert.Equal(JsonValueKind.Null, listed.GetProperty("OutputReduceToCollection").ValueKind);
        Assert.Equal(JsonValueKind.Null, listed.GetProperty("PatternForOutputReduceToCollectionReferences").ValueKind);
        Assert.Equal(JsonValueKind.Null, listed.GetProperty("PatternReferencesCollectionName").ValueKind);
        Assert.Equal(HttpStatusCode.NotFound, (await server.Http.DeleteAsync("/databases/db/indexes?name=Nope")).StatusCode);
    }

    [Fact]
    public async Task Additional_runtime_assemblies_compile_and_NuGet_packages_get_RavenDBs_error()
    {
        await using var server = await StartAsync("""{"Name":"<a>x</a>","@metadata":{"@collection":"Companies"}}""");
        const string xml = """{"AssemblyName":"System.Xml"},{"AssemblyName":"System.Xml.ReaderWriter"},{"AssemblyName":"System.Private.Xml"}""";
        await PutIndex(server, """{"Name":"XmlIndex","Maps":["from c in docs.Companies select new { Name = typeof(System.Xml.XmlNode).Name }"],"AdditionalAssemblies":[""" + xml + "]}");
        await PutIndex(server, """{"Name":"XmlText","Maps":["from c in docs.Companies select new { Text = System.Xml.Linq.XElement.Parse((string)c.Name).Value }"],"AdditionalAssemblies":[{"AssemblyName":"System.Private.Xml.Linq"},{"AssemblyName":"System.Private.Xml"},{"AssemblyName":"System.Xml.Linq"}]}""");
        var body = new JsonObject { ["Query"] = "from index 'XmlText' where Text = 'x'", ["WaitForNonStaleResults"] = true };
        var found = await TestServer.ReadJson(await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString())));
        Assert.Equal(1, found.GetProperty("TotalResults").GetInt32());
        var names = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes/terms?name=XmlIndex&field=Name"));
        Assert.Equal(["xmlnode"], names.GetProperty("Terms").EnumerateArray().Select(t => t.GetString()));
        var listed = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes?name=XmlIndex"));
        Assert.Equal(3, listed.GetProperty("Results")[0].GetProperty("AdditionalAssemblies").GetArrayLength());

        async Task<string> Refused(string definition)
        {
            var r = await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json($$"""{"Indexes":[{{definition}}]}"""));
            var json = await TestServer.ReadJson(r);
            Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
            Assert.True(json.GetProperty("Type").GetString()!.EndsWith("IndexCompilationException", StringComparison.Ordinal), json.ToString());
            return json.GetProperty("Message").GetString()!;
        }
        Assert.StartsWith("Cannot load assembly 'Some.Assembly.That.Does.Not.Exist'", await Refused("""{"Name":"A","Maps":["from c in docs.Companies select new { c.Name }"],"AdditionalAssemblies":[{"AssemblyName":"Some.Assembly.That.Does.Not.Exist"}]}"""));
        Assert.StartsWith("Cannot load NuGet package 'Some.Assembly.That.Does.Not.Exist' version '4.3.1' from 'https://api.nuget.org/v3/index.json'",
            await Refused("""{"Name":"B","Maps":["from c in docs.Companies select new { c.Name }"],"AdditionalAssemblies":[{"PackageName":"Some.Assembly.That.Does.Not.Exist","PackageVersion":"4.3.1"}]}"""));
        Assert.StartsWith("Cannot load assembly from path", await Refused("""{"Name":"C","Maps":["from c in docs.Companies select new { c.Name }"],"AdditionalAssemblies":[{"AssemblyPath":"/tmp/x.dll"}]}"""));
        // An added assembly does not open the sandbox: files, and a Type beyond its name, stay refused.
        Assert.Contains("System.IO.File", await Refused("""{"Name":"D","Maps":["from c in docs.Companies select new { Name = System.IO.File.ReadAllText(\"/etc/hostname\") }"],"AdditionalAssemblies":[{"AssemblyName":"System.IO.FileSystem"}]}"""), StringComparison.Ordinal);
        Assert.Contains("Assembly", await Refused("""{"Name":"E","Maps":["from c in docs.Companies select new { Name = typeof(string).Assembly }"]}"""), StringComparison.Ordinal);
    }

    private static async Task<string[]> Names(TestServer server, string rql)
    {
        var body = new JsonObject { ["Query"] = rql + " select Name", ["WaitForNonStaleResults"] = true, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
        var r = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(r.StatusCode == HttpStatusCode.OK, rql + " → " + json);
        return json.GetProperty("Results").EnumerateArray().Select(x => x.GetProperty("Name").GetString()!).ToArray();
    }

    [Fact]
    public async Task JavaScript_maps_index_the_fields_they_return_at_run_time()
    {
        await using var server = await StartAsync(
            """{"Name":"Ann","Kind":"a","Tags":["x","y"],"Friend":"users/2","@metadata":{"@collection":"Users"}}""",
            """{"Name":"Bob","Kind":"b","Friend":"users/1","@metadata":{"@collection":"Users"}}""",
            """{"Name":"Cid","Kind":"skip","@metadata":{"@collection":"Users"}}""");
        const string map = """
            map('Users', function (u) {
                if (u.Kind === 'skip') return null;
                var result = {};
                result.Name = u.Name;
                switch (u.Kind) { case 'a': result.Score = 1; break; default: result.Other = u.Kind; }
                result['Is' + u.Name] = true;
                result._ = [{ $name: 'Tag', $value: u.Tags || [], $options: { indexing: 'Exact' } }, createField('Made', u.Kind, { indexing: 'Search' })];
                var friend = noTracking.load(u.Friend);
                result.FriendName = friend ? friend.Name : null;
                return result;
            })
            """;
        await PutIndex(server, new JsonObject { ["Name"] = "Users/Js", ["Type"] = "JavaScriptMap", ["Maps"] = new JsonArray(map) }.ToJsonString());
        Assert.Equal(["Ann", "Bob"], await Names(server, "from index 'Users/Js'")); // null: no entry
        Assert.Equal(["Ann"], await Names(server, "from index 'Users/Js' where Score = 1"));
        Assert.Equal(["Bob"], await Names(server, "from index 'Users/Js' where Other = 'b'"));
        Assert.Equal(["Bob"], await Names(server, "from index 'Users/Js' where IsBob = true"));
        Assert.Equal(["Ann"], await Names(server, "from index 'Users/Js' where Tag = 'y'"));
        Assert.Empty(await Names(server, "from index 'Users/Js' where Tag = 'Y'")); // Exact
        Assert.Equal(["Bob"], await Names(server, "from index 'Users/Js' where search(Made, 'b')"));
        Assert.Equal(["Ann"], await Names(server, "from index 'Users/Js' where FriendName = 'Bob'"));
        // A C# map that outputs nothing for a document (its where clause) gives it no entry either.
        await PutIndex(server, """{"Name":"Users/NotSkipped","Maps":["from u in docs.Users where u.Kind != \"skip\" select new { u.Name }"]}""");
        Assert.Equal(["Ann", "Bob"], await Names(server, "from index 'Users/NotSkipped'"));
    }

    [Fact]
    public async Task JavaScript_maps_read_attachments_from_the_metadata()
    {
        await using var server = await StartAsync("""{"Name":"Ann","@metadata":{"@collection":"Users"}}""", """{"Name":"Bob","@metadata":{"@collection":"Users"}}""");
        var put = await server.Http.PutAsync("/databases/db/attachments?id=users/1&name=photo.png&contentType=image/png", new ByteArrayContent([1, 2, 3]));
        Assert.Equal(HttpStatusCode.Created, put.StatusCode);
        const string map = "map('Users', u => ({ Name: u.Name, Files: attachmentsFor(u).map(a => a.Name), Types: attachmentsFor(u).map(a => a.ContentType), Sizes: attachmentsFor(u).map(a => a.Size) }))";
        await PutIndex(server, new JsonObject { ["Name"] = "Users/Files", ["Maps"] = new JsonArray(map) }.ToJsonString());
        Assert.Equal(["Ann"], await Names(server, "from index 'Users/Files' where Files = 'photo.png' and Types = 'image/png' and Sizes = 3"));
        Assert.Equal(["Bob"], await Names(server, "from index 'Users/Files' where not exists(Files) and Name = 'Bob'"));

        // loadAttachment() / loadAttachments(): the content as text.
        var note = await server.Http.PutAsync("/databases/db/attachments?id=users/2&name=note.txt&contentType=text/plain", new ByteArrayContent("hello world"u8.ToArray()));
        Assert.Equal(HttpStatusCode.Created, note.StatusCode);
        const string contents = "map('Users', u => { const a = loadAttachment(u, 'note.txt'); return { Name: u.Name, Note: a ? a.getContentAsString() : null, Type: a ? a.ContentType : null, All: loadAttachments(u).map(x => x.Name) }; })";
        await PutIndex(server, new JsonObject { ["Name"] = "Users/Notes", ["Maps"] = new JsonArray(contents), ["Fields"] = new JsonObject { ["Note"] = new JsonObject { ["Indexing"] = "Search" } } }.ToJsonString());
        Assert.Equal(["Bob"], await Names(server, "from index 'Users/Notes' where search(Note, 'world') and Type = 'text/plain'"));
        Assert.Equal(["Ann"], await Names(server, "from index 'Users/Notes' where All = 'photo.png'"));
        Assert.Equal(["Ann"], await Names(server, "from index 'Users/Notes' where Note = null"));
    }

    [Fact]
    public async Task All_documents_maps_index_every_collection()
    {
        await using var server = await StartAsync("""{"Name":"John","@metadata":{"@collection":"Users"}}""", """{"Name":"admin","@metadata":{"@collection":"Roles"}}""");
        await PutIndex(server, """{"Name":"All/ByName","Maps":["from doc in docs select new { doc.Name, Collection = MetadataFor(doc)[\"@collection\"] }"]}""");
        await PutIndex(server, """{"Name":"All/Lambda","Maps":["docs.Select(doc => new { doc.Name })"]}""");
        await PutIndex(server, """{"Name":"All/Js","Maps":["map('@all_docs', d => ({ Name: d.Name }))"]}""");
        foreach (string index in new[] { "All/ByName", "All/Lambda", "All/Js" })
            Assert.Equal(["John", "admin"], await Names(server, $"from index '{index}'"));
        Assert.Equal(["admin"], await Names(server, "from index 'All/ByName' where Collection = 'Roles'"));
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/docs?id=companies/1", TestServer.Json("""{"Name":"Acme","@metadata":{"@collection":"Companies"}}"""))).StatusCode);
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync("/databases/db/docs?id=users/1")).StatusCode);
        foreach (string index in new[] { "All/ByName", "All/Lambda", "All/Js" })
            Assert.Equal(["admin", "Acme"], await Names(server, $"from index '{index}'"));
        var both = await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json("""{"Indexes":[{"Name":"Mixed","Maps":["from doc in docs select new { doc.Name }","from u in docs.Users select new { u.Name }"]}]}"""));
        Assert.Equal(HttpStatusCode.BadRequest, both.StatusCode);
    }
    [Fact]
    public async Task Maps_read_compare_exchange_values_and_follow_their_changes()
    {
        await using var server = await StartAsync(
            """{"Name":"ann","@metadata":{"@collection":"Users"}}""",
            """{"Name":"bob","@metadata":{"@collection":"Users"}}""");
        async Task<long> PutValue(string key, string level, long index)
        {
            var r = await server.Http.PutAsync($"/databases/db/cmpxchg?key={key}&index={index}", TestServer.Json(new JsonObject { ["Object"] = new JsonObject { ["Level"] = level } }.ToJsonString()));
            var json = await TestServer.ReadJson(r);
            Assert.True(json.GetProperty("Successful").GetBoolean(), json.ToString());
            return json.GetProperty("Index").GetInt64();
        }
        long ann = await PutValue("plans/ann", "gold", 0);
        await PutIndex(server, """{"Name":"JsPlans","Maps":["map('Users', u => ({ Name: u.Name, Plan: (cmpxchg('plans/' + u.Name) || {}).Level || null }))"]}""");
        await PutIndex(server, """{"Name":"CsPlans","Maps":["from u in docs.Users let p = LoadCompareExchangeValue(\"plans/\" + u.Name) select new { u.Name, Plan = p.Level }"]}""");
        async Task<string[]> WithPlan(string index, string plan)
        {
            var body = new JsonObject { ["Query"] = $"from index {index} where Plan = '{plan}' select Name", ["WaitForNonStaleResults"] = true, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
            var json = await TestServer.ReadJson(await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString())));
            Assert.False(json.GetProperty("IsStale").GetBoolean());
            return json.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Name").GetString()!).OrderBy(n => n, StringComparer.Ordinal).ToArray();
        }
        foreach (string index in new[] { "JsPlans", "CsPlans" })
            Assert.Equal(["ann"], await WithPlan(index, "gold"));
        // A value changed, one created, one deleted: the documents that read them are mapped again (the documents did not change).
        await PutValue("plans/ann", "silver", ann);
        await PutValue("plans/bob", "gold", 0);
        foreach (string index in new[] { "JsPlans", "CsPlans" })
        {
            Assert.Equal(["ann"], await WithPlan(index, "silver"));
            Assert.Equal(["bob"], await WithPlan(index, "gold"));
        }
        var current = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/cmpxchg?key=plans/bob"));
        long bobIndex = current.GetProperty("Results")[0].GetProperty("Index").GetInt64();
        Assert.Equal(HttpStatusCode.OK, (await server.Http.DeleteAsync($"/databases/db/cmpxchg?key=plans/bob&index={bobIndex}")).StatusCode);
        foreach (string index in new[] { "JsPlans", "CsPlans" })
            Assert.Empty(await WithPlan(index, "gold"));
    }
}
