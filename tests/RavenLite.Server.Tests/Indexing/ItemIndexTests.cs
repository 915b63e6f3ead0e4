namespace RavenLite.Server.Tests.Indexing;

/// <summary>
/// Counters and time-series indexes as RavenDB's clients define them (<c>SourceType</c> Counters/TimeSeries, C#
/// <c>counters.Companies.Likes</c> / <c>timeSeries.Companies.HeartRate</c> maps, JavaScript <c>counters.map</c> /
/// <c>timeSeries.map</c>): one entry per map output, answered from the index; counter and series changes, deletes and
/// document deletes followed; map-reduce over series; <c>counterNamesFor</c>/<c>timeSeriesNamesFor</c> in document maps.
/// </summary>
public sealed class ItemIndexTests
{
    private const string Db = "/databases/db";

    private static async Task Send(TestServer server, HttpMethod method, string url, string? body = null, HttpStatusCode expected = HttpStatusCode.OK)
    {
        using var request = new HttpRequestMessage(method, Db + url) { Content = body == null ? null : TestServer.Json(body) };
        var r = await server.Http.SendAsync(request);
        Assert.True(r.StatusCode == expected || (expected == HttpStatusCode.OK && r.IsSuccessStatusCode), $"{method} {url}: {(int)r.StatusCode} {await r.Content.ReadAsStringAsync()}");
    }

    private static Task Counter(TestServer server, string id, string name, long delta, string type = "Increment") =>
        Send(server, HttpMethod.Post, "/counters", $$"""{"Documents":[{"DocumentId":"{{id}}","Operations":[{"Type":"{{type}}","CounterName":"{{name}}","Delta":{{delta}}}]}]}""");

    private static Task Append(TestServer server, string id, string series, string time, double value, string? tag = null) =>
        Send(server, HttpMethod.Post, $"/timeseries?docId={Uri.EscapeDataString(id)}",
            $$"""{"Name":"{{series}}","Appends":[{"Timestamp":"{{time}}","Values":[{{value.ToString(System.Globalization.CultureInfo.InvariantCulture)}}]{{(tag == null ? "" : $",\"Tag\":\"{tag}\"")}}}]}""");

    private static Task PutIndex(TestServer server, string definition) =>
        Send(server, HttpMethod.Put, "/admin/indexes", $$"""{"Indexes":[{{definition}}]}""");

    private static async Task<JsonElement> Query(TestServer server, string rql)
    {
        var body = new JsonObject { ["Query"] = rql, ["WaitForNonStaleResults"] = true, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
        var r = await server.Http.PostAsync(Db + "/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(r.StatusCode == HttpStatusCode.OK, json.ToString());
        Assert.False(json.GetProperty("IsStale").GetBoolean());
        return json;
    }

    private static async Task<List<string>> Rows(TestServer server, string rql, params string[] fields) =>
        (await Query(server, rql)).GetProperty("Results").EnumerateArray()
            .Select(r => string.Join("|", fields.Select(f => r.TryGetProperty(f, out var v) ? v.ValueKind == JsonValueKind.String ? v.GetString() : v.GetRawText() : "-")))
            .ToList();

    private static async Task<TestServer> StartWithCompaniesAsync(string? dataDir = null)
    {
        var server = await TestServer.StartWithDatabaseAsync(dataDir: dataDir);
        foreach (string id in new[] { "companies/1", "companies/2" })
            await Send(server, HttpMethod.Put, $"/docs?id={id}", """{"Name":"C","@metadata":{"@collection":"Companies"}}""", HttpStatusCode.Created);
        await Send(server, HttpMethod.Put, "/docs?id=users/1", """{"Name":"U","@metadata":{"@collection":"Users"}}""", HttpStatusCode.Created);
        return server;
    }

    [Fact]
    public async Task A_counters_index_has_an_entry_per_counter_and_follows_changes_and_deletes()
    {
        await using var server = await StartWithCompaniesAsync();
        await Counter(server, "companies/1", "Likes", 5);
        await Counter(server, "companies/1", "Dislikes", 2);
        await Counter(server, "companies/2", "Likes", 9);
        await Counter(server, "users/1", "Likes", 100); // another collection: not in the index
        await PutIndex(server, """{"Name":"Likes","SourceType":"Counters","Maps":["from counter in counters.Companies.Likes select new { counter.Value, counter.Name, User = counter.DocumentId }"]}""");
        await PutIndex(server, """{"Name":"AllCounters","Maps":["from c in counters.Companies select new { c.Name, c.Value }"]}""");

        Assert.Equal(["5|Likes|companies/1", "9|Likes|companies/2"], await Rows(server, "from index Likes order by Value", "Value", "Name", "User"));
        Assert.Equal(["Dislikes|2", "Likes|5", "Likes|9"], await Rows(server, "from index AllCounters order by Value", "Name", "Value"));
        Assert.Equal(["Likes|9"], await Rows(server, "from index AllCounters where Value > 5", "Name", "Value"));
        // Definitions without SourceType take it from the map; GET /indexes says so.
        var definition = await TestServer.ReadJson(await server.Http.GetAsync(Db + "/indexes?name=AllCounters"));
        Assert.Equal("Counters", definition.GetProperty("Results")[0].GetProperty("SourceType").GetString());

        await Counter(server, "companies/1", "Likes", 10); // 15
        Assert.Equal(["9|companies/2", "15|companies/1"], await Rows(server, "from index Likes order by Value", "Value", "User"));
        await Counter(server, "companies/1", "Likes", 0, "Delete");
        Assert.Equal(["9|companies/2"], await Rows(server, "from index Likes", "Value", "User"));
        await Send(server, HttpMethod.Delete, "/docs?id=companies/2", expected: HttpStatusCode.NoContent);
        Assert.Empty(await Rows(server, "from index Likes", "Value"));
        Assert.Equal(["Dislikes|2"], await Rows(server, "from index AllCounters", "Name", "Value"));
        // Terms come from the entries (RavenDB's GetTermsOperation on a counters index).
        var terms = await TestServer.ReadJson(await server.Http.GetAsync(Db + "/indexes/terms?name=AllCounters&field=Name"));
        Assert.Equal(["dislikes"], terms.GetProperty("Terms").EnumerateArray().Select(t => t.GetString()));
    }

    [Fact]
    public async Task A_time_series_index_has_an_entry_per_series_entry_with_times_as_dates()
    {
        await using var server = await StartWithCompaniesAsync();
        await Append(server, "companies/1", "HeartRate", "2026-01-01T10:00:00.0000000Z", 70, "watch");
        await Append(server, "companies/1", "HeartRate", "2026-01-02T11:00:00.0000000Z", 80);
        await Append(server, "companies/1", "Steps", "2026-01-01T10:00:00.0000000Z", 1000);
        await PutIndex(server, """
            {"Name":"Hr","SourceType":"TimeSeries","Maps":["from ts in timeSeries.Companies.HeartRate from entry in ts.Entries select new { HeartBeat = entry.Values[0], Date = entry.Timestamp.Date, User = ts.DocumentId, entry.Tag, Name = ts.Name }"]}
            """);
        await PutIndex(server, """
            {"Name":"JsAll","Maps":["timeSeries.map('Companies', function (ts) { return ts.Entries.map(e => ({ name: ts.Name, value: e.Value, day: e.Timestamp.getUTCDate() })); })"]}
            """);
        Assert.Equal(["70|2026-01-01T00:00:00.0000000Z|companies/1|watch|HeartRate", "80|2026-01-02T00:00:00.0000000Z|companies/1|null|HeartRate"],
            await Rows(server, "from index Hr order by HeartBeat", "HeartBeat", "Date", "User", "Tag", "Name"));
        Assert.Equal(["HeartRate|70|1", "HeartRate|80|2", "Steps|1000|1"], await Rows(server, "from index JsAll order by value", "name", "value", "day"));
        Assert.Equal(["80"], await Rows(server, "from index Hr where Date = '2026-01-02T00:00:00.0000000Z'", "HeartBeat"));

        // An append and a range delete re-map the series; deleting the document removes its entries.
        await Append(server, "companies/1", "HeartRate", "2026-01-03T09:00:00.0000000Z", 60);
        Assert.Equal(["60", "70", "80"], await Rows(server, "from index Hr order by HeartBeat", "HeartBeat"));
        await Send(server, HttpMethod.Post, "/timeseries?docId=companies%2F1",
            """{"Name":"HeartRate","Deletes":[{"From":"2026-01-01T00:00:00.0000000Z","To":"2026-01-01T23:59:59.0000000Z"}]}""");
        Assert.Equal(["60", "80"], await Rows(server, "from index Hr order by HeartBeat", "HeartBeat"));
        await Send(server, HttpMethod.Delete, "/docs?id=companies/1", expected: HttpStatusCode.NoContent);
        Assert.Empty(await Rows(server, "from index Hr", "HeartBeat"));
        Assert.Empty(await Rows(server, "from index JsAll", "value"));
    }

    [Fact]
    public async Task A_time_series_map_reduce_index_aggregates_entries_and_survives_a_restart()
    {
        using var dir = new TempDirectory("ravenlite-items");
        await using (var server = await StartWithCompaniesAsync(dir.Path))
        {
            foreach (var (time, value) in new[] { ("2026-01-01T10:00:00.0000000Z", 70.0), ("2026-01-01T12:00:00.0000000Z", 90.0), ("2026-01-02T10:00:00.0000000Z", 60.0) })
                await Append(server, "companies/1", "HeartRate", time, value);
            await Append(server, "companies/2", "HeartRate", "2026-01-01T08:00:00.0000000Z", 100);
            await PutIndex(server, """
                {"Name":"Daily","Maps":["from ts in timeSeries.Companies.HeartRate from entry in ts.Entries select new { Day = entry.Timestamp.Date, Count = 1, Sum = entry.Value }"],
                 "Reduce":"from r in results group r by r.Day into g select new { Day = g.Key, Count = g.Sum(x => x.Count), Sum = g.Sum(x => x.Sum) }"}
                """);
            Assert.Equal(["2026-01-01T00:00:00.0000000Z|3|260", "2026-01-02T00:00:00.0000000Z|1|60"], await Rows(server, "from index Daily order by Day", "Day", "Count", "Sum"));
            await Append(server, "companies/2", "HeartRate", "2026-01-02T08:00:00.0000000Z", 40);
            Assert.Equal(["2026-01-01T00:00:00.0000000Z|3|260", "2026-01-02T00:00:00.0000000Z|2|100"], await Rows(server, "from index Daily order by Day", "Day", "Count", "Sum"));
        }
        // Reopened: the position in the change log is kept, new changes still arrive.
        await using (var server = await TestServer.StartAsync(dir.Path))
        {
            Assert.Equal(["2026-01-01T00:00:00.0000000Z|3|260", "2026-01-02T00:00:00.0000000Z|2|100"], await Rows(server, "from index Daily order by Day", "Day", "Count", "Sum"));
            await Send(server, HttpMethod.Delete, "/docs?id=companies/2", expected: HttpStatusCode.NoContent);
            Assert.Equal(["2026-01-01T00:00:00.0000000Z|2|160", "2026-01-02T00:00:00.0000000Z|1|60"], await Rows(server, "from index Daily order by Day", "Day", "Count", "Sum"));
        }
    }

    [Fact]
    public async Task Document_maps_read_counter_and_series_names_and_item_maps_are_checked()
    {
        await using var server = await StartWithCompaniesAsync();
        await Counter(server, "companies/1", "Likes", 1);
        await Append(server, "companies/1", "HeartRate", "2026-01-01T10:00:00.0000000Z", 70);
        await PutIndex(server, """{"Name":"Names","Maps":["from c in docs.Companies select new { Counters = CounterNamesFor(c), Series = TimeSeriesNamesFor(c) }"]}""");
        await PutIndex(server, """{"Name":"JsNames","Maps":["map('Companies', c => ({ counters: counterNamesFor(c), series: timeSeriesNamesFor(c) }))"]}""");
        Assert.Equal(["companies/1"], (await Query(server, "from index Names where Counters = 'Likes' and Series = 'HeartRate'")).GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("@metadata").GetProperty("@id").GetString()));
        // companies/2 has neither: its entry would have no values, so it has none.
        Assert.Equal(["companies/1"], (await Query(server, "from index JsNames where counters = 'likes' and series = 'heartrate'")).GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("@metadata").GetProperty("@id").GetString()));

        // A definition whose SourceType says one thing and whose map reads another is refused, as is a map reading two sources.
        await Send(server, HttpMethod.Put, "/admin/indexes", """{"Indexes":[{"Name":"Bad","SourceType":"Counters","Maps":["from c in docs.Companies select new { c.Name }"]}]}""", HttpStatusCode.BadRequest);
        await Send(server, HttpMethod.Put, "/admin/indexes", """{"Indexes":[{"Name":"Bad","SourceType":"Documents","Maps":["from c in counters.Companies from d in docs.Users select new { c.Name }"]}]}""", HttpStatusCode.BadRequest);
        // Patch and delete by query need documents: a counters index has none behind its entries.
        await PutIndex(server, """{"Name":"Likes","Maps":["from c in counters.Companies select new { c.Name, c.Value }"]}""");
        await Query(server, "from index Likes");
        using var delete = new HttpRequestMessage(HttpMethod.Delete, Db + "/queries") { Content = TestServer.Json("""{"Query":"from index Likes"}""") };
        long operation = (await TestServer.ReadJson(await server.Http.SendAsync(delete))).GetProperty("OperationId").GetInt64();
        var deadline = DateTime.UtcNow.AddSeconds(30);
        JsonElement state;
        do
            state = await TestServer.ReadJson(await server.Http.GetAsync($"{Db}/operations/state?id={operation}"));
        while (state.GetProperty("Status").GetString() == "InProgress" && DateTime.UtcNow < deadline);
        Assert.Equal("Faulted", state.GetProperty("Status").GetString());
        Assert.Contains("is a counters index", state.GetProperty("Result").GetProperty("Message").GetString());
        Assert.Equal(1, (await Query(server, "from index Likes")).GetProperty("TotalResults").GetInt32());
    }
}
