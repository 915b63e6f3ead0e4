using System.Globalization;

namespace RavenLite.Server.Tests.Queries;

/// <summary>
/// Facets: field, range and all-results facets with aggregations over a static index, an auto
/// index and a collection filtered by a where clause — counted from the index's terms and doc values when the
/// matches are exact, row by row otherwise — each checked against the same figures computed here from the
/// documents (before and after random updates and deletes); bad facets are 400s naming the problem.
/// </summary>
public sealed class FacetTests(ITestOutputHelper output)
{
    private sealed record Item(string Id, string Color, double Price, int Stock, string[] Tags);

    private static readonly string[] Colors = ["Red", "red", "Blue", "Green", "Black"];

    private static Item RandomItem(Random rnd, int i) =>
        new($"items/{i}", Colors[rnd.Next(Colors.Length)], Math.Round(rnd.NextDouble() * 300, 2), rnd.Next(0, 50),
            Enumerable.Range(0, rnd.Next(0, 3)).Select(_ => "t" + rnd.Next(4)).Distinct().ToArray());

    private static async Task Put(TestServer server, IEnumerable<Item> items, IEnumerable<string>? deletes = null)
    {
        var commands = new JsonArray();
        foreach (var it in items)
        {
            commands.Add(new JsonObject
            {
                ["Id"] = it.Id, ["Type"] = "PUT",
                ["Document"] = new JsonObject
                {
                    ["Color"] = it.Color, ["Price"] = it.Price, ["Stock"] = it.Stock, ["Tags"] = new JsonArray(it.Tags.Select(t => (JsonNode)t).ToArray()),
                    ["@metadata"] = new JsonObject { ["@collection"] = "Items" },
                },
            });
        }
        foreach (var id in deletes ?? [])
            commands.Add(new JsonObject { ["Id"] = id, ["Type"] = "DELETE" });
        var r = await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()));
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
    }

    private static async Task<JsonElement> Query(TestServer server, string rql, JsonObject? parameters = null, HttpStatusCode expect = HttpStatusCode.OK)
    {
        var body = new JsonObject { ["Query"] = rql, ["QueryParameters"] = parameters ?? new JsonObject(), ["WaitForNonStaleResults"] = true, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
        var r = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(expect == r.StatusCode, $"{rql} → {(int)r.StatusCode}: {json}");
        return json;
    }

    private static JsonElement Facet(JsonElement answer, string name) =>
        answer.GetProperty("Results").EnumerateArray().Single(f => f.GetProperty("Name").GetString() == name);

    /// <summary>Checks every facet of the query against the items (those matching <paramref name="where"/>).</summary>
    private static async Task CheckAll(TestServer server, string from, List<Item> items, string whereClause, Func<Item, bool> where)
    {
        var kept = items.Where(where).ToList();
        var answer = await Query(server, $"{from} {whereClause} select facet(Color, sum(Stock), max(Price) as Top), facet(Price < 100, Price >= 100 and Price < 200, Price between 200 and 300, avg(Stock)), facet(Tags), facet(min(Price), max(Price))");
        Assert.Equal(kept.Count, answer.GetProperty("TotalResults").GetInt64());

        // Field facet: lower-cased values in ordinal order, one value per aggregated field.
        var color = Facet(answer, "Color").GetProperty("Values").EnumerateArray().ToList();
        var expected = kept.GroupBy(i => i.Color.ToLowerInvariant()).OrderBy(g => g.Key, StringComparer.Ordinal).ToList();
        Assert.Equal(expected.Select(g => g.Key), color.Where(v => v.GetProperty("Name").GetString() == "Stock").Select(v => v.GetProperty("Range").GetString()));
        foreach (var g in expected)
        {
            var stock = color.Single(v => v.GetProperty("Range").GetString() == g.Key && v.GetProperty("Name").GetString() == "Stock");
            Assert.Equal(g.Count(), stock.GetProperty("Count").GetInt32());
            Assert.Equal(g.Sum(i => i.Stock), stock.GetProperty("Sum").GetDouble());
            Assert.Equal(JsonValueKind.Null, stock.GetProperty("Max").ValueKind);
            var top = color.Single(v => v.GetProperty("Range").GetString() == g.Key && v.GetProperty("Name").GetString() == "Top");
            Assert.Equal(g.Max(i => i.Price), top.GetProperty("Max").GetDouble());
        }

        // Range facet: every range listed in order, empty ones too.
        var ranges = Facet(answer, "Price").GetProperty("Values").EnumerateArray().ToList();
        Func<Item, bool>[] inRange = [i => i.Price < 100, i => i.Price >= 100 && i.Price < 200, i => i.Price >= 200 && i.Price <= 300];
        Assert.Equal(["Price < 100", "Price >= 100 and Price < 200", "Price between 200 and 300"], ranges.Select(v => v.GetProperty("Range").GetString()));
        for (int r = 0; r < 3; r++)
        {
            var these = kept.Where(inRange[r]).ToList();
            Assert.Equal(these.Count, ranges[r].GetProperty("Count").GetInt32());
            if (these.Count > 0)
                Assert.Equal(these.Average(i => i.Stock), ranges[r].GetProperty("Average").GetDouble(), 9);
        }

        // An array field: a match counts once under each of its values.
        var tags = Facet(answer, "Tags").GetProperty("Values").EnumerateArray().ToDictionary(v => v.GetProperty("Range").GetString()!, v => v.GetProperty("Count").GetInt32());
        var expectedTags = kept.SelectMany(i => i.Tags.Distinct()).GroupBy(t => t).ToDictionary(g => g.Key, g => g.Count());
        Assert.Equal(expectedTags.OrderBy(kv => kv.Key), tags.OrderBy(kv => kv.Key));

        var all = Facet(answer, "@AllResults").GetProperty("Values").EnumerateArray().Single();
        Assert.Equal(kept.Count, all.GetProperty("Count").GetInt32());
        if (kept.Count > 0)
        {
            Assert.Equal(kept.Min(i => i.Price), all.GetProperty("Min").GetDouble());
            Assert.Equal(kept.Max(i => i.Price), all.GetProperty("Max").GetDouble());
        }
    }

    [Fact]
    public async Task Facets_equal_the_figures_computed_from_the_documents_before_and_after_changes()
    {
        int seed = int.TryParse(Environment.GetEnvironmentVariable("RAVENLITE_TEST_SEED"), CultureInfo.InvariantCulture, out int s) ? s : Random.Shared.Next();
        output.WriteLine($"seed {seed} (RAVENLITE_TEST_SEED)");
        var rnd = new Random(seed);
        await using var server = await TestServer.StartWithDatabaseAsync();
        var items = Enumerable.Range(0, 400).Select(i => RandomItem(rnd, i)).ToList();
        await Put(server, items);
        var index = """{"Indexes":[{"Name":"Items/ForFacets","Maps":["from i in docs.Items select new { i.Color, i.Price, i.Stock, i.Tags }"]}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        for (int round = 0; round < 2; round++)
        {
            await CheckAll(server, "from index 'Items/ForFacets'", items, "", _ => true);
            await CheckAll(server, "from index 'Items/ForFacets'", items, "where Stock >= 20", i => i.Stock >= 20);
            await CheckAll(server, "from Items", items, "where Color = 'red'", i => i.Color.Equals("red", StringComparison.OrdinalIgnoreCase));
            // Strict comparisons are not exact candidates: these facets are counted row by row, the others from the index.
            await CheckAll(server, "from index 'Items/ForFacets'", items, "where Stock > 20", i => i.Stock > 20);
            // Random updates and deletes, then the same checks.
            var changed = Enumerable.Range(0, 60).Select(_ => rnd.Next(items.Count)).Distinct().ToList();
            foreach (int i in changed)
                items[i] = RandomItem(rnd, i);
            var deleted = Enumerable.Range(0, 20).Select(_ => items[rnd.Next(items.Count)].Id).Distinct().ToList();
            await Put(server, changed.Select(i => items[i]), deleted);
            items.RemoveAll(i => deleted.Contains(i.Id));
        }
    }

    [Fact]
    public async Task Facet_options_order_page_and_list_the_remaining_terms()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var items = new List<Item>();
        string[] colors = ["a", "b", "b", "c", "c", "c", "d", "d", "d", "d"];
        for (int i = 0; i < colors.Length; i++)
            items.Add(new Item($"items/{i}", colors[i], i, i, []));
        await Put(server, items);
        var options = new JsonObject { ["o"] = new JsonObject { ["TermSortMode"] = "CountDesc", ["Start"] = 1, ["PageSize"] = 2, ["IncludeRemainingTerms"] = true } };
        var f = Facet(await Query(server, "from Items select facet(Color, $o)", options), "Color");
        Assert.Equal(["c", "b"], f.GetProperty("Values").EnumerateArray().Select(v => v.GetProperty("Range").GetString()));
        Assert.Equal(["a"], f.GetProperty("RemainingTerms").EnumerateArray().Select(v => v.GetString()));
        Assert.Equal(1, f.GetProperty("RemainingTermsCount").GetInt32());
        Assert.Equal(1, f.GetProperty("RemainingHits").GetInt32());
        var desc = Facet(await Query(server, "from Items select facet(Color, $o) as ByColor", new JsonObject { ["o"] = new JsonObject { ["TermSortMode"] = "ValueDesc" } }), "ByColor");
        Assert.Equal(["d", "c", "b", "a"], desc.GetProperty("Values").EnumerateArray().Select(v => v.GetProperty("Range").GetString()));
    }

    [Theory]
    [InlineData("from index 'Items/ForFacets' select facet(Weight)", "Weight")] // a field the index does not have
    [InlineData("from Items select facet(Price < 10, Stock > 5)", "one field")]
    [InlineData("from Items select facet(Price = 10)", "facet range")]
    [InlineData("from Items select facet(Color, median(Price))", "median")]
    [InlineData("from Items select facet(id('facets/missing'))", "facets/missing")]
    [InlineData("from Items select facet(Color, $bad)", "TermSortMode")]
    [InlineData("from Items select facet(Color), Price", "facet")]
    [InlineData("from Items select facet(Color), facet(Color)", "Color")]
    public async Task Bad_facets_are_400_naming_the_problem(string rql, string named)
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await Put(server, [new Item("items/1", "Red", 10, 1, [])]);
        var index = """{"Indexes":[{"Name":"Items/ForFacets","Maps":["from i in docs.Items select new { i.Color, i.Price }"]}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        var answer = await Query(server, rql, new JsonObject { ["bad"] = new JsonObject { ["TermSortMode"] = "Sideways" } }, HttpStatusCode.BadRequest);
        Assert.Contains(named, answer.GetProperty("Message").GetString(), StringComparison.Ordinal);
        Assert.Equal("Raven.Client.Exceptions.InvalidQueryException", answer.GetProperty("Type").GetString());
    }

    [Fact]
    public async Task A_facet_setup_document_gives_its_facets_and_ranges()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await Put(server, Enumerable.Range(0, 10).Select(i => new Item($"items/{i}", i % 3 == 0 ? "Red" : "Blue", i * 10, i, [])));
        var setup = """{"Facets":[{"FieldName":"Color","Aggregations":{"Sum":[{"Name":"Stock"}]}}],"RangeFacets":[{"Ranges":["Price < 50","Price >= 50"],"DisplayFieldName":"Cost"}],"@metadata":{"@collection":"FacetSetups"}}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/docs?id=facets/items", TestServer.Json(setup))).StatusCode);
        var answer = await Query(server, "from Items select facet(id('facets/items'))");
        var color = Facet(answer, "Color").GetProperty("Values").EnumerateArray().ToList();
        Assert.Equal([("blue", 6, 1 + 2 + 4 + 5 + 7 + 8), ("red", 4, 0 + 3 + 6 + 9)],
            color.Select(v => (v.GetProperty("Range").GetString(), v.GetProperty("Count").GetInt32(), (int)v.GetProperty("Sum").GetDouble())).ToList());
        var cost = Facet(answer, "Cost").GetProperty("Values").EnumerateArray().ToList();
        Assert.Equal([("Price < 50", 5), ("Price >= 50", 5)], cost.Select(v => (v.GetProperty("Range").GetString(), v.GetProperty("Count").GetInt32())).ToList());
        var broken = """{"RangeFacets":[{"Ranges":["Price <"]}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/docs?id=facets/broken", TestServer.Json(broken))).StatusCode);
        var bad = await Query(server, "from Items select facet(id('facets/broken'))", expect: HttpStatusCode.BadRequest);
        Assert.Contains("facets/broken", bad.GetProperty("Message").GetString(), StringComparison.Ordinal);
    }

    /// <summary>
    /// Range facets on a field some entries hold several numbers of (counted from the number terms, each match
    /// once per range) and on one every entry holds one number of (counted from the sort doc values) agree
    /// with the documents.
    /// </summary>
    [Fact]
    public async Task Range_facets_over_single_and_multi_valued_numbers_count_each_match_once_per_range()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var rnd = new Random(99);
        var docs = Enumerable.Range(0, 300).Select(i => (Id: $"boxes/{i}", One: rnd.Next(0, 100), Many: Enumerable.Range(0, rnd.Next(0, 4)).Select(_ => rnd.Next(0, 100)).ToArray())).ToList();
        var commands = new JsonArray();
        foreach (var d in docs)
            commands.Add(new JsonObject { ["Id"] = d.Id, ["Type"] = "PUT", ["Document"] = new JsonObject { ["One"] = d.One, ["Many"] = new JsonArray(d.Many.Select(m => (JsonNode)m).ToArray()), ["@metadata"] = new JsonObject { ["@collection"] = "Boxes" } } });
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        var index = """{"Indexes":[{"Name":"Boxes/Numbers","Maps":["from b in docs.Boxes select new { b.One, b.Many }"]}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        foreach (string where in new[] { "", "where One >= 50" })
        {
            var kept = docs.Where(d => where == "" || d.One >= 50).ToList();
            var answer = await Query(server, $"from index 'Boxes/Numbers' {where} select facet(Many < 30, Many between 20 and 60, Many > 60) as Many, facet(One < 30, One between 20 and 60, One > 60) as One");
            Func<int, bool>[] ranges = [x => x < 30, x => x >= 20 && x <= 60, x => x > 60];
            Assert.Equal(ranges.Select(r => kept.Count(d => d.Many.Any(r))), Facet(answer, "Many").GetProperty("Values").EnumerateArray().Select(v => v.GetProperty("Count").GetInt32()));
            Assert.Equal(ranges.Select(r => kept.Count(d => r(d.One))), Facet(answer, "One").GetProperty("Values").EnumerateArray().Select(v => v.GetProperty("Count").GetInt32()));
        }
    }
}
