namespace RavenLite.Server.Tests.Queries;

/// <summary>
/// The shape of query answers where RavenDB's clients read it: projections keep nested arrays, includes through an
/// alias, key() named after its field, group by keywords, a streamed range query's real total, explanations keyed by a
/// group key, and facets (aggregating a field the index lacks, values without aggregations, include).
/// </summary>
public sealed class QueryAnswerShapeTests
{
    private static async Task<TestServer> StartAsync()
    {
        var server = await TestServer.StartWithDatabaseAsync();
        string[] docs =
        [
            """{"Id":"orders/1","Lines":[{"Product":"p1","Qty":2},{"Product":"p2","Qty":1}],"group":"g1","Tags":[["a",{}],["b"]],"Roles":[{"Role":"users/1"}],"Age":5,"Maker":"users/2","@metadata":{"@collection":"Orders"}}""",
            """{"Id":"orders/2","group":"g1","Age":7,"Lines":[{"Product":"p1","Qty":4}],"Maker":"users/1","@metadata":{"@collection":"Orders"}}""",
            """{"Id":"orders/3","group":"g2","Age":9,"Lines":[],"@metadata":{"@collection":"Orders"}}""",
            """{"Id":"users/1","Name":"u1","@metadata":{"@collection":"Users"}}""",
            """{"Id":"users/2","Name":"u2","@metadata":{"@collection":"Users"}}""",
        ];
        var commands = new JsonArray();
        foreach (string d in docs)
        {
            var node = JsonNode.Parse(d)!.AsObject();
            string id = (string)node["Id"]!;
            node.Remove("Id");
            commands.Add(new JsonObject { ["Id"] = id, ["Type"] = "PUT", ["Document"] = node });
        }
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        return server;
    }

    private static async Task<JsonElement> Query(TestServer server, string rql, JsonObject? parameters = null, HttpStatusCode expect = HttpStatusCode.OK)
    {
        var body = new JsonObject { ["Query"] = rql, ["QueryParameters"] = parameters ?? [], ["WaitForNonStaleResults"] = true, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
        var r = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(expect == r.StatusCode, $"{rql} → {(int)r.StatusCode}: {json}");
        return json;
    }

    [Fact]
    public async Task Projections_keep_nested_arrays_and_includes_follow_an_alias()
    {
        await using var server = await StartAsync();
        var projected = (await Query(server, "from Orders where Age < 6 select Tags, Lines.Qty as Q, Lines[].Product as P")).GetProperty("Results")[0];
        Assert.Equal("""[["a",{}],["b"]]""", projected.GetProperty("Tags").GetRawText());
        Assert.Equal("[2,1]", projected.GetProperty("Q").GetRawText());
        Assert.Equal("""["p1","p2"]""", projected.GetProperty("P").GetRawText());
        var included = await Query(server, "from Orders as u where Age < 6 include 'u.Roles[].Role', u.Maker");
        var includes = included.GetProperty("Includes");
        Assert.Equal("u1", includes.GetProperty("users/1").GetProperty("Name").GetString());
        Assert.Equal("u2", includes.GetProperty("users/2").GetProperty("Name").GetString());
    }

    [Fact]
    public async Task Group_by_answers_key_under_the_field_name_and_takes_keyword_fields()
    {
        await using var server = await StartAsync();
        var byGroup = (await Query(server, "from Orders group by group order by group select key(), count()")).GetProperty("Results").EnumerateArray().ToList();
        Assert.Equal(["g1", "g2"], byGroup.Select(g => g.GetProperty("group").GetString()));
        Assert.Equal([2, 1], byGroup.Select(g => g.GetProperty("Count").GetInt32()));
        var byProduct = (await Query(server, "from Orders group by Lines[].Product order by Product select key(), sum(Lines[].Qty)")).GetProperty("Results").EnumerateArray().ToList();
        Assert.Equal(["p1", "p2"], byProduct.Select(g => g.GetProperty("Product").GetString()));
        Assert.Equal([6, 1], byProduct.Select(g => g.GetProperty("Qty").GetInt32()));
        var aliased = (await Query(server, "from Orders group by group select key() as G")).GetProperty("Results")[0];
        Assert.True(aliased.TryGetProperty("G", out _));
        // group by array(): the whole list of values is the key.
        var byList = (await Query(server, "from Orders group by array(Lines[].Product) select key() as Products, count()")).GetProperty("Results").EnumerateArray()
            .ToDictionary(g => g.GetProperty("Products").GetRawText(), g => g.GetProperty("Count").GetInt32());
        Assert.Equal(new Dictionary<string, int> { ["""["p1","p2"]"""] = 1, ["""["p1"]"""] = 1, ["[]"] = 1 }, byList);
    }

    [Fact]
    public async Task A_streamed_range_query_reports_its_real_total()
    {
        await using var server = await StartAsync();
        await Query(server, "from Orders where Age > 5"); // creates the auto index and waits for it
        foreach (var (condition, total) in new[] { ("Age > 5", 2), ("Age < 9", 2), ("Age >= 5", 3), ("Age > 9", 0), ("Age between 6 and 9", 2) })
        {
            var r = await server.Http.GetAsync("/databases/db/streams/queries?query=" + Uri.EscapeDataString("from Orders where " + condition));
            var json = await TestServer.ReadJson(r);
            Assert.Equal(total, json.GetProperty("TotalResults").GetInt32());
            Assert.Equal(total, json.GetProperty("Results").GetArrayLength());
        }
    }

    [Fact]
    public async Task Explanations_of_a_map_reduce_query_are_keyed_by_the_group_key()
    {
        await using var server = await StartAsync();
        var index = """{"Indexes":[{"Name":"Orders/ByGroup","Maps":["from o in docs.Orders select new { Group = o.@group, Count = 1 }"],"Reduce":"from r in results group r by r.Group into g select new { Group = g.Key, Count = g.Sum(x => x.Count) }","Fields":{"Group":{"Indexing":"Search"}}}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        var answer = await Query(server, "from index 'Orders/ByGroup' where search(Group, 'g1 g2') include explanations($o)", new JsonObject { ["o"] = new JsonObject { ["GroupKey"] = "Group" } });
        var explanations = answer.GetProperty("Explanations");
        Assert.Equal(["g1", "g2"], explanations.EnumerateObject().Select(p => p.Name).Order(StringComparer.Ordinal));
        Assert.All(explanations.EnumerateObject(), p => Assert.Contains("weight", p.Value[0].GetString()!, StringComparison.Ordinal));
        await Query(server, "from index 'Orders/ByGroup' where search(Group, 'g1') include explanations($o)", new JsonObject { ["o"] = new JsonObject { ["Nope"] = 1 } }, HttpStatusCode.BadRequest);
    }

    [Fact]
    public async Task Facets_aggregate_unindexed_fields_as_zero_name_plain_values_null_and_include()
    {
        await using var server = await StartAsync();
        var index = """{"Indexes":[{"Name":"Orders/ForFacets","Maps":["from o in docs.Orders select new { Group = o.@group, o.Age, o.Maker }"]}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        var unindexed = (await Query(server, "from index 'Orders/ForFacets' select facet(Group, sum(Count), min(Count), avg(Count))")).GetProperty("Results")[0].GetProperty("Values");
        var g1 = unindexed.EnumerateArray().Single(v => v.GetProperty("Range").GetString() == "g1");
        Assert.Equal("Count", g1.GetProperty("Name").GetString());
        Assert.Equal(2, g1.GetProperty("Count").GetInt32());
        Assert.Equal(0, g1.GetProperty("Sum").GetDouble());
        Assert.Equal(0, g1.GetProperty("Min").GetDouble());
        Assert.Equal(0, g1.GetProperty("Average").GetDouble());
        Assert.Equal(JsonValueKind.Null, g1.GetProperty("Max").ValueKind);
        var plain = await Query(server, "from index 'Orders/ForFacets' select facet(Group) include Maker");
        Assert.All(plain.GetProperty("Results")[0].GetProperty("Values").EnumerateArray(), v => Assert.Equal(JsonValueKind.Null, v.GetProperty("Name").ValueKind));
        var includes = plain.GetProperty("Includes");
        Assert.Equal("u2", includes.GetProperty("users/2").GetProperty("Name").GetString());
        Assert.Equal("u1", includes.GetProperty("users/1").GetProperty("Name").GetString());
        var dynamic = await Query(server, "from Orders where Age > 6 select facet(group) include Maker");
        Assert.Equal(["users/1"], dynamic.GetProperty("Includes").EnumerateObject().Select(p => p.Name));
        // A field the index lacks is still a 400 where it is not an aggregation.
        await Query(server, "from index 'Orders/ForFacets' select facet(Nope)", expect: HttpStatusCode.BadRequest);
    }

    [Fact]
    public async Task Declared_time_series_and_calendar_periods()
    {
        await using var server = await StartAsync();
        string[] times = ["2025-01-15T10:00:00Z", "2025-01-31T23:59:00Z", "2025-02-01T00:00:00Z", "2025-03-10T00:00:00Z", "2026-01-01T00:00:00Z"];
        var appends = string.Join(",", times.Select((t, i) => $$"""{"Timestamp":"{{t}}","Values":[{{i + 1}}],"Tag":"watches/1"}"""));
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.PostAsync("/databases/db/timeseries?docId=users/1", TestServer.Json($$"""{"Name":"HeartRate","Appends":[{{appends}}]}"""))).StatusCode);
        var p = new JsonObject { ["a"] = "2025-01-01T00:00:00Z", ["b"] = "2026-12-31T00:00:00Z" };

        // A lone declared time series without an alias answers its result itself (RavenDB's TimeSeriesAggregationResult).
        var monthly = (await Query(server, """
            declare timeseries out(u) { from u.HeartRate between $a and $b group by '1 month' select sum(), count() }
            from Users as u where id() = 'users/1' select out(u)
            """, p)).GetProperty("Results")[0];
        Assert.Equal(5, monthly.GetProperty("Count").GetInt32());
        Assert.Equal("users/1", monthly.GetProperty("@metadata").GetProperty("@id").GetString());
        var months = monthly.GetProperty("Results").EnumerateArray().ToList();
        Assert.Equal(["2025-01-01T00:00:00.0000000Z", "2025-02-01T00:00:00.0000000Z", "2025-03-01T00:00:00.0000000Z", "2026-01-01T00:00:00.0000000Z"], months.Select(m => m.GetProperty("From").GetString()));
        Assert.Equal(["2025-02-01T00:00:00.0000000Z", "2025-03-01T00:00:00.0000000Z", "2025-04-01T00:00:00.0000000Z", "2026-02-01T00:00:00.0000000Z"], months.Select(m => m.GetProperty("To").GetString()));
        Assert.Equal([3.0, 3, 4, 5], months.Select(m => m.GetProperty("Sum")[0].GetDouble()));
        Assert.Equal([2.0, 1, 1, 1], months.Select(m => m.GetProperty("Count")[0].GetDouble()));

        // With an alias it is a property; '1 year' groups by calendar years.
        var yearly = (await Query(server, """
            declare timeseries byYear(u) { from u.HeartRate group by '1 year' select count() }
            from Users as u where id() = 'users/1' select byYear(u) as Years
            """)).GetProperty("Results")[0].GetProperty("Years").GetProperty("Results").EnumerateArray().ToList();
        Assert.Equal(["2025-01-01T00:00:00.0000000Z", "2026-01-01T00:00:00.0000000Z"], yearly.Select(y => y.GetProperty("From").GetString()));
        Assert.Equal([4.0, 1], yearly.Select(y => y.GetProperty("Count")[0].GetDouble()));
        await Query(server, "from Users select nope(u)", expect: HttpStatusCode.BadRequest);
    }
}
