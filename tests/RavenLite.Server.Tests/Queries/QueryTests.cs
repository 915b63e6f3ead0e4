namespace RavenLite.Server.Tests.Queries;

/// <summary>
/// RQL queries (docs/protocol.md §6) checked against a brute-force model over the same documents:
/// random conditions, orderings and paging from a fixed seed (RAVENLITE_TEST_SEED adds one), right
/// after loading and while writes continue; plus projections, includes, errors and parser fuzz (I3).
/// </summary>
public sealed class QueryTests(ITestOutputHelper output)
{
    private static readonly string[] Names = ["alice", "Alice", "bob", "Carol", "dave", "Eve", "file2", "file10", "Zed"];
    private static readonly string[] Cities = ["Oslo", "Paris", "rome", "Berlin"];
    private static readonly string[] TagPool = ["red", "green", "Blue", "x"];

    private sealed record Doc(string Id, string? Name, int? Age, double Score, string[]? Tags, string? City, bool Active);

    private static List<Doc> Generate(Random rnd, int count) =>
        Enumerable.Range(0, count).Select(i => new Doc(
            $"people/{i}",
            rnd.Next(10) == 0 ? null : Names[rnd.Next(Names.Length)],
            rnd.Next(8) == 0 ? null : rnd.Next(0, 60),
            Math.Round(rnd.NextDouble() * 100, 2),
            rnd.Next(5) == 0 ? null : Enumerable.Range(0, rnd.Next(0, 3)).Select(_ => TagPool[rnd.Next(TagPool.Length)]).ToArray(),
            rnd.Next(6) == 0 ? null : Cities[rnd.Next(Cities.Length)],
            rnd.Next(2) == 0)).ToList();

    private static JsonObject ToJson(Doc d)
    {
        var o = new JsonObject();
        if (d.Name != null)
            o["Name"] = d.Name;
        if (d.Age != null)
            o["Age"] = d.Age;
        o["Score"] = d.Score;
        if (d.Tags != null)
            o["Tags"] = new JsonArray(d.Tags.Select(t => (JsonNode?)JsonValue.Create(t)).ToArray());
        if (d.City != null)
            o["Address"] = new JsonObject { ["City"] = d.City };
        o["Active"] = d.Active;
        o["@metadata"] = new JsonObject { ["@collection"] = "People" };
        return o;
    }

    private static async Task Put(TestServer server, IEnumerable<Doc> docs)
    {
        var commands = new JsonArray();
        foreach (var d in docs)
            commands.Add(new JsonObject { ["Id"] = d.Id, ["Type"] = "PUT", ["Document"] = ToJson(d) });
        var r = await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()));
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
    }

    /// <summary>Runs a query; by default with WaitForNonStaleResults, so index answers cover every write made before.</summary>
    private static async Task<JsonElement> Query(TestServer server, string rql, JsonObject? parameters = null, HttpStatusCode expect = HttpStatusCode.OK, bool wait = true)
    {
        var body = new JsonObject { ["Query"] = rql, ["QueryParameters"] = parameters ?? [], ["WaitForNonStaleResults"] = wait, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
        var r = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(expect == r.StatusCode, $"{rql} → {(int)r.StatusCode}: {json}");
        return json;
    }

    /// <summary>A random condition: its RQL text (with parameters) and the model's predicate.</summary>
    private sealed record Condition(string Rql, Func<Doc, bool> Holds);

    /// <summary>The documented text order: lower-cased, ordinal (the test data is ASCII, where that is code-point order).</summary>
    private static int Cmp(string a, string b) => Math.Sign(string.CompareOrdinal(a.ToLowerInvariant(), b.ToLowerInvariant()));

    // Kept whole: one case per condition kind the random queries draw from.
    private static Condition RandomCondition(Random rnd, JsonObject p, int depth)
    {
        string Param(JsonNode? v)
        {
            string name = "p" + p.Count;
            p[name] = v;
            return "$" + name;
        }
        int pick = rnd.Next(depth > 2 ? 9 : 12);
        switch (pick)
        {
            case 0:
            {
                string n = Names[rnd.Next(Names.Length)];
                return new($"Name = {Param(n)}", d => d.Name != null && Cmp(d.Name, n) == 0);
            }
            case 1:
            {
                string n = Names[rnd.Next(Names.Length)];
                return new($"Name != {Param(n)}", d => !(d.Name != null && Cmp(d.Name, n) == 0));
            }
            case 2:
            {
                int a = rnd.Next(0, 60);
                string op = new[] { "<", "<=", ">", ">=" }[rnd.Next(4)];
                return new($"Age {op} {Param(a)}", d => d.Age is { } x && op switch { "<" => x < a, "<=" => x <= a, ">" => x > a, _ => x >= a });
            }
            case 3:
            {
                double s = Math.Round(rnd.NextDouble() * 100, 1);
                return new($"Score > {Param(s)}", d => d.Score > s);
            }
            case 4:
            {
                int lo = rnd.Next(0, 50), hi = lo + rnd.Next(0, 15);
                return new($"Age between {Param(lo)} and {Param(hi)}", d => d.Age is { } x && x >= lo && x <= hi);
            }
            case 5:
            {
                var set = Names.OrderBy(_ => rnd.Next()).Take(rnd.Next(1, 4)).ToArray();
                return new($"Name in ({Param(new JsonArray(set.Select(x => (JsonNode?)JsonValue.Create(x)).ToArray()))})", d => d.Name != null && set.Any(x => Cmp(d.Name, x) == 0));
            }
            case 6:
            {
                string prefix = Names[rnd.Next(Names.Length)][..rnd.Next(1, 3)];
                if (rnd.Next(2) == 0)
                {
                    // regex() runs on the lower-cased value (as the index holds it).
                    string pattern = rnd.Next(2) == 0 ? "^" + prefix.ToLowerInvariant() : prefix.ToLowerInvariant()[..1] + "[a-z]$";
                    return new($"regex(Name, {Param(pattern)})", d => d.Name != null && System.Text.RegularExpressions.Regex.IsMatch(d.Name.ToLowerInvariant(), pattern));
                }
                return new($"startsWith(Name, {Param(prefix)})", d => d.Name != null && d.Name.StartsWith(prefix, StringComparison.OrdinalIgnoreCase));
            }
            case 7:
            {
                string tag = TagPool[rnd.Next(TagPool.Length)];
                if (rnd.Next(2) == 0)
                {
                    var all = TagPool.OrderBy(_ => rnd.Next()).Take(rnd.Next(1, 3)).ToArray();
                    return new($"Tags all in ({string.Join(", ", all.Select(t => Param(t.ToUpperInvariant())))})", d => d.Tags != null && all.All(a => d.Tags.Any(t => Cmp(t, a) == 0)));
                }
                return new($"Tags = {Param(tag.ToUpperInvariant())}", d => d.Tags != null && d.Tags.Any(t => Cmp(t, tag) == 0));
            }
            case 8:
            {
                string c = Cities[rnd.Next(Cities.Length)];
                bool exists = rnd.Next(2) == 0;
                return exists
                    ? new("exists(Address.City)", d => d.City != null)
                    : new($"Address.City = {Param(c)}", d => d.City != null && Cmp(d.City, c) == 0);
            }
            case 9:
            {
                var l = RandomCondition(rnd, p, depth + 1);
                var r = RandomCondition(rnd, p, depth + 1);
                return new($"({l.Rql} and {r.Rql})", d => l.Holds(d) && r.Holds(d));
            }
            case 10:
            {
                var l = RandomCondition(rnd, p, depth + 1);
                var r = RandomCondition(rnd, p, depth + 1);
                return new($"({l.Rql} or {r.Rql})", d => l.Holds(d) || r.Holds(d));
            }
            default:
            {
                var inner = RandomCondition(rnd, p, depth + 1);
                return new($"(true and not ({inner.Rql}))", d => !inner.Holds(d));
            }
        }
    }

    private static (string Rql, Comparison<Doc> Compare) RandomOrder(Random rnd)
    {
        bool desc = rnd.Next(2) == 0;
        int sign = desc ? -1 : 1;
        switch (rnd.Next(4))
        {
            case 0:
                return ($"Age as long{(desc ? " desc" : "")}", (a, b) => sign * Nullable.Compare(a.Age, b.Age));
            case 1:
                return ($"Score as double{(desc ? " desc" : "")}", (a, b) => sign * a.Score.CompareTo(b.Score));
            case 2:
                return ($"Name{(desc ? " desc" : "")}", (a, b) => sign * (a.Name == null ? (b.Name == null ? 0 : -1) : b.Name == null ? 1 : Cmp(a.Name, b.Name)));
            default:
                return ($"Name as alphaNumeric{(desc ? " desc" : "")}", (a, b) => sign * (a.Name == null ? (b.Name == null ? 0 : -1) : b.Name == null ? 1 : Natural(a.Name, b.Name)));
        }
    }

    /// <summary>The model's alphaNumeric order for the names used here (letters, then an optional number).</summary>
    private static int Natural(string a, string b)
    {
        static (string Text, long Num) Split(string s)
        {
            int i = s.Length;
            while (i > 0 && char.IsDigit(s[i - 1]))
                i--;
            return (s[..i].ToLowerInvariant(), i < s.Length ? long.Parse(s[i..], System.Globalization.CultureInfo.InvariantCulture) : -1);
        }
        var (ta, na) = Split(a);
        var (tb, nb) = Split(b);
        int c = string.CompareOrdinal(ta, tb);
        return c != 0 ? Math.Sign(c) : na.CompareTo(nb);
    }

    private static async Task CheckRandomQueries(TestServer server, List<Doc> docs, Random rnd, int count, string source = "from 'People'")
    {
        for (int q = 0; q < count; q++)
        {
            var p = new JsonObject();
            var cond = RandomCondition(rnd, p, 0);
            var rql = new StringBuilder(source).Append(" where ").Append(cond.Rql);
            Comparison<Doc>? order = null;
            if (rnd.Next(3) > 0)
            {
                var (text, cmp) = RandomOrder(rnd);
                rql.Append(" order by ").Append(text);
                order = cmp;
            }
            int skip = rnd.Next(0, 5), take = rnd.Next(0, 40);
            bool page = rnd.Next(2) == 0;
            if (page)
                rql.Append(" limit $skip, $take");
            if (page)
            {
                p["skip"] = skip;
                p["take"] = take;
            }
            var expected = docs.Where(cond.Holds).ToList(); // insertion (etag) order
            if (order != null)
            {
                var keyed = expected.Select((d, i) => (d, i)).ToList();
                keyed.Sort((x, y) => order(x.d, y.d) is var c && c != 0 ? c : x.i.CompareTo(y.i));
                expected = keyed.Select(x => x.d).ToList();
            }
            var json = await Query(server, rql.ToString(), p);
            Assert.True(expected.Count == json.GetProperty("TotalResults").GetInt64(), $"TotalResults of {rql} {p.ToJsonString()}");
            var want = (page ? expected.Skip(skip).Take(take) : expected).Select(d => d.Id).ToList();
            var got = json.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("@metadata").GetProperty("@id").GetString()).ToList();
            Assert.True(want.SequenceEqual(got), $"{rql} {p.ToJsonString()}\nwant {string.Join(",", want)}\ngot  {string.Join(",", got)}");
        }
    }

    [Fact]
    public async Task Random_queries_match_a_brute_force_evaluation()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        foreach (int seed in TestSeed.For(4242))
        {
            output.WriteLine($"seed {seed} (RAVENLITE_TEST_SEED replays)");
            var rnd = new Random(seed);
            var docs = Generate(rnd, 300).Select(d => d with { Id = $"people/{seed}/{d.Id}" }).ToList();
            await Put(server, docs);
            var all = docs; // the People collection holds exactly these (one seed at a time)
            await CheckRandomQueries(server, all, rnd, 250);
            var del = await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject
            {
                ["Commands"] = new JsonArray(docs.Select(d => (JsonNode?)new JsonObject { ["Id"] = d.Id, ["Type"] = "DELETE" }).ToArray()),
            }.ToJsonString()));
            Assert.Equal(HttpStatusCode.Created, del.StatusCode);
        }
    }

    /// <summary>
    /// The same random queries against a static JavaScript index whose fields carry the document's
    /// values (the nested city under the name 'Address.City'), after documents were updated and
    /// deleted, so the index has processed updates and tombstones.
    /// </summary>
    [Fact]
    public async Task Random_queries_on_a_static_index_match_a_brute_force_evaluation()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var put = await server.Http.PutAsync("/databases/db/indexes", TestServer.Json("""
            {"Indexes":[{"Name":"People/Js","IndexType":"JavaScriptMap","Maps":["map('People', p => ({ Name: p.Name, Age: p.Age, Score: p.Score, Tags: p.Tags, 'Address.City': p.Address.City, Active: p.Active }))"],"Fields":{"Name":{"Indexing":"Search"}}}]}
            """));
        Assert.Equal(HttpStatusCode.Created, put.StatusCode);
        foreach (int seed in TestSeed.For(5151))
        {
            output.WriteLine($"seed {seed} (RAVENLITE_TEST_SEED replays)");
            var rnd = new Random(seed);
            var docs = Generate(rnd, 400).Select(d => d with { Id = $"people/{seed}/{d.Id}" }).ToList();
            await Put(server, docs);
            // Update a third (new values, new etags) and delete a sixth: the index must follow both.
            var updated = docs.Where((_, i) => i % 3 == 0).Select(d => Generate(rnd, 1)[0] with { Id = d.Id }).ToList();
            await Put(server, updated);
            var deleted = docs.Where((_, i) => i % 6 == 1).Select(d => d.Id).ToHashSet();
            var del = await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject
            {
                ["Commands"] = new JsonArray(deleted.Select(id => (JsonNode?)new JsonObject { ["Id"] = id, ["Type"] = "DELETE" }).ToArray()),
            }.ToJsonString()));
            Assert.Equal(HttpStatusCode.Created, del.StatusCode);
            var byId = updated.ToDictionary(d => d.Id);
            // Model order = etag order: untouched documents first (insertion order), then the updated ones.
            var current = docs.Where(d => !deleted.Contains(d.Id) && !byId.ContainsKey(d.Id))
                .Concat(updated.Where(d => !deleted.Contains(d.Id))).ToList();
            await CheckRandomQueries(server, current, rnd, 250, "from index 'People/Js'");
            var clear = await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject
            {
                ["Commands"] = new JsonArray(current.Select(d => (JsonNode?)new JsonObject { ["Id"] = d.Id, ["Type"] = "DELETE" }).ToArray()),
            }.ToJsonString()));
            Assert.Equal(HttpStatusCode.Created, clear.StatusCode);
        }
    }

    // Kept whole: one model and one server through every round of writes and queries; each round is checked
    // against the model.
    /// <summary>
    /// A number range ordered by its own field (answered from the field's number terms, segment by segment) against
    /// the model and against the general path (the same query with <c>and true</c>, which is ranked from sort keys):
    /// several index segments, updated and deleted documents, many equal values (ties in index order), negative
    /// and fractional numbers, values that are not numbers, and, in the last round, arrays (several values each).
    /// </summary>
    [Fact]
    public async Task Number_ranges_ordered_by_their_own_field_match_the_model_and_the_general_path()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        foreach (int seed in TestSeed.For(6262))
        {
            output.WriteLine($"seed {seed} (RAVENLITE_TEST_SEED replays)");
            var rnd = new Random(seed);
            var values = new Dictionary<string, JsonNode?>();
            static double Number(JsonNode v) => double.Parse(v.ToJsonString(), System.Globalization.CultureInfo.InvariantCulture);
            JsonNode? RandomValue(bool arrays) => rnd.Next(12) switch
            {
                0 => null,
                1 => JsonValue.Create("text" + rnd.Next(5)),
                2 => JsonValue.Create(Math.Round(rnd.NextDouble() * 40 - 10, 1)),
                3 when arrays => new JsonArray(JsonValue.Create(rnd.Next(-5, 30)), JsonValue.Create(rnd.Next(-5, 30))),
                4 => JsonValue.Create(-0.0),
                _ => JsonValue.Create(rnd.Next(-5, 30)),
            };
            async Task Write(IEnumerable<string> ids, bool arrays)
            {
                var commands = new JsonArray();
                foreach (string id in ids)
                {
                    var doc = new JsonObject { ["@metadata"] = new JsonObject { ["@collection"] = "Items" } };
                    var v = RandomValue(arrays);
                    if (rnd.Next(15) > 0)
                        doc["Value"] = v?.DeepClone();
                    else
                        v = null;
                    values[id] = v;
                    commands.Add(new JsonObject { ["Id"] = id, ["Type"] = "PUT", ["Document"] = doc });
                }
                var r = await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()));
                Assert.Equal(HttpStatusCode.Created, r.StatusCode);
                await Query(server, "from Items where Value >= 0 order by Value limit 0, 0"); // indexed before the next batch: several segments
            }
            var ids = Enumerable.Range(0, 600).Select(i => $"items/{seed}/{i}").ToList();
            for (int batch = 0; batch < 4; batch++)
                await Write(ids.Skip(batch * 150).Take(150), arrays: false);
            // Round 0: segments without deletions (counted from their terms); 1: after updates and deletes (deleted
            // entries in most segments); 2: after some documents got arrays (several values: the general path).
            for (int round = 0; round < 3; round++)
            {
                if (round == 1)
                {
                    await Write(ids.Where((_, i) => i % 7 == 0), arrays: false); // updated: deleted from their segments, added again
                    var deleted = ids.Where((_, i) => i % 11 == 3).ToList();
                    var del = await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject
                    {
                        ["Commands"] = new JsonArray(deleted.Select(id => (JsonNode?)new JsonObject { ["Id"] = id, ["Type"] = "DELETE" }).ToArray()),
                    }.ToJsonString()));
                    Assert.Equal(HttpStatusCode.Created, del.StatusCode);
                    foreach (string id in deleted)
                        values.Remove(id);
                }
                if (round == 2)
                    await Write(ids.Where((_, i) => i % 13 == 5 && values.ContainsKey(ids[i])), arrays: true);
                for (int q = 0; q < 60; q++)
                {
                    double lo = rnd.Next(-12, 32) + (rnd.Next(3) == 0 ? 0.5 : 0), hi = lo + rnd.Next(0, 12);
                    var p = new JsonObject { ["lo"] = lo, ["hi"] = hi, ["skip"] = rnd.Next(0, 8), ["take"] = rnd.Next(0, 30) };
                    var (where, holds) = rnd.Next(4) switch
                    {
                        0 => ("Value between $lo and $hi", (Func<double, bool>)(x => x >= lo && x <= hi)),
                        1 => ("Value >= $lo", x => x >= lo),
                        2 => ("Value <= $hi", x => x <= hi),
                        _ => ("Value = $lo", x => x == lo),
                    };
                    string order = new[] { "", " as double", " as long" }[rnd.Next(3)];
                    var fast = await Query(server, $"from Items where {where} order by Value{order} limit $skip, $take", (JsonObject)p.DeepClone());
                    var general = await Query(server, $"from Items where ({where}) and true order by Value{order} limit $skip, $take", (JsonObject)p.DeepClone());
                    static List<string?> Ids(JsonElement json) => json.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("@metadata").GetProperty("@id").GetString()).ToList();
                    Assert.True(general.GetProperty("TotalResults").GetInt64() == fast.GetProperty("TotalResults").GetInt64(), $"TotalResults of {where}{order} {p.ToJsonString()}");
                    Assert.True(Ids(general).SequenceEqual(Ids(fast)), $"{where}{order} {p.ToJsonString()}\ngeneral {string.Join(",", Ids(general))}\nfast    {string.Join(",", Ids(fast))}");
                    if (round == 2)
                        continue; // arrays: the model below is for one value per document
                    // The model: documents whose value is a number in range, by value (ties in any order here).
                    var model = values.Where(kv => kv.Value is JsonValue v && v.GetValueKind() == JsonValueKind.Number && holds(Number(v)))
                        .Select(kv => (Id: kv.Key, Value: Number(kv.Value!))).ToList();
                    Assert.Equal(model.Count, fast.GetProperty("TotalResults").GetInt64());
                    var expected = model.OrderBy(m => m.Value).Skip((int)p["skip"]!).Take((int)p["take"]!).Select(m => m.Value).ToList();
                    var got = Ids(fast).Select(id => Number(values[id!]!)).ToList();
                    Assert.Equal(expected, got);
                }
            }
            var clear = await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject
            {
                ["Commands"] = new JsonArray(values.Keys.Select(id => (JsonNode?)new JsonObject { ["Id"] = id, ["Type"] = "DELETE" }).ToArray()),
            }.ToJsonString()));
            Assert.Equal(HttpStatusCode.Created, clear.StatusCode);
        }
    }

    [Fact]
    public async Task Queries_while_writes_continue_return_results_that_satisfy_the_query()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var rnd = new Random(77);
        await Put(server, Generate(rnd, 200));
        using var stop = new CancellationTokenSource();
        var writer = Task.Run(async () =>
        {
            var wr = new Random(78);
            int n = 0;
            while (!stop.IsCancellationRequested)
                await Put(server, Generate(wr, 20).Select(d => d with { Id = $"people/{wr.Next(400)}" }).Take(20).DistinctBy(d => d.Id).ToList().Select(d => d with { Age = n++ % 60 }));
        });
        for (int i = 0; i < 60; i++)
        {
            // No waiting: the auto index may be behind the writes (IsStale), yet every result must satisfy
            // the query as the documents are now (a document changed after indexing is checked again).
            int a = rnd.Next(0, 60);
            var json = await Query(server, "from People where Age >= $a order by Age as long", new JsonObject { ["a"] = a }, wait: false);
            var ages = json.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Age").GetInt32()).ToList();
            Assert.All(ages, x => Assert.True(x >= a));
            Assert.Equal(ages.Order().ToList(), ages);
            Assert.Equal(ages.Count, json.GetProperty("TotalResults").GetInt64());
        }
        await stop.CancelAsync();
        await writer;
    }

    [Fact]
    public async Task Projections_distinct_include_ids_all_docs_and_the_get_form()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var r = await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json("""
            {"Commands":[
              {"Id":"companies/1","Type":"PUT","Document":{"Name":"Acme","@metadata":{"@collection":"Companies"}}},
              {"Id":"users/1","Type":"PUT","Document":{"Name":"Ann","Age":30,"Company":"companies/1","Address":{"City":"Oslo"},"Tags":["a","b"],"@metadata":{"@collection":"Users"}}},
              {"Id":"users/2","Type":"PUT","Document":{"Name":"Ben","Age":30,"Company":"companies/1","@metadata":{"@collection":"Users"}}},
              {"Id":"users/3","Type":"PUT","Document":{"Name":"Cy","Age":41,"@metadata":{"@collection":"Users"}}}]}
            """));
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);

        var proj = await Query(server, "from Users where Age = 30 order by Name select Name, Address.City as City, Tags, id()");
        var first = proj.GetProperty("Results")[0];
        Assert.Equal("Ann", first.GetProperty("Name").GetString());
        Assert.Equal("Oslo", first.GetProperty("City").GetString());
        Assert.Equal(2, first.GetProperty("Tags").GetArrayLength());
        Assert.Equal("users/1", first.GetProperty("Id").GetString());
        Assert.True(first.GetProperty("@metadata").GetProperty("@projection").GetBoolean());
        Assert.Equal(JsonValueKind.Null, proj.GetProperty("Results")[1].GetProperty("City").ValueKind);

        var distinct = await Query(server, "from Users select distinct Age");
        Assert.Equal([30, 41], distinct.GetProperty("Results").EnumerateArray().Select(x => x.GetProperty("Age").GetInt32()).Order());

        var inc = await Query(server, "from Users where id() = 'users/2' include Company");
        Assert.Equal("Acme", inc.GetProperty("Includes").GetProperty("companies/1").GetProperty("Name").GetString());

        var all = await Query(server, "from @all_docs where Name = $n", new JsonObject { ["n"] = "acme" });
        Assert.Equal("companies/1", all.GetProperty("Results")[0].GetProperty("@metadata").GetProperty("@id").GetString());

        var count = await Query(server, "from Users limit $s, $t", new JsonObject { ["s"] = null, ["t"] = 0 });
        Assert.Equal(3, count.GetProperty("TotalResults").GetInt64());
        Assert.Equal(0, count.GetProperty("Results").GetArrayLength());

        var search = await Query(server, "from Users where search(Name, 'b* zzz')");
        Assert.Equal("Ben", search.GetProperty("Results")[0].GetProperty("Name").GetString());

        var get = await server.Http.GetAsync("/databases/db/queries?query=" + Uri.EscapeDataString("from Users where Age > 40"));
        var getJson = await TestServer.ReadJson(get);
        Assert.Equal("Cy", getJson.GetProperty("Results")[0].GetProperty("Name").GetString());
        Assert.Equal("Auto/Users/ByAgeAndSearch(Name)", getJson.GetProperty("IndexName").GetString());
        var scan = await server.Http.GetAsync("/databases/db/queries?query=" + Uri.EscapeDataString("from Users"));
        Assert.Equal("collection/Users", (await TestServer.ReadJson(scan)).GetProperty("IndexName").GetString());
    }

    [Theory]
    [InlineData("from", "position 4")]
    [InlineData("from Users where", "position 16")]
    [InlineData("from Users where Age >", "position 22")]
    [InlineData("from Users where Age = 1 and", "position 28")]
    [InlineData("from Users where (Age = 1", "position 25")]
    [InlineData("from Users where Name = 'open", "position 24")]
    [InlineData("from Users order Name", "position 17")]
    [InlineData("from Users where foo(Name, 1)", "unknown function")]
    [InlineData("from Users where Age = $missing", "$missing")]
    [InlineData("from index 'X' group by Name", "group by needs a collection")]
    [InlineData("from Users group by Name select key(), count(", "position")]
    [InlineData("from Users where Age ~ 3", "unexpected character")]
    [InlineData("from Users limit 'x'", "integer")]
    [InlineData("from Users where regex(Name, '(unclosed')", "not a valid regular expression")]
    [InlineData("from Users where Tags all (1)", "expected a comparison")]
    public async Task Malformed_queries_are_a_400_InvalidQueryException_naming_the_problem(string rql, string expected)
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var json = await Query(server, rql, expect: HttpStatusCode.BadRequest);
        Assert.Equal("Raven.Client.Exceptions.InvalidQueryException", json.GetProperty("Type").GetString());
        Assert.Contains(expected, json.GetProperty("Message").GetString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Index_queries_and_bodies_that_are_not_queries()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var idx = await Query(server, "from index 'Users/ByName'", expect: HttpStatusCode.InternalServerError);
        Assert.EndsWith("IndexDoesNotExistException", idx.GetProperty("Type").GetString(), StringComparison.Ordinal);
        foreach (string body in new[] { "not json", "[]", "{\"Query\":5}", "{\"Query\":\"from Users\",\"QueryParameters\":[1]}" })
        {
            var r = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body));
            Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        }
    }

    /// <summary>docs/reliability.md I3: deep nesting and mutated queries never crash the server or answer 500.</summary>
    [Fact]
    public async Task Parser_fuzz_and_deep_nesting_get_4xx_never_5xx()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await Put(server, Generate(new Random(5), 30));
        string deep = "from People where " + new string('(', 20_000) + "Age = 1" + new string(')', 20_000);
        var d = await Query(server, deep, expect: HttpStatusCode.BadRequest);
        Assert.Contains("nests deeper", d.GetProperty("Message").GetString(), StringComparison.Ordinal);
        string nots = "from People where " + string.Concat(Enumerable.Repeat("not ", 10_000)) + "Age = 1";
        var n = await Query(server, nots, expect: HttpStatusCode.BadRequest);
        Assert.Contains("nests deeper", n.GetProperty("Message").GetString(), StringComparison.Ordinal);
        string huge = "from People where " + new string('(', 100_000) + "Age = 1" + new string(')', 100_000);
        var h = await Query(server, huge, expect: HttpStatusCode.BadRequest);
        Assert.Contains("characters long", h.GetProperty("Message").GetString(), StringComparison.Ordinal);

        string[] seeds =
        [
            "from People where (Age > $a and startsWith(Name, 'al')) or not Tags in ('red') order by Score as double desc select Name, Age limit 1, 5",
            "from 'People' where Age between 1 and 30 and exists(Address.City) order by Name as alphaNumeric include Company",
            "from @all_docs where search(Name, 'al* *ve') select distinct Name",
        ];
        const string alphabet = "()'\",.$=<>! abcdefxyz0123456789\\@*-";
        foreach (int seed in TestSeed.For(99))
        {
            output.WriteLine($"fuzz seed {seed}");
            var rnd = new Random(seed);
            for (int i = 0; i < 400; i++)
            {
                var chars = seeds[rnd.Next(seeds.Length)].ToCharArray().ToList();
                for (int m = rnd.Next(1, 6); m > 0; m--)
                {
                    int at = rnd.Next(chars.Count);
                    switch (rnd.Next(3))
                    {
                        case 0: chars.RemoveAt(at); break;
                        case 1: chars.Insert(at, alphabet[rnd.Next(alphabet.Length)]); break;
                        default: chars[at] = alphabet[rnd.Next(alphabet.Length)]; break;
                    }
                }
                string q = new(chars.ToArray());
                var body = new JsonObject { ["Query"] = q, ["QueryParameters"] = new JsonObject { ["a"] = 3 } };
                var r = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
                Assert.True((int)r.StatusCode is 200 or 400 or 404, $"seed {seed}: {q} → {(int)r.StatusCode} {await r.Content.ReadAsStringAsync()}");
            }
        }
        var after = await Query(server, "from People");
        Assert.Equal(30, after.GetProperty("TotalResults").GetInt64());
    }
}
