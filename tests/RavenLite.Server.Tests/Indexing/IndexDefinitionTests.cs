using System.Globalization;

namespace RavenLite.Server.Tests.Indexing;

/// <summary>
/// Index definitions as RavenDB users write them: C# maps compiled with Roslyn and JavaScript maps run
/// in Jint over a generated Northwind-like data set, each checked against a brute-force evaluation in C# before and
/// after random updates and deletes; the index functions (Id, MetadataFor, LoadDocument, CreateSpatialField);
/// compile errors naming line and column; escape attempts from C# index code refused; JavaScript limits stopping
/// runaway code per document while indexing goes on.
/// </summary>
public sealed class IndexDefinitionTests(ITestOutputHelper output)
{
    private static readonly string[] Cities = ["Oslo", "Lyon", "Porto", "Graz"];

    private sealed record Line(string Product, int Quantity, double Price, double Discount);

    private sealed record Order(string Id, string Company, string Employee, string? City, List<Line> Lines, string OrderedAt = "2026-01-01")
    {
        public double Total => Lines.Sum(l => l.Quantity * l.Price * (1 - l.Discount));
    }

    private static Order RandomOrder(Random rnd, string id) => new(
        id,
        $"companies/{rnd.Next(1, 30)}-A",
        $"employees/{rnd.Next(1, 9)}-A",
        rnd.Next(8) == 0 ? null : Cities[rnd.Next(4)],
        Enumerable.Range(0, rnd.Next(0, 5)).Select(_ => new Line($"products/{rnd.Next(1, 11)}-A", rnd.Next(1, 20), rnd.Next(100, 5000) / 100.0, rnd.Next(0, 3) * 0.05)).ToList(),
        $"2026-{rnd.Next(1, 7):D2}-{rnd.Next(1, 29):D2}T10:00:00.0000000Z");

    private static JsonObject ToJson(Order o)
    {
        var json = new JsonObject
        {
            ["Company"] = o.Company,
            ["Employee"] = o.Employee,
            ["OrderedAt"] = o.OrderedAt,
            ["Lines"] = new JsonArray(o.Lines.Select(l => (JsonNode?)new JsonObject { ["Product"] = l.Product, ["Quantity"] = l.Quantity, ["PricePerUnit"] = l.Price, ["Discount"] = l.Discount }).ToArray()),
            ["@metadata"] = new JsonObject { ["@collection"] = "Orders" },
        };
        if (o.City != null)
            json["ShipTo"] = new JsonObject { ["City"] = o.City };
        return json;
    }

    private static async Task Bulk(HttpClient http, IEnumerable<JsonObject> commands)
    {
        var r = await http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = new JsonArray(commands.Select(c => (JsonNode?)c).ToArray()) }.ToJsonString()));
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
    }

    private static async Task<JsonElement> Query(HttpClient http, string rql, JsonObject? parameters = null, HttpStatusCode expect = HttpStatusCode.OK)
    {
        var body = new JsonObject { ["Query"] = rql, ["QueryParameters"] = parameters ?? new JsonObject(), ["WaitForNonStaleResults"] = true, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
        var r = await http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(expect == r.StatusCode, $"{rql} → {(int)r.StatusCode}: {json}");
        return json;
    }

    private static async Task<HttpResponseMessage> PutIndex(HttpClient http, string name, string[] maps, string? fields = null)
    {
        var definition = new JsonObject { ["Name"] = name, ["Maps"] = new JsonArray(maps.Select(m => (JsonNode?)m).ToArray()) };
        if (fields != null)
            definition["Fields"] = JsonNode.Parse(fields);
        return await http.PutAsync("/databases/db/admin/indexes", TestServer.Json(new JsonObject { ["Indexes"] = new JsonArray(definition) }.ToJsonString()));
    }

    private static List<string> Ids(JsonElement result) =>
        result.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("@metadata").GetProperty("@id").GetString()!).ToList();

    public static TheoryData<string, string, string, string> SampleIndexes => new()
    {
        {
            "C#",
            "from o in docs.Orders select new { o.Company, o.Employee, City = o.ShipTo.City, Total = o.Lines.Sum(l => l.Quantity * l.PricePerUnit * (1 - l.Discount)), LineCount = o.Lines.Count() }",
            "docs.Orders.SelectMany(o => o.Lines, (o, l) => new { l.Product, o.Company, Big = l.Quantity >= 10 })",
            "from o in docs.Orders let products = o.Lines.Select(l => l.Product).Distinct() where o.Lines.Any() select new { Products = products, Count = products.Count(), Id = Id(o), Collection = MetadataFor(o)[\"@collection\"] }"
        },
        {
            "JavaScript",
            "map('Orders', o => ({ Company: o.Company, Employee: o.Employee, City: o.ShipTo.City, Total: o.Lines.reduce((s, l) => s + l.Quantity * l.PricePerUnit * (1 - l.Discount), 0), LineCount: o.Lines.length }))",
            "map('Orders', function (o) { return o.Lines.map(l => ({ Product: l.Product, Company: o.Company, Big: l.Quantity >= 10 })); })",
            "map('Orders', o => { if (o.Lines.length === 0) return null; const products = [...new Set(o.Lines.map(l => l.Product))]; return { Products: products, Count: products.length, Id: id(o), Collection: getMetadata(o)['@collection'] }; })"
        },
    };

    /// <summary>
    /// Three sample indexes (totals by company, a fan-out over order lines, a let/where/Distinct index with Id and
    /// MetadataFor), in C# and in JavaScript, answer random queries exactly as a brute-force evaluation over the
    /// same orders does — first over a fresh build, then after a third of the orders change and a sixth are deleted.
    /// </summary>
    [Theory]
    [MemberData(nameof(SampleIndexes))]
    public async Task Sample_indexes_match_a_brute_force_evaluation_before_and_after_changes(string language, string totals, string lines, string products)
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        var rnd = new Random(2201);
        var orders = Enumerable.Range(1, 300).Select(i => RandomOrder(rnd, $"orders/{i}-A")).ToList();
        await Bulk(http, orders.Select(o => new JsonObject { ["Id"] = o.Id, ["Type"] = "PUT", ["Document"] = ToJson(o) }));
        Assert.Equal(HttpStatusCode.Created, (await PutIndex(http, "Orders/Totals", [totals])).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await PutIndex(http, "Orders/Lines", [lines])).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await PutIndex(http, "Orders/Products", [products])).StatusCode);
        await Check(http, orders, rnd, language);

        var changed = orders.Where((_, i) => i % 3 == 0).Select(o => RandomOrder(rnd, o.Id)).ToList();
        var deleted = orders.Where((_, i) => i % 6 == 1).Select(o => o.Id).ToHashSet();
        await Bulk(http, changed.Select(o => new JsonObject { ["Id"] = o.Id, ["Type"] = "PUT", ["Document"] = ToJson(o) }));
        await Bulk(http, deleted.Select(id => new JsonObject { ["Id"] = id, ["Type"] = "DELETE" }));
        var byId = changed.ToDictionary(o => o.Id);
        var current = orders.Where(o => !byId.ContainsKey(o.Id)).Concat(changed).Where(o => !deleted.Contains(o.Id)).ToList();
        await Check(http, current, rnd, language);
        foreach (string name in new[] { "Orders/Totals", "Orders/Lines", "Orders/Products" })
        {
            var errors = await TestServer.ReadJson(await http.GetAsync("/databases/db/indexes/errors?name=" + Uri.EscapeDataString(name)));
            Assert.Equal(0, errors.GetProperty("Results")[0].GetProperty("Errors").GetArrayLength());
        }
    }

    private async Task Check(HttpClient http, List<Order> orders, Random rnd, string language)
    {
        static string Sorted(IEnumerable<string> ids) => string.Join(",", ids.Order(StringComparer.Ordinal));
        for (int q = 0; q < 40; q++)
        {
            string company = $"companies/{rnd.Next(1, 30)}-A";
            double low = rnd.Next(0, 400), high = low + rnd.Next(10, 300);
            string city = Cities[rnd.Next(4)];
            string product = $"products/{rnd.Next(1, 11)}-A";

            var byCompany = await Query(http, "from index 'Orders/Totals' where Company = $c", new JsonObject { ["c"] = company });
            Assert.Equal(Sorted(orders.Where(o => o.Company == company).Select(o => o.Id.ToLowerInvariant())), Sorted(Ids(byCompany).Select(i => i.ToLowerInvariant())));

            var byTotal = await Query(http, "from index 'Orders/Totals' where Total between $l and $h and City = $city order by Total desc",
                new JsonObject { ["l"] = low, ["h"] = high, ["city"] = city });
            var want = orders.Where(o => o.Total >= low && o.Total <= high && o.City == city).OrderByDescending(o => o.Total).Select(o => o.Id.ToLowerInvariant()).ToList();
            Assert.True(want.SequenceEqual(Ids(byTotal).Select(i => i.ToLowerInvariant())), $"{language} totals {low}..{high} {city}: want {string.Join(",", want)} got {string.Join(",", Ids(byTotal))}");

            var byProduct = await Query(http, "from index 'Orders/Lines' where Product = $p and Company = $c", new JsonObject { ["p"] = product, ["c"] = company });
            Assert.Equal(Sorted(orders.Where(o => o.Company == company && o.Lines.Any(l => l.Product == product)).Select(o => o.Id.ToLowerInvariant())), Sorted(Ids(byProduct).Select(i => i.ToLowerInvariant())));

            var big = await Query(http, "from index 'Orders/Lines' where Big = true and Product = $p", new JsonObject { ["p"] = product });
            // Fan-out entries merge their values per document: "Big = true and Product = p" holds when some line is big and some line is p.
            Assert.Equal(Sorted(orders.Where(o => o.Lines.Any(l => l.Quantity >= 10) && o.Lines.Any(l => l.Product == product)).Select(o => o.Id.ToLowerInvariant())), Sorted(Ids(big).Select(i => i.ToLowerInvariant())));

            int count = rnd.Next(1, 5);
            var byCount = await Query(http, "from index 'Orders/Products' where Count = $n and Products = $p", new JsonObject { ["n"] = count, ["p"] = product });
            Assert.Equal(Sorted(orders.Where(o => o.Lines.Select(l => l.Product).Distinct().Count() == count && o.Lines.Any(l => l.Product == product)).Select(o => o.Id.ToLowerInvariant())), Sorted(Ids(byCount).Select(i => i.ToLowerInvariant())));
        }
        var all = await Query(http, "from index 'Orders/Products' where Collection = 'Orders' and Id = $id", new JsonObject { ["id"] = orders.First(o => o.Lines.Count > 0).Id });
        Assert.Single(Ids(all));
        output.WriteLine($"{language}: {orders.Count} orders checked");
    }

    /// <summary>LoadDocument (C#) and load() (JavaScript) read another document when the entry is made; when that document changes, appears or is deleted, the documents that loaded it are mapped again.</summary>
    [Theory]
    [InlineData("from o in docs.Orders let c = LoadDocument(o.Company, \"Companies\") select new { CompanyName = c.Name, Country = c.Address.Country, Missing = LoadDocument(o.Employee).Name }")]
    [InlineData("map('Orders', o => { const c = load(o.Company, 'Companies'); return { CompanyName: c.Name, Country: c.Address.Country, Missing: load(o.Employee).Name }; })")]
    public async Task LoadDocument_reads_the_referenced_document(string map)
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        await Bulk(http,
        [
            new JsonObject { ["Id"] = "companies/1-A", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"Name":"Alfreds","Address":{"Country":"Germany"},"@metadata":{"@collection":"Companies"}}""") },
            new JsonObject { ["Id"] = "orders/1-A", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"Company":"companies/1-A","Employee":"employees/404","@metadata":{"@collection":"Orders"}}""") },
            new JsonObject { ["Id"] = "orders/2-A", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"Company":"companies/2-A","@metadata":{"@collection":"Orders"}}""") },
        ]);
        Assert.Equal(HttpStatusCode.Created, (await PutIndex(http, "Orders/WithCompany", [map])).StatusCode);
        Assert.Equal(["orders/1-A"], Ids(await Query(http, "from index 'Orders/WithCompany' where CompanyName = 'alfreds' and Country = 'Germany'")));
        Assert.Empty(Ids(await Query(http, "from index 'Orders/WithCompany' where exists(Missing) and Missing != null")));
        Assert.Equal(2, (await Query(http, "from index 'Orders/WithCompany'")).GetProperty("TotalResults").GetInt32());

        // Reference tracking: a loaded document that changes, appears or goes maps the documents that loaded it again.
        await Bulk(http,
        [
            new JsonObject { ["Id"] = "companies/1-A", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"Name":"Alfreds Futterkiste","Address":{"Country":"Austria"},"@metadata":{"@collection":"Companies"}}""") },
            new JsonObject { ["Id"] = "employees/404", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"Name":"Nancy","@metadata":{"@collection":"Employees"}}""") },
            new JsonObject { ["Id"] = "companies/2-A", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"Name":"Ana Trujillo","Address":{"Country":"Mexico"},"@metadata":{"@collection":"Companies"}}""") },
        ]);
        Assert.Empty(Ids(await Query(http, "from index 'Orders/WithCompany' where Country = 'Germany'")));
        Assert.Equal(["orders/1-A"], Ids(await Query(http, "from index 'Orders/WithCompany' where Country = 'Austria' and Missing = 'Nancy'")));
        Assert.Equal(["orders/2-A"], Ids(await Query(http, "from index 'Orders/WithCompany' where CompanyName = 'Ana Trujillo'")));
        await Bulk(http, [new JsonObject { ["Id"] = "companies/1-A", ["Type"] = "DELETE" }]);
        Assert.Empty(Ids(await Query(http, "from index 'Orders/WithCompany' where Country = 'Austria'")));
        Assert.Equal(["orders/1-A"], Ids(await Query(http, "from index 'Orders/WithCompany' where Missing = 'Nancy'")));
    }

    /// <summary>Strings, Math, DateTime and LINQ methods on dynamic values; a missing path is null, not an error.</summary>
    [Fact]
    public async Task Csharp_maps_call_methods_on_dynamic_values()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        await Bulk(http,
        [
            new JsonObject { ["Id"] = "people/1", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"First":"Ada","Last":"Lovelace","Born":"1815-12-10T00:00:00.0000000Z","Scores":[3,9,4],"Weight":61.37,"@metadata":{"@collection":"People"}}""") },
            new JsonObject { ["Id"] = "people/2", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"First":"Alan","Scores":[],"@metadata":{"@collection":"People"}}""") },
        ]);
        const string map = """
            from p in docs.People
            let full = p.First + " " + p.Last
            select new
            {
                Full = full.Trim().ToUpper(),
                Initials = p.First.Substring(0, 1) + (p.Last == null ? "" : p.Last.Substring(0, 1)),
                Year = p.Born != null ? DateTime.Parse(p.Born, CultureInfo.InvariantCulture, DateTimeStyles.RoundtripKind).Year : 0,
                Best = p.Scores.Any() ? p.Scores.Max() : -1,
                Sorted = p.Scores.OrderByDescending(s => s).Take(2),
                Rounded = Math.Round((double)(p.Weight ?? 0.0), 1),
                Deep = p.Address.Street.Name,
                Matches = Regex.IsMatch(p.First, "^A")
            }
            """;
        var r = await PutIndex(http, "People/Methods", [map]);
        Assert.True(r.StatusCode == HttpStatusCode.Created, await r.Content.ReadAsStringAsync());
        Assert.Equal(["people/1"], Ids(await Query(http, "from index 'People/Methods' where Full = 'ADA LOVELACE' and Initials = 'AL' and Year = 1815 and Best = 9 and Rounded = 61.4 and Matches = true")));
        Assert.Equal(["people/1"], Ids(await Query(http, "from index 'People/Methods' where Sorted = 4")));
        Assert.Empty(Ids(await Query(http, "from index 'People/Methods' where Sorted = 3")));
        Assert.Equal(["people/2"], Ids(await Query(http, "from index 'People/Methods' where Full = 'ALAN' and Initials = 'A' and Year = 0 and Best = -1 and Rounded = 0")));
        Assert.Empty(Ids(await Query(http, "from index 'People/Methods' where exists(Deep)")));
        var errors = await TestServer.ReadJson(await http.GetAsync("/databases/db/indexes/errors?name=People/Methods"));
        Assert.Equal(0, errors.GetProperty("Results")[0].GetProperty("Errors").GetArrayLength());
    }

    /// <summary>A compile error is a 400 IndexCompilationException naming the map, line and column of the user's text.</summary>
    [Theory]
    [InlineData("from o in docs.Orders\nselect new { X = o.Company.Foo( }", "line 2")]
    [InlineData("from o in docs.Orders\nselect new { X = UnknownFunction(o) }", "Map 1, line 2, column 18")]
    [InlineData("from o in docs.Orders select o", "anonymous objects")]
    [InlineData("from o in docs.Orders from c in docs.Companies select new { o.Company }", "reads one collection")]
    [InlineData("map('Orders', o => ({ A: o.A )", "line 1")]
    [InlineData("map('Orders', 42)", "takes a collection name and a function")]
    [InlineData("map('Orders', o => ({ A: o.A }));\nthrow new Error('boom');", "boom")]
    public async Task A_compile_error_names_the_map_line_and_column(string map, string expected)
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var r = await PutIndex(server.Http, "Bad", [map]);
        var json = await TestServer.ReadJson(r);
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        Assert.Equal("Raven.Client.Exceptions.Documents.Compilation.IndexCompilationException", json.GetProperty("Type").GetString());
        Assert.Contains(expected, json.GetProperty("Message").GetString(), StringComparison.Ordinal);
        output.WriteLine(json.GetProperty("Message").GetString());
    }

    /// <summary>
    /// Index code cannot reach the file system, processes, the network, reflection, threads, the environment or
    /// the server, and cannot loop or recurse: each attempt is refused when the index is put (400), and nothing runs.
    /// </summary>
    [Theory]
    [InlineData("System.IO.File.ReadAllText(\"/etc/passwd\")", "System.IO.File")]
    [InlineData("System.IO.Directory.GetFiles(\"/\").Length", "System.IO.Directory")]
    [InlineData("new System.IO.FileInfo(\"/etc/passwd\").Length", "System.IO.FileInfo")]
    [InlineData("System.Diagnostics.Process.GetCurrentProcess().Id", "Process")]
    [InlineData("Environment.GetEnvironmentVariable(\"PATH\")", "System.Environment")]
    [InlineData("Environment.ProcessId", "System.Environment")]
    [InlineData("o.GetType().Assembly.FullName", "GetType")]
    [InlineData("typeof(string).Assembly.FullName", "not allowed")]
    [InlineData("Type.GetType(\"System.IO.File\")", "System.Type")]
    [InlineData("Activator.CreateInstance<object>()", "System.Activator")]
    [InlineData("AppDomain.CurrentDomain.BaseDirectory", "System.AppDomain")]
    [InlineData("System.Threading.Thread.CurrentThread.ManagedThreadId", "System.Threading.Thread")]
    [InlineData("System.Threading.Tasks.Task.Run(() => 1).Result", "System.Threading.Tasks")]
    [InlineData("new System.Net.Sockets.TcpClient(\"127.0.0.1\", 80)", "TcpClient")]
    [InlineData("GC.GetTotalMemory(false)", "System.GC")]
    [InlineData("Console.ReadLine()", "Console")]
    [InlineData("((Func<int, int>)(x => x + 1))(1)", "delegate")]
    [InlineData("o.Lines.Select(l => { while (true) { } return 1; })", "loops")]
    [InlineData("new RavenLite.Server.Configuration.ServerOptions()", "RavenLite.Server.Configuration")]
    [InlineData("((Func<string>)\"x\".ToString).Method.Name", "System.Reflection")]
    public async Task Csharp_index_code_cannot_escape(string expression, string refused)
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var r = await PutIndex(server.Http, "Escape", [$"from o in docs.Orders select new {{ X = {expression} }}"]);
        var json = await TestServer.ReadJson(r);
        Assert.True(r.StatusCode == HttpStatusCode.BadRequest, $"{expression}: {(int)r.StatusCode} {json}");
        Assert.Equal("Raven.Client.Exceptions.Documents.Compilation.IndexCompilationException", json.GetProperty("Type").GetString());
        Assert.Contains(refused, json.GetProperty("Message").GetString(), StringComparison.Ordinal);
        var names = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes?namesOnly=true"));
        Assert.Equal(0, names.GetProperty("Results").GetArrayLength());
    }

    /// <summary>
    /// JavaScript that runs away — an endless loop, endless recursion, a huge allocation, a throw — fails only the
    /// documents it runs for (index errors naming them), and the index goes on with the others.
    /// </summary>
    [Fact]
    public async Task Javascript_limits_stop_runaway_code_per_document_and_indexing_goes_on()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        const string map = """
            function deep(n) { return deep(n + 1) + 1; }
            map('Users', u => {
                if (u.Mode === 'loop') { while (true) { } }
                if (u.Mode === 'recurse') { return { Name: deep(0) }; }
                if (u.Mode === 'memory') { const a = []; for (let i = 0; i < 60; i++) { a.push('x'.repeat(10000000) + i); } return { Name: a.length }; }
                if (u.Mode === 'throw') { throw new Error('bad user'); }
                return { Name: u.Name };
            })
            """;
        string[] modes = ["loop", "recurse", "memory", "throw"];
        await Bulk(http, Enumerable.Range(0, 24).Select(i => new JsonObject
        {
            ["Id"] = $"users/{i}",
            ["Type"] = "PUT",
            ["Document"] = new JsonObject { ["Name"] = "u" + i, ["Mode"] = i % 6 < 4 ? modes[i % 6] : "ok", ["@metadata"] = new JsonObject { ["@collection"] = "Users" } },
        }));
        var started = DateTime.UtcNow;
        Assert.Equal(HttpStatusCode.Created, (await PutIndex(http, "Users/Js", [map])).StatusCode);
        var all = await Query(http, "from index 'Users/Js' where Name != null");
        Assert.Equal(Enumerable.Range(0, 24).Where(i => i % 6 >= 4).Select(i => $"users/{i}").Order(StringComparer.Ordinal), Ids(all).Order(StringComparer.Ordinal));
        var errors = (await TestServer.ReadJson(await http.GetAsync("/databases/db/indexes/errors?name=Users/Js"))).GetProperty("Results")[0].GetProperty("Errors");
        var byDoc = errors.EnumerateArray().ToDictionary(e => e.GetProperty("Document").GetString()!, e => e.GetProperty("Error").GetString()!);
        Assert.Equal(16, byDoc.Count);
        foreach (var (doc, error) in byDoc)
            output.WriteLine($"{doc}: {error}");
        Assert.Contains("statements", byDoc["users/0"], StringComparison.Ordinal);
        Assert.Contains("recursion", byDoc["users/1"], StringComparison.Ordinal);
        Assert.Contains("allocated", byDoc["users/2"], StringComparison.Ordinal);
        Assert.Contains("bad user", byDoc["users/3"], StringComparison.Ordinal);
        output.WriteLine($"indexed in {(DateTime.UtcNow - started).TotalSeconds:F1} s");
    }

    /// <summary>
    /// A C# map-reduce index maps on the thread pool in chunks of 256 documents: with 700 documents (three chunks) of
    /// which every seventh makes the map throw, each failing document is an index error naming it, the others are
    /// reduced exactly (counts per group equal a brute-force count), and a change after the build re-reduces its group.
    /// </summary>
    [Fact]
    public async Task A_csharp_map_reduce_built_on_the_thread_pool_records_failing_documents_and_reduces_the_rest()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        string Name(int i) => i % 7 == 0 ? "x" : "item-" + i;
        await Bulk(http, Enumerable.Range(0, 700).Select(i => new JsonObject
        {
            ["Id"] = $"items/{i}",
            ["Type"] = "PUT",
            ["Document"] = new JsonObject { ["Name"] = Name(i), ["Group"] = "g" + (i % 5), ["@metadata"] = new JsonObject { ["@collection"] = "Items" } },
        }));
        var definition = new JsonObject
        {
            ["Name"] = "Items/ByGroup",
            ["Maps"] = new JsonArray("from i in docs.Items select new { i.Group, Count = 1, Tail = i.Name.Substring(2) }"),
            ["Reduce"] = "from r in results group r by r.Group into g select new { Group = g.Key, Count = g.Sum(x => x.Count), Tail = \"\" }",
        };
        var put = await http.PutAsync("/databases/db/admin/indexes", TestServer.Json(new JsonObject { ["Indexes"] = new JsonArray(definition) }.ToJsonString()));
        Assert.True(put.StatusCode == HttpStatusCode.Created, await put.Content.ReadAsStringAsync());

        async Task CheckCounts(Func<int, bool> good)
        {
            var got = (await Query(http, "from index 'Items/ByGroup' order by Group")).GetProperty("Results").EnumerateArray()
                .Select(r => (r.GetProperty("Group").GetString(), r.GetProperty("Count").GetInt32())).ToList();
            var want = Enumerable.Range(0, 700).Where(good).GroupBy(i => "g" + (i % 5)).OrderBy(g => g.Key, StringComparer.Ordinal).Select(g => ((string?)g.Key, g.Count())).ToList();
            Assert.Equal(want, got);
        }
        await CheckCounts(i => i % 7 != 0);
        var errors = (await TestServer.ReadJson(await http.GetAsync("/databases/db/indexes/errors?name=Items/ByGroup"))).GetProperty("Results")[0].GetProperty("Errors");
        var failed = errors.EnumerateArray().Select(e => e.GetProperty("Document").GetString()!).Order(StringComparer.Ordinal).ToList();
        Assert.Equal(Enumerable.Range(0, 700).Where(i => i % 7 == 0).Select(i => $"items/{i}").Order(StringComparer.Ordinal), failed);
        Assert.All(errors.EnumerateArray(), e => Assert.Contains("Items", e.GetProperty("Error").GetString()!, StringComparison.Ordinal));

        // items/0 maps now; its group gains one.
        await Bulk(http, [new JsonObject { ["Id"] = "items/0", ["Type"] = "PUT", ["Document"] = new JsonObject { ["Name"] = "fixed", ["Group"] = "g0", ["@metadata"] = new JsonObject { ["@collection"] = "Items" } } }]);
        await CheckCounts(i => i % 7 != 0 || i == 0);
    }

    /// <summary>
    /// A simple C# map built on the thread pool (700 documents, three chunks; the worker adds the entries in order):
    /// every seventh document makes the map throw and has an error and no entry, the others have entries in etag
    /// order; a fixed document gains its entry and a document that starts failing loses its entry.
    /// </summary>
    [Fact]
    public async Task A_csharp_map_built_on_the_thread_pool_keeps_etag_order_and_drops_failing_documents()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        JsonObject Item(string name) => new() { ["Name"] = name, ["@metadata"] = new JsonObject { ["@collection"] = "Items" } };
        await Bulk(http, Enumerable.Range(0, 700).Select(i => new JsonObject { ["Id"] = $"items/{i}", ["Type"] = "PUT", ["Document"] = Item(i % 7 == 0 ? "x" : "item-" + i) }));
        Assert.Equal(HttpStatusCode.Created, (await PutIndex(http, "Items/Tails", ["from i in docs.Items select new { Tail = i.Name.Substring(2) }"])).StatusCode);

        async Task<List<string>> All() => Ids(await Query(http, "from index 'Items/Tails' limit 1000"));
        var good = Enumerable.Range(0, 700).Where(i => i % 7 != 0).Select(i => $"items/{i}").ToList();
        Assert.Equal(good, await All()); // no order by: index order, which is etag order
        var errors = (await TestServer.ReadJson(await http.GetAsync("/databases/db/indexes/errors?name=Items/Tails"))).GetProperty("Results")[0].GetProperty("Errors");
        Assert.Equal(Enumerable.Range(0, 700).Where(i => i % 7 == 0).Select(i => $"items/{i}").Order(StringComparer.Ordinal),
            errors.EnumerateArray().Select(e => e.GetProperty("Document").GetString()!).Order(StringComparer.Ordinal));

        await Bulk(http, [
            new JsonObject { ["Id"] = "items/0", ["Type"] = "PUT", ["Document"] = Item("fixed") },
            new JsonObject { ["Id"] = "items/1", ["Type"] = "PUT", ["Document"] = Item("y") },
        ]);
        Assert.Equal([.. good.Where(id => id != "items/1"), "items/0"], await All());
    }

    /// <summary>Several maps (multi-map): one index over two collections, each map with its own fields.</summary>
    [Theory]
    [InlineData("from c in docs.Companies select new { Name = c.Name, Kind = \"company\" }", "from e in docs.Employees select new { Name = e.FirstName + \" \" + e.LastName, Kind = \"employee\" }")]
    [InlineData("map('Companies', c => ({ Name: c.Name, Kind: 'company' }))", "map('Employees', e => ({ Name: e.FirstName + ' ' + e.LastName, Kind: 'employee' }))")]
    public async Task A_multi_map_index_reads_several_collections(string first, string second)
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        await Bulk(http,
        [
            new JsonObject { ["Id"] = "companies/1", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"Name":"Ann Arbor Ltd","@metadata":{"@collection":"Companies"}}""") },
            new JsonObject { ["Id"] = "employees/1", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"FirstName":"Ann","LastName":"Lee","@metadata":{"@collection":"Employees"}}""") },
            new JsonObject { ["Id"] = "employees/2", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"FirstName":"Bob","LastName":"Ray","@metadata":{"@collection":"Employees"}}""") },
        ]);
        Assert.Equal(HttpStatusCode.Created, (await PutIndex(http, "People/Search", [first, second], """{"Name":{"Indexing":"Search"}}""")).StatusCode);
        Assert.Equal(["companies/1", "employees/1"], Ids(await Query(http, "from index 'People/Search' where search(Name, 'ann') order by Kind")));
        Assert.Equal(["employees/2"], Ids(await Query(http, "from index 'People/Search' where Kind = 'employee' and search(Name, 'ray')")));
        await Bulk(http, [new JsonObject { ["Id"] = "employees/2", ["Type"] = "DELETE" }]);
        Assert.Empty(Ids(await Query(http, "from index 'People/Search' where search(Name, 'ray')")));
    }

    /// <summary>The same C# map text compiles once per process: the compiled maps are cached by the text's hash.</summary>
    [Fact]
    public void Compiling_the_same_map_again_is_served_from_the_cache()
    {
        string map = "from o in docs.Orders select new { o.Company, Stamp = \"" + Guid.NewGuid().ToString("N") + "\" }";
        var first = System.Diagnostics.Stopwatch.StartNew();
        var a = RavenLite.Server.Indexing.Scripting.CSharpIndexCompiler.Compile([map]);
        first.Stop();
        var b = RavenLite.Server.Indexing.Scripting.CSharpIndexCompiler.Compile([map]);
        Assert.Same(a, b);
        Assert.NotSame(a, RavenLite.Server.Indexing.Scripting.CSharpIndexCompiler.Compile([map + " "]));
        var compiled = RavenLite.Server.Indexing.IndexCompiler.Compile(new RavenLite.Server.Indexing.IndexDefinition { Name = "X", Maps = [map] });
        using var doc = JsonDocument.Parse("""{"Company":"companies/1"}""");
        using var entry = compiled.MapEntry(doc.RootElement, "Orders", "orders/1");
        Assert.Contains("companies/1", System.Text.Encoding.UTF8.GetString(entry.Json), StringComparison.Ordinal);
        output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"compile {first.Elapsed.TotalMilliseconds:F0} ms"));
    }

    /// <summary>
    /// A compiled C# index is kept on disk, so a restart loads it instead of waiting for Roslyn (seconds per index);
    /// an entry that does not load is compiled again and rewritten.
    /// </summary>
    [Fact]
    public void Compiled_csharp_indexes_are_kept_on_disk_and_loaded_from_there_by_a_new_process()
    {
        using var dir = new RavenLite.TestKit.TempDirectory("ravenlite-index-cache");
        string map = "from o in docs.Orders select new { o.Company, Stamp = \"" + Guid.NewGuid().ToString("N") + "\" }";
        string reduce = "from r in results group r by r.Company into g select new { Company = g.Key, Stamp = g.First().Stamp }";
        var compiled = RavenLite.Server.Indexing.Scripting.CSharpIndexCompiler.Compile([map], reduce, diskCache: dir.Path);
        Assert.False(compiled.FromDisk);
        string entry = Assert.Single(Directory.GetFiles(dir.Path, "*.index"));

        RavenLite.Server.Indexing.Scripting.CSharpIndexCompiler.ForgetCompiled(); // a new process
        var loaded = RavenLite.Server.Indexing.Scripting.CSharpIndexCompiler.Compile([map], reduce, diskCache: dir.Path);
        Assert.True(loaded.FromDisk);
        Assert.Equal(compiled.Maps[0].Fields, loaded.Maps[0].Fields);
        Assert.Equal(compiled.Reduce!.Fields, loaded.Reduce!.Fields);
        using var doc = JsonDocument.Parse("""{"Company":"companies/1"}""");
        object dynamicDoc = RavenLite.Server.Indexing.Scripting.DynamicJson.Wrap(doc.RootElement);
        var results = loaded.Maps[0].Run([dynamicDoc]).Cast<object>().ToList();
        Assert.Contains("companies/1", Assert.Single(results).ToString(), StringComparison.Ordinal);

        File.WriteAllBytes(entry, [1, 2, 3]); // damaged: compiled again
        RavenLite.Server.Indexing.Scripting.CSharpIndexCompiler.ForgetCompiled();
        var again = RavenLite.Server.Indexing.Scripting.CSharpIndexCompiler.Compile([map], reduce, diskCache: dir.Path);
        Assert.False(again.FromDisk);
        Assert.True(new FileInfo(entry).Length > 1000);
    }

    public static TheoryData<string, string[]> MapReduceIndexes => new()
    {
        {
            "C#",
            [
                "from o in docs.Orders select new { o.Company, Count = 1, Total = o.Lines.Sum(l => l.Quantity * l.PricePerUnit * (1 - l.Discount)) }",
                "from r in results group r by r.Company into g select new { Company = g.Key, Count = g.Sum(x => x.Count), Total = g.Sum(x => x.Total) }",
                "from o in docs.Orders from l in o.Lines select new { l.Product, l.Quantity, Count = 1 }",
                "results.GroupBy(r => r.Product).Select(g => new { Product = g.Key, Quantity = g.Sum(x => x.Quantity), Count = g.Sum(x => x.Count) })",
                "from o in docs.Orders select new { o.Company, Month = o.OrderedAt.Substring(0, 7), Count = 1 }",
                "from r in results group r by new { r.Company, r.Month } into g select new { g.Key.Company, g.Key.Month, Count = g.Sum(x => x.Count) }",
            ]
        },
        {
            "JavaScript",
            [
                "map('Orders', o => ({ Company: o.Company, Count: 1, Total: o.Lines.reduce((s, l) => s + l.Quantity * l.PricePerUnit * (1 - l.Discount), 0) }))",
                "groupBy(x => x.Company).aggregate(g => ({ Company: g.key, Count: g.values.reduce((a, v) => a + v.Count, 0), Total: g.values.reduce((a, v) => a + v.Total, 0) }))",
                "map('Orders', o => o.Lines.map(l => ({ Product: l.Product, Quantity: l.Quantity, Count: 1 })))",
                "groupBy(x => x.Product).aggregate(g => ({ Product: g.key, Quantity: g.values.reduce((a, v) => a + v.Quantity, 0), Count: g.values.reduce((a, v) => a + v.Count, 0) }))",
                "map('Orders', o => ({ Company: o.Company, Month: o.OrderedAt.substring(0, 7), Count: 1 }))",
                "groupBy(x => ({ Company: x.Company, Month: x.Month })).aggregate(g => ({ Company: g.key.Company, Month: g.key.Month, Count: g.values.reduce((a, v) => a + v.Count, 0) }))",
            ]
        },
    };

    /// <summary>
    /// Map-reduce (totals by company, a fan-out of quantities by product, counts by company and month with a composite
    /// key), in C# and JavaScript: the reduce results equal a brute-force grouping of the orders after the build,
    /// after random updates and deletes (re-reduced incrementally, only the changed keys), and equal a full recompute
    /// (the index reset and built again); queries filter and sort reduce results like documents. As RavenDB requires,
    /// each reduce accepts its own results as input (counts are sums of Count, not numbers of values).
    /// </summary>
    [Theory]
    [MemberData(nameof(MapReduceIndexes))]
    public async Task Map_reduce_results_match_a_brute_force_grouping_incrementally_and_after_a_rebuild(string language, string[] definitions)
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        var rnd = new Random(2202);
        var orders = Enumerable.Range(1, 300).Select(i => RandomOrder(rnd, $"orders/{i}-A")).ToList();
        await Bulk(http, orders.Select(o => new JsonObject { ["Id"] = o.Id, ["Type"] = "PUT", ["Document"] = ToJson(o) }));
        string[] names = ["Orders/ByCompany", "Products/Sales", "Orders/ByMonth"];
        for (int i = 0; i < names.Length; i++)
        {
            var definition = new JsonObject { ["Name"] = names[i], ["Maps"] = new JsonArray(definitions[2 * i]), ["Reduce"] = definitions[2 * i + 1] };
            var r = await http.PutAsync("/databases/db/admin/indexes", TestServer.Json(new JsonObject { ["Indexes"] = new JsonArray(definition) }.ToJsonString()));
            Assert.True(r.StatusCode == HttpStatusCode.Created, $"{names[i]}: {await r.Content.ReadAsStringAsync()}");
        }
        await CheckReduce(http, orders, language);

        for (int round = 0; round < 3; round++)
        {
            var changed = orders.Where((_, i) => rnd.Next(5) == 0).Select(o => RandomOrder(rnd, o.Id)).ToList();
            var deleted = orders.Where(_ => rnd.Next(10) == 0).Select(o => o.Id).Except(changed.Select(c => c.Id)).ToHashSet();
            var added = Enumerable.Range(0, 10).Select(i => RandomOrder(rnd, $"orders/new-{round}-{i}")).ToList();
            await Bulk(http, changed.Concat(added).Select(o => new JsonObject { ["Id"] = o.Id, ["Type"] = "PUT", ["Document"] = ToJson(o) }));
            await Bulk(http, deleted.Select(id => new JsonObject { ["Id"] = id, ["Type"] = "DELETE" }));
            var byId = changed.ToDictionary(o => o.Id);
            orders = orders.Select(o => byId.GetValueOrDefault(o.Id, o)).Where(o => !deleted.Contains(o.Id)).Concat(added).ToList();
            await CheckReduce(http, orders, language);
        }
        var incremental = await Query(http, "from index 'Orders/ByMonth' order by Company, Month");
        foreach (string name in names)
            Assert.Equal(HttpStatusCode.NoContent, (await http.PostAsync("/databases/db/indexes/reset?name=" + Uri.EscapeDataString(name), null)).StatusCode);
        await CheckReduce(http, orders, language);
        var rebuilt = await Query(http, "from index 'Orders/ByMonth' order by Company, Month");
        Assert.Equal(incremental.GetProperty("Results").ToString(), rebuilt.GetProperty("Results").ToString());
        foreach (string name in names)
        {
            var errors = await TestServer.ReadJson(await http.GetAsync("/databases/db/indexes/errors?name=" + Uri.EscapeDataString(name)));
            Assert.Equal(0, errors.GetProperty("Results")[0].GetProperty("Errors").GetArrayLength());
        }
    }

    private async Task CheckReduce(HttpClient http, List<Order> orders, string language)
    {
        var byCompany = await Query(http, "from index 'Orders/ByCompany' order by Company");
        var want = orders.GroupBy(o => o.Company).OrderBy(g => g.Key.ToLowerInvariant(), StringComparer.Ordinal).Select(g => (g.Key, Count: g.Count(), Total: g.Sum(o => o.Total))).ToList();
        var got = byCompany.GetProperty("Results").EnumerateArray().Select(r => (r.GetProperty("Company").GetString()!, Count: r.GetProperty("Count").GetInt32(), Total: r.GetProperty("Total").GetDouble())).ToList();
        Assert.Equal(want.Select(w => (w.Key, w.Count)), got.Select(g => (g.Item1, g.Count)));
        for (int i = 0; i < want.Count; i++)
            Assert.True(Math.Abs(want[i].Total - got[i].Total) < 1e-6, $"{language} {want[i].Key}: total {want[i].Total} vs {got[i].Total}");
        Assert.Equal(want.Count, byCompany.GetProperty("TotalResults").GetInt32());

        var busy = await Query(http, "from index 'Orders/ByCompany' where Count >= 12 order by Total desc select Company, Count");
        var wantBusy = want.Where(w => w.Count >= 12).OrderByDescending(w => w.Total).Select(w => w.Key).ToList();
        Assert.Equal(wantBusy, busy.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Company").GetString()!).ToList());

        var sales = await Query(http, "from index 'Products/Sales' order by Product");
        var wantSales = orders.SelectMany(o => o.Lines).GroupBy(l => l.Product).OrderBy(g => g.Key, StringComparer.Ordinal).Select(g => $"{g.Key}:{g.Sum(l => l.Quantity)}:{g.Count()}");
        Assert.Equal(wantSales, sales.GetProperty("Results").EnumerateArray().Select(r => $"{r.GetProperty("Product").GetString()}:{r.GetProperty("Quantity").GetInt32()}:{r.GetProperty("Count").GetInt32()}"));

        var months = await Query(http, "from index 'Orders/ByMonth' where Month = '2026-03' order by Company");
        var wantMonths = orders.Where(o => o.OrderedAt.StartsWith("2026-03", StringComparison.Ordinal)).GroupBy(o => o.Company).OrderBy(g => g.Key.ToLowerInvariant(), StringComparer.Ordinal).Select(g => $"{g.Key}:{g.Count()}");
        Assert.Equal(wantMonths, months.GetProperty("Results").EnumerateArray().Select(r => $"{r.GetProperty("Company").GetString()}:{r.GetProperty("Count").GetInt32()}"));
        output.WriteLine($"{language}: {orders.Count} orders, {want.Count} companies checked");
    }

    /// <summary>AdditionalSources: C# classes and JavaScript functions the maps call; a C# source that escapes is refused.</summary>
    [Fact]
    public async Task Additional_sources_are_callable_and_checked()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        await Bulk(http, [new JsonObject { ["Id"] = "users/1", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"First":"ada","Last":"lovelace","@metadata":{"@collection":"Users"}}""") }]);
        async Task<HttpResponseMessage> Put(string name, string map, string source) => await http.PutAsync("/databases/db/admin/indexes", TestServer.Json(new JsonObject
        {
            ["Indexes"] = new JsonArray(new JsonObject { ["Name"] = name, ["Maps"] = new JsonArray(map), ["AdditionalSources"] = new JsonObject { ["Helpers"] = source } }),
        }.ToJsonString()));
        const string csharp = "public static class Names { public static string Title(string s) => string.IsNullOrEmpty(s) ? s : char.ToUpperInvariant(s[0]) + s.Substring(1); }";
        Assert.Equal(HttpStatusCode.Created, (await Put("Users/Cs", "from u in docs.Users select new { Full = Names.Title(u.First) + \" \" + Names.Title(u.Last) }", csharp)).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await Put("Users/Js", "map('Users', u => ({ Full: title(u.First) + ' ' + title(u.Last) }))", "function title(s) { return s.charAt(0).toUpperCase() + s.slice(1); }")).StatusCode);
        foreach (string index in new[] { "Users/Cs", "Users/Js" })
            Assert.Equal(["users/1"], Ids(await Query(http, $"from index '{index}' where Full = 'Ada Lovelace'")));
        var bad = await Put("Users/Bad", "from u in docs.Users select new { X = Evil.Read() }", "public static class Evil { public static string Read() => System.IO.File.ReadAllText(\"/etc/passwd\"); }");
        var json = await TestServer.ReadJson(bad);
        Assert.Equal(HttpStatusCode.BadRequest, bad.StatusCode);
        Assert.Contains("Additional source", json.GetProperty("Message").GetString(), StringComparison.Ordinal);
        Assert.Contains("System.IO.File", json.GetProperty("Message").GetString(), StringComparison.Ordinal);
    }

    /// <summary>
    /// Dynamic group by creates auto map-reduce indexes (also over an array's items) whose results — counts and sums per
    /// group, filtered and ordered by aggregates — equal a brute-force grouping, before and after changes.
    /// </summary>
    [Fact]
    public async Task Dynamic_group_by_queries_match_a_brute_force_grouping()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        var rnd = new Random(2203);
        var orders = Enumerable.Range(1, 250).Select(i => RandomOrder(rnd, $"orders/{i}-A")).ToList();
        await Bulk(http, orders.Select(o => new JsonObject { ["Id"] = o.Id, ["Type"] = "PUT", ["Document"] = ToJson(o) }));
        for (int round = 0; round < 2; round++)
        {
            var byCompany = await Query(http, "from Orders group by Company order by Company select key() as Company, count()");
            Assert.Equal(orders.GroupBy(o => o.Company).OrderBy(g => g.Key.ToLowerInvariant(), StringComparer.Ordinal).Select(g => $"{g.Key}:{g.Count()}"),
                byCompany.GetProperty("Results").EnumerateArray().Select(r => $"{r.GetProperty("Company").GetString()}:{r.GetProperty("Count").GetInt32()}"));

            var byProduct = await Query(http, "from Orders group by Lines[].Product order by Product select key() as Product, sum(Lines[].Quantity) as Quantity, count()");
            Assert.Equal(orders.SelectMany(o => o.Lines).GroupBy(l => l.Product).OrderBy(g => g.Key, StringComparer.Ordinal).Select(g => $"{g.Key}:{g.Sum(l => l.Quantity)}:{g.Count()}"),
                byProduct.GetProperty("Results").EnumerateArray().Select(r => $"{r.GetProperty("Product").GetString()}:{r.GetProperty("Quantity").GetInt32()}:{r.GetProperty("Count").GetInt32()}"));

            var busy = await Query(http, "from Orders group by Company, Employee where count() >= 2 order by count() desc, Company, Employee select Company, Employee, count()");
            var wantBusy = orders.GroupBy(o => (o.Company, o.Employee)).Where(g => g.Count() >= 2)
                .OrderByDescending(g => g.Count()).ThenBy(g => g.Key.Company.ToLowerInvariant(), StringComparer.Ordinal).ThenBy(g => g.Key.Employee.ToLowerInvariant(), StringComparer.Ordinal)
                .Select(g => $"{g.Key.Company}/{g.Key.Employee}:{g.Count()}");
            Assert.Equal(wantBusy, busy.GetProperty("Results").EnumerateArray().Select(r => $"{r.GetProperty("Company").GetString()}/{r.GetProperty("Employee").GetString()}:{r.GetProperty("Count").GetInt32()}"));

            var byCity = await Query(http, "from Orders group by ShipTo.City select ShipTo.City, count()");
            Assert.Equal(orders.GroupBy(o => o.City ?? "(none)").Select(g => $"{g.Key}:{g.Count()}").Order(StringComparer.Ordinal),
                byCity.GetProperty("Results").EnumerateArray().Select(r => $"{(r.GetProperty("City").ValueKind == JsonValueKind.Null ? "(none)" : r.GetProperty("City").GetString())}:{r.GetProperty("Count").GetInt32()}").Order(StringComparer.Ordinal));

            var changed = orders.Where(_ => rnd.Next(4) == 0).Select(o => RandomOrder(rnd, o.Id)).ToList();
            var deleted = orders.Where(_ => rnd.Next(8) == 0).Select(o => o.Id).Except(changed.Select(c => c.Id)).ToHashSet();
            await Bulk(http, changed.Select(o => new JsonObject { ["Id"] = o.Id, ["Type"] = "PUT", ["Document"] = ToJson(o) }));
            await Bulk(http, deleted.Select(id => new JsonObject { ["Id"] = id, ["Type"] = "DELETE" }));
            var byId = changed.ToDictionary(o => o.Id);
            orders = orders.Select(o => byId.GetValueOrDefault(o.Id, o)).Where(o => !deleted.Contains(o.Id)).ToList();
        }
        var names = await TestServer.ReadJson(await http.GetAsync("/databases/db/indexes?namesOnly=true"));
        var list = names.GetProperty("Results").EnumerateArray().Select(n => n.GetString()).ToList();
        Assert.Contains("Auto/Orders/ByCountReducedByCompany", list);
        Assert.Contains("Auto/Orders/ByCountAndLines_QuantityReducedByLines_Product", list);
        var bad = await Query(http, "from Orders group by A[].B, C[].D select count()", expect: HttpStatusCode.BadRequest);
        Assert.Contains("one array", bad.GetProperty("Message").GetString(), StringComparison.Ordinal);
    }

    /// <summary>
    /// Projections: aliases, <c>load x as y</c>, <c>select { ... }</c> object literals and <c>declare function</c> run in
    /// Jint per answered document (with $parameters, id() and load()), over a collection and over a map-reduce index;
    /// a script error is a 400 naming it.
    /// </summary>
    [Fact]
    public async Task JavaScript_projections_with_load_and_declared_functions()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        await Bulk(http,
        [
            new JsonObject { ["Id"] = "companies/1", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"Name":"Alfreds","Country":"Germany","@metadata":{"@collection":"Companies"}}""") },
            new JsonObject { ["Id"] = "orders/1", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"Company":"companies/1","Lines":[{"Q":2,"P":3.5},{"Q":1,"P":10}],"@metadata":{"@collection":"Orders"}}""") },
            new JsonObject { ["Id"] = "orders/2", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"Company":"companies/404","Lines":[],"@metadata":{"@collection":"Orders"}}""") },
        ]);
        var literal = await Query(http, "from Orders as o where o.Company = 'companies/1' load o.Company as c select { Name: c.Name, Lines: o.Lines.length, Total: o.Lines.reduce((s, l) => s + l.Q * l.P, 0) * $factor, Id: id(o) }",
            new JsonObject { ["factor"] = 2 });
        var r = literal.GetProperty("Results")[0];
        Assert.Equal("Alfreds", r.GetProperty("Name").GetString());
        Assert.Equal(2, r.GetProperty("Lines").GetInt32());
        Assert.Equal(34, r.GetProperty("Total").GetDouble());
        Assert.Equal("orders/1", r.GetProperty("Id").GetString());
        Assert.True(r.GetProperty("@metadata").GetProperty("@projection").GetBoolean());
        Assert.Equal("orders/1", r.GetProperty("@metadata").GetProperty("@id").GetString());

        var declared = await Query(http, "declare function output(o, c) { return { Who: c ? c.Name.toUpperCase() : 'unknown', Lines: o.Lines.length }; } from Orders as o load o.Company as c select output(o, c)");
        Assert.Equal(["ALFREDS:2", "unknown:0"], declared.GetProperty("Results").EnumerateArray().Select(x => $"{x.GetProperty("Who").GetString()}:{x.GetProperty("Lines").GetInt32()}").Order(StringComparer.Ordinal));

        var fields = await Query(http, "from Orders as o load o.Company as c select c.Name as CompanyName, c.Country, o.Company");
        Assert.Equal(["companies/1:Alfreds:Germany", "companies/404::"], fields.GetProperty("Results").EnumerateArray()
            .Select(x => $"{x.GetProperty("Company").GetString()}:{(x.GetProperty("CompanyName").ValueKind == JsonValueKind.String ? x.GetProperty("CompanyName").GetString() : "")}:{(x.GetProperty("Country").ValueKind == JsonValueKind.String ? x.GetProperty("Country").GetString() : "")}").Order(StringComparer.Ordinal));

        Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/admin/indexes", TestServer.Json("""
            {"Indexes":[{"Name":"Orders/Totals","Maps":["from o in docs.Orders select new { o.Company, Count = 1 }"],"Reduce":"from r in results group r by r.Company into g select new { Company = g.Key, Count = g.Sum(x => x.Count) }"}]}
            """))).StatusCode);
        var reduced = await Query(http, "from index 'Orders/Totals' as t load t.Company as c select { Company: t.Company, Name: c ? c.Name : null, Count: t.Count }");
        Assert.Equal(["companies/1:Alfreds:1", "companies/404::1"], reduced.GetProperty("Results").EnumerateArray()
            .Select(x => $"{x.GetProperty("Company").GetString()}:{(x.GetProperty("Name").ValueKind == JsonValueKind.String ? x.GetProperty("Name").GetString() : "")}:{x.GetProperty("Count").GetInt32()}").Order(StringComparer.Ordinal));

        var bad = await Query(http, "from Orders as o select { X: o.Company.noSuchFunction() }", expect: HttpStatusCode.BadRequest);
        Assert.Contains("projection failed", bad.GetProperty("Message").GetString(), StringComparison.Ordinal);
        var loop = await Query(http, "from Orders as o select { X: (() => { while (true) {} })() }", expect: HttpStatusCode.BadRequest);
        Assert.Contains("statements", loop.GetProperty("Message").GetString(), StringComparison.Ordinal);
    }

    /// <summary>
    /// A changed definition builds side by side as ReplacementOf/{name} while the current index keeps answering by its
    /// name (no query fails meanwhile), then takes the name; a map-reduce replacement keeps its stored results across
    /// the swap; putting the current definition again drops a pending replacement.
    /// </summary>
    [Fact]
    public async Task A_changed_definition_replaces_the_index_side_by_side()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        var rnd = new Random(2204);
        var orders = Enumerable.Range(1, 3000).Select(i => RandomOrder(rnd, $"orders/{i}-A")).ToList();
        await Bulk(http, orders.Select(o => new JsonObject { ["Id"] = o.Id, ["Type"] = "PUT", ["Document"] = ToJson(o) }));
        const string v1 = "from o in docs.Orders select new { o.Company, Count = 1 }";
        const string reduce = "from r in results group r by r.Company into g select new { Company = g.Key, Count = g.Sum(x => x.Count) }";
        const string v2 = "from o in docs.Orders from l in o.Lines select new { o.Company, Count = l.Quantity }";
        async Task<HttpResponseMessage> Put(string map) => await http.PutAsync("/databases/db/admin/indexes", TestServer.Json(new JsonObject
        {
            ["Indexes"] = new JsonArray(new JsonObject { ["Name"] = "Orders/Counts", ["Maps"] = new JsonArray(map), ["Reduce"] = reduce }),
        }.ToJsonString()));
        Assert.Equal(HttpStatusCode.Created, (await Put(v1)).StatusCode);
        var first = await Query(http, "from index 'Orders/Counts' order by Company");
        Assert.Equal(orders.GroupBy(o => o.Company).OrderBy(g => g.Key.ToLowerInvariant(), StringComparer.Ordinal).Select(g => g.Count()),
            first.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Count").GetInt32()));

        var put = await Put(v2);
        Assert.Equal(HttpStatusCode.Created, put.StatusCode);
        Assert.Equal("Orders/Counts", (await TestServer.ReadJson(put)).GetProperty("Results")[0].GetProperty("Index").GetString());
        // Queries by name answer throughout: from the old index, then from the new one.
        var wantNew = orders.GroupBy(o => o.Company).Where(g => g.Any(o => o.Lines.Count > 0)).OrderBy(g => g.Key.ToLowerInvariant(), StringComparer.Ordinal)
            .Select(g => g.Sum(o => o.Lines.Sum(l => l.Quantity))).ToList();
        bool swapped = false;
        for (var until = DateTime.UtcNow.AddSeconds(60); !swapped && DateTime.UtcNow < until;)
        {
            var r = await http.PostAsync("/databases/db/queries", TestServer.Json("""{"Query":"from index 'Orders/Counts' order by Company"}"""));
            Assert.Equal(HttpStatusCode.OK, r.StatusCode);
            var names = (await TestServer.ReadJson(await http.GetAsync("/databases/db/indexes?namesOnly=true"))).GetProperty("Results").EnumerateArray().Select(n => n.GetString()).ToList();
            swapped = !names.Contains("ReplacementOf/Orders/Counts");
        }
        Assert.True(swapped);
        var second = await Query(http, "from index 'Orders/Counts' order by Company");
        Assert.Equal(wantNew, second.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Count").GetInt32()));
        var definition = await TestServer.ReadJson(await http.GetAsync("/databases/db/indexes?name=Orders/Counts"));
        Assert.Equal(v2, definition.GetProperty("Results")[0].GetProperty("Maps")[0].GetString());

        // After the swap the index goes on incrementally from its stored map results.
        await Bulk(http, [new JsonObject { ["Id"] = "orders/1-A", ["Type"] = "DELETE" }]);
        orders.RemoveAt(0);
        wantNew = orders.GroupBy(o => o.Company).Where(g => g.Any(o => o.Lines.Count > 0)).OrderBy(g => g.Key.ToLowerInvariant(), StringComparer.Ordinal)
            .Select(g => g.Sum(o => o.Lines.Sum(l => l.Quantity))).ToList();
        var third = await Query(http, "from index 'Orders/Counts' order by Company");
        Assert.Equal(wantNew, third.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Count").GetInt32()));

        // A pending replacement is dropped when the definition in use is put again.
        Assert.Equal(HttpStatusCode.NoContent, (await http.PostAsync("/databases/db/admin/indexes/stop", null)).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await Put(v1)).StatusCode);
        Assert.Contains("ReplacementOf/Orders/Counts", (await TestServer.ReadJson(await http.GetAsync("/databases/db/indexes?namesOnly=true"))).GetProperty("Results").EnumerateArray().Select(n => n.GetString()));
        Assert.Equal(HttpStatusCode.Created, (await Put(v2)).StatusCode);
        Assert.DoesNotContain("ReplacementOf/Orders/Counts", (await TestServer.ReadJson(await http.GetAsync("/databases/db/indexes?namesOnly=true"))).GetProperty("Results").EnumerateArray().Select(n => n.GetString()));
    }

    /// <summary>
    /// OutputReduceToCollection: the reduce results are also documents of that collection (artificial, flagged),
    /// updated and deleted with their keys; an output collection the index maps is refused.
    /// </summary>
    [Fact]
    public async Task Reduce_results_are_written_to_the_output_collection()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        var rnd = new Random(2205);
        var orders = Enumerable.Range(1, 200).Select(i => RandomOrder(rnd, $"orders/{i}-A")).ToList();
        await Bulk(http, orders.Select(o => new JsonObject { ["Id"] = o.Id, ["Type"] = "PUT", ["Document"] = ToJson(o) }));
        async Task<HttpResponseMessage> Put(string output) => await http.PutAsync("/databases/db/admin/indexes", TestServer.Json(new JsonObject
        {
            ["Indexes"] = new JsonArray(new JsonObject
            {
                ["Name"] = "Orders/PerCompany",
                ["Maps"] = new JsonArray("from o in docs.Orders select new { o.Company, Count = 1 }"),
                ["Reduce"] = "from r in results group r by r.Company into g select new { Company = g.Key, Count = g.Sum(x => x.Count) }",
                ["OutputReduceToCollection"] = output,
            }),
        }.ToJsonString()));
        var refused = await Put("Orders");
        Assert.Equal(HttpStatusCode.BadRequest, refused.StatusCode);
        Assert.Contains("OutputReduceToCollection", await refused.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.Created, (await Put("CompanyTotals")).StatusCode);
        async Task Check()
        {
            await Query(http, "from index 'Orders/PerCompany'"); // waits for the index (and so for its output documents)
            var docs = await Query(http, "from CompanyTotals order by Company");
            Assert.Equal(orders.GroupBy(o => o.Company).OrderBy(g => g.Key.ToLowerInvariant(), StringComparer.Ordinal).Select(g => $"{g.Key}:{g.Count()}"),
                docs.GetProperty("Results").EnumerateArray().Select(d => $"{d.GetProperty("Company").GetString()}:{d.GetProperty("Count").GetInt32()}"));
            Assert.All(docs.GetProperty("Results").EnumerateArray(), d => Assert.Equal("Artificial, FromIndex", d.GetProperty("@metadata").GetProperty("@flags").GetString()));
        }
        await Check();
        string gone = orders[0].Company;
        var doomed = orders.Where(o => o.Company == gone).Select(o => o.Id).ToList();
        await Bulk(http, doomed.Select(id => new JsonObject { ["Id"] = id, ["Type"] = "DELETE" }));
        orders.RemoveAll(o => o.Company == gone);
        orders[1] = RandomOrder(rnd, orders[1].Id);
        await Bulk(http, [new JsonObject { ["Id"] = orders[1].Id, ["Type"] = "PUT", ["Document"] = ToJson(orders[1]) }]);
        await Check();
    }

    /// <summary>Recurse walks a tree of nested objects: the item and everything reached from it.</summary>
    [Fact]
    public async Task Recurse_indexes_every_level_of_a_tree()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        await Bulk(http, [new JsonObject { ["Id"] = "trees/1", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""
            {"Name":"root","Children":[{"Name":"a","Children":[{"Name":"a1"},{"Name":"a2","Children":[{"Name":"deep"}]}]},{"Name":"b"}],"@metadata":{"@collection":"Trees"}}
            """) }]);
        var r = await PutIndex(http, "Trees/Names", ["from t in docs.Trees select new { Names = Recurse(t, x => x.Children).Select(x => x.Name), Count = Recurse(t, x => x.Children).Count() }"]);
        Assert.True(r.StatusCode == HttpStatusCode.Created, await r.Content.ReadAsStringAsync());
        foreach (string name in new[] { "root", "a", "a1", "a2", "deep", "b" })
            Assert.Equal(["trees/1"], Ids(await Query(http, "from index 'Trees/Names' where Names = $n and Count = 6", new JsonObject { ["n"] = name })));
        Assert.Empty(Ids(await Query(http, "from index 'Trees/Names' where Names = 'c'")));
    }

    /// <summary>ProjectionBehavior: selected fields come from the document by default, from the index for stored fields and FromIndex, and the OrThrow variants are 400s when the field is missing there.</summary>
    [Fact]
    public async Task Projection_behavior_chooses_index_or_document_values()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        await Bulk(http, [new JsonObject { ["Id"] = "users/1", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("""{"Name":"ada","Age":36,"@metadata":{"@collection":"Users"}}""") }]);
        const string map = "from u in docs.Users select new { Name = u.Name.ToUpper(), u.Age }";
        Assert.Equal(HttpStatusCode.Created, (await PutIndex(http, "Users/Plain", [map])).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await PutIndex(http, "Users/Stored", [map], """{"Name":{"Storage":"Yes"}}""")).StatusCode);
        async Task<JsonElement> Ask(string index, string select, string behavior, HttpStatusCode expect = HttpStatusCode.OK)
        {
            var body = new JsonObject { ["Query"] = $"from index '{index}' select {select}", ["WaitForNonStaleResults"] = true, ["ProjectionBehavior"] = behavior };
            var r = await http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
            var json = await TestServer.ReadJson(r);
            Assert.True(expect == r.StatusCode, $"{index} {select} {behavior}: {json}");
            return json;
        }
        string NameOf(JsonElement json) => json.GetProperty("Results")[0].GetProperty("Name").GetString()!;
        Assert.Equal("ada", NameOf(await Ask("Users/Plain", "Name", "Default")));
        Assert.Equal("ADA", NameOf(await Ask("Users/Plain", "Name", "FromIndex")));
        Assert.Equal("ADA", NameOf(await Ask("Users/Stored", "Name", "Default")));
        Assert.Equal("ada", NameOf(await Ask("Users/Stored", "Name", "FromDocument")));
        Assert.Contains("not a field of the index", (await Ask("Users/Plain", "Other", "FromIndexOrThrow", HttpStatusCode.BadRequest)).GetProperty("Message").GetString(), StringComparison.Ordinal);
        Assert.Contains("has no 'Nope'", (await Ask("Users/Plain", "Nope", "FromDocumentOrThrow", HttpStatusCode.BadRequest)).GetProperty("Message").GetString(), StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.BadRequest, (await http.PostAsync("/databases/db/queries", TestServer.Json("""{"Query":"from Users","ProjectionBehavior":"Sideways"}"""))).StatusCode);
    }

    public static TheoryData<string, string> DynamicFieldMaps => new()
    {
        { "C#", "from p in docs.Products select new { p.Name, _ = p.Attributes.Select(a => CreateField(a.Key, a.Value)), _s = CreateField(\"Blurb\", p.Blurb, new CreateFieldOptions { Indexing = FieldIndexing.Search, Storage = FieldStorage.Yes }) }" },
        { "JavaScript", "map('Products', p => ({ Name: p.Name, _: p.Attributes.map(a => createField(a.Key, a.Value)), _s: createField('Blurb', p.Blurb, { indexing: 'Search', storage: true }) }))" },
    };

    /// <summary>
    /// CreateField: fields named by the documents (attributes) are queryable by equality, range and order like
    /// static ones, match a brute-force evaluation after updates and deletes, a field no document created yet
    /// matches nothing (not a 400), Search and Storage options apply, and the fields keep their identity across a
    /// restart (a field first seen after the restart does not take a committed field's place).
    /// </summary>
    [Theory]
    [MemberData(nameof(DynamicFieldMaps))]
    public async Task CreateField_indexes_fields_named_at_run_time(string language, string map)
    {
        using var dir = new TempDirectory("dynamic-fields");
        var rnd = new Random(7);
        string[] keys = ["Color", "Size", "Weight", "Origin"];
        string[] values = ["red", "blue", "green"];
        var products = new Dictionary<string, Dictionary<string, JsonNode>>();
        JsonObject Put(string id, Dictionary<string, JsonNode> attributes) => new()
        {
            ["Id"] = id, ["Type"] = "PUT",
            ["Document"] = new JsonObject
            {
                ["Name"] = id,
                ["Blurb"] = $"a fine {id.Replace("products/", "item", StringComparison.Ordinal)} for everyday use",
                ["Attributes"] = new JsonArray(attributes.Select(kv => (JsonNode?)new JsonObject { ["Key"] = kv.Key, ["Value"] = kv.Value.DeepClone() }).ToArray()),
                ["@metadata"] = new JsonObject { ["@collection"] = "Products" },
            },
        };
        // Before the restart only Color and Size exist, so Weight and Origin are created after it.
        Dictionary<string, JsonNode> RandomAttributes(int kinds) => keys.Take(kinds).Where(_ => rnd.Next(3) > 0)
            .ToDictionary(k => k, k => k == "Size" ? (JsonNode)rnd.Next(1, 50) : values[rnd.Next(values.Length)]);
        for (int i = 1; i <= 60; i++)
            products[$"products/{i}"] = RandomAttributes(2);
        async Task Check(HttpClient http, string stage)
        {
            foreach (string key in keys)
                foreach (string value in values)
                {
                    var expected = products.Where(p => p.Value.TryGetValue(key, out var v) && v.GetValueKind() == JsonValueKind.String && v.GetValue<string>() == value).Select(p => p.Key).Order().ToList();
                    var actual = Ids(await Query(http, $"from index 'Products/Attributes' where {key} = $v", new JsonObject { ["v"] = value })).Order().ToList();
                    Assert.True(expected.SequenceEqual(actual), $"{language} {stage}: {key} = {value}: expected {string.Join(",", expected)}, got {string.Join(",", actual)}");
                }
            var sized = products.Where(p => p.Value.TryGetValue("Size", out var v) && v.GetValue<int>() >= 25).OrderBy(p => p.Value["Size"].GetValue<int>()).Select(p => p.Value["Size"].GetValue<int>()).ToList();
            var result = await Query(http, "from index 'Products/Attributes' where Size >= 25 order by Size as long select Size");
            Assert.Equal(sized, result.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Size").GetInt32()).ToList());
        }
        await using (var server = await TestServer.StartWithDatabaseAsync(dataDir: dir.Path))
        {
            var http = server.Http;
            await Bulk(http, products.Select(p => Put(p.Key, p.Value)));
            var r = await PutIndex(http, "Products/Attributes", [map]);
            Assert.True(r.StatusCode == HttpStatusCode.Created, await r.Content.ReadAsStringAsync());
            await Check(http, "built");
            Assert.Empty(Ids(await Query(http, "from index 'Products/Attributes' where Weight = 'red'")));
            Assert.Equal(["products/7"], Ids(await Query(http, "from index 'Products/Attributes' where search(Blurb, 'ITEM7')")));
            var stored = await Query(http, "from index 'Products/Attributes' where Name = 'products/3' select Blurb");
            Assert.Equal("a fine item3 for everyday use", stored.GetProperty("Results")[0].GetProperty("Blurb").GetString());
        }
        await using (var server = await TestServer.StartAsync(dir.Path))
        {
            var http = server.Http;
            var changes = new List<JsonObject>();
            foreach (string id in products.Keys.Where(_ => rnd.Next(3) == 0).ToList())
            {
                products[id] = RandomAttributes(4);
                changes.Add(Put(id, products[id]));
            }
            foreach (string id in products.Keys.Where(_ => rnd.Next(6) == 0).ToList())
            {
                products.Remove(id);
                changes.Add(new JsonObject { ["Id"] = id, ["Type"] = "DELETE" });
            }
            await Bulk(http, changes);
            await Check(http, "after changes and a restart");
        }
    }

    /// <summary>
    /// PatternForOutputReduceToCollectionReferences: each reference document lists exactly the output documents whose
    /// fields give its id (a date field formatted), after changes and deletes that move outputs between references or
    /// remove them; a bad pattern is a 400; a reset writes the same outputs again and deleting the index deletes its
    /// output and reference documents.
    /// </summary>
    [Fact]
    public async Task Output_reference_documents_list_the_outputs_of_their_pattern()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var http = server.Http;
        var rnd = new Random(2206);
        var orders = Enumerable.Range(1, 150).Select(i => RandomOrder(rnd, $"orders/{i}-A")).ToList();
        await Bulk(http, orders.Select(o => new JsonObject { ["Id"] = o.Id, ["Type"] = "PUT", ["Document"] = ToJson(o) }));
        async Task<HttpResponseMessage> Put(string pattern) => await http.PutAsync("/databases/db/admin/indexes", TestServer.Json(new JsonObject
        {
            ["Indexes"] = new JsonArray(new JsonObject
            {
                ["Name"] = "Orders/DailyByCompany",
                ["Maps"] = new JsonArray("from o in docs.Orders select new { o.Company, Day = o.OrderedAt, Count = 1 }"),
                ["Reduce"] = "from r in results group r by new { r.Company, r.Day } into g select new { g.Key.Company, g.Key.Day, Count = g.Sum(x => x.Count) }",
                ["OutputReduceToCollection"] = "DailyCounts",
                ["PatternForOutputReduceToCollectionReferences"] = pattern,
                ["PatternReferencesCollectionName"] = "MonthlyReferences",
            }),
        }.ToJsonString()));
        var refused = await Put("monthly/{Nope:yyyy-MM}");
        Assert.Equal(HttpStatusCode.BadRequest, refused.StatusCode);
        Assert.Contains("'Nope' is not a field", await refused.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.Created, (await Put("monthly/{Day:yyyy-MM}")).StatusCode);
        async Task Check(string stage)
        {
            await Query(http, "from index 'Orders/DailyByCompany'");
            var outputs = (await Query(http, "from DailyCounts")).GetProperty("Results").EnumerateArray()
                .Select(d => (Id: d.GetProperty("@metadata").GetProperty("@id").GetString()!, Day: d.GetProperty("Day").GetString()!, Company: d.GetProperty("Company").GetString(), Count: d.GetProperty("Count").GetInt32())).ToList();
            Assert.Equal(orders.GroupBy(o => (o.Company, o.OrderedAt)).Select(g => $"{g.Key.Company}@{g.Key.OrderedAt}:{g.Count()}").Order(),
                outputs.Select(o => $"{o.Company}@{o.Day}:{o.Count}").Order());
            var expected = outputs.GroupBy(o => "monthly/" + o.Day[..7]).ToDictionary(g => g.Key.ToLowerInvariant(), g => g.Select(o => o.Id.ToLowerInvariant()).Order().ToList());
            var references = (await Query(http, "from MonthlyReferences")).GetProperty("Results").EnumerateArray()
                .ToDictionary(d => d.GetProperty("@metadata").GetProperty("@id").GetString()!.ToLowerInvariant(),
                    d => d.GetProperty("ReduceOutputs").EnumerateArray().Select(x => x.GetString()!.ToLowerInvariant()).Order().ToList());
            Assert.True(expected.Keys.Order().SequenceEqual(references.Keys.Order()), $"{stage}: references {string.Join(",", references.Keys)}; expected {string.Join(",", expected.Keys)}");
            foreach (var (id, list) in expected)
                Assert.True(list.SequenceEqual(references[id]), $"{stage}: {id} lists {string.Join(",", references[id])}; expected {string.Join(",", list)}");
        }
        await Check("built");
        // Move orders to other days (and months), delete a month's worth, and check again.
        string month = orders[0].OrderedAt[..7];
        var doomed = orders.Where(o => o.OrderedAt.StartsWith(month, StringComparison.Ordinal)).Select(o => o.Id).ToList();
        orders.RemoveAll(o => doomed.Contains(o.Id));
        var changes = doomed.Select(id => new JsonObject { ["Id"] = id, ["Type"] = "DELETE" }).ToList();
        for (int i = 0; i < 30; i++)
        {
            int k = rnd.Next(orders.Count);
            orders[k] = RandomOrder(rnd, orders[k].Id);
            changes.Add(new JsonObject { ["Id"] = orders[k].Id, ["Type"] = "PUT", ["Document"] = ToJson(orders[k]) });
        }
        await Bulk(http, changes);
        await Check("after changes");
        Assert.Equal(HttpStatusCode.NoContent, (await http.PostAsync("/databases/db/indexes/reset?name=Orders%2FDailyByCompany", null)).StatusCode);
        await Check("after a reset");
        Assert.Equal(HttpStatusCode.NoContent, (await http.DeleteAsync("/databases/db/indexes?name=Orders%2FDailyByCompany")).StatusCode);
        Assert.Empty((await Query(http, "from DailyCounts")).GetProperty("Results").EnumerateArray());
        Assert.Empty((await Query(http, "from MonthlyReferences")).GetProperty("Results").EnumerateArray());
    }
}
