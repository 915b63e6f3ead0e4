namespace RavenLite.Server.Tests.Compatibility;

/// <summary>
/// Data routes answered as RavenDB answers them where its clients read the difference: a subscription on a collection
/// with no documents yet, a batch PUT without an id, compare-exchange reads of several keys (and one missing key), and
/// the index check of a compare-exchange delete.
/// </summary>
public sealed class DataFidelityTests
{
    private static async Task<JsonElement> Send(TestServer server, HttpMethod method, string path, string? body, HttpStatusCode expect)
    {
        using var request = new HttpRequestMessage(method, path) { Content = body == null ? null : TestServer.Json(body) };
        var r = await server.Http.SendAsync(request);
        string text = await r.Content.ReadAsStringAsync();
        Assert.True(expect == r.StatusCode, $"{method} {path} → {(int)r.StatusCode}: {text}");
        return text.Length == 0 ? default : JsonDocument.Parse(text).RootElement.Clone();
    }

    [Fact]
    public async Task A_subscription_on_a_collection_without_documents_is_created()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var created = await Send(server, HttpMethod.Put, "/databases/db/subscriptions", """{"Query":"from Orders","Name":"Early"}""", HttpStatusCode.Created);
        Assert.Equal("Early", created.GetProperty("Name").GetString());
        var state = await Send(server, HttpMethod.Get, "/databases/db/subscriptions/state?name=Early", null, HttpStatusCode.OK);
        Assert.Equal("from Orders", state.GetProperty("Query").GetString());
        // Still a 400 for a query that does not parse.
        await Send(server, HttpMethod.Put, "/databases/db/subscriptions", """{"Query":"from Orders where","Name":"Bad"}""", HttpStatusCode.BadRequest);
    }

    [Fact]
    public async Task A_batch_put_without_an_id_gets_one()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var answer = await Send(server, HttpMethod.Post, "/databases/db/bulk_docs",
            """{"Commands":[{"Id":null,"Type":"PUT","Document":{"A":1,"@metadata":{"@collection":"Things"}}},{"Id":"","Type":"PUT","Document":{"A":2,"@metadata":{"@collection":"Things"}}},{"Type":"PUT","Document":{"A":3,"@metadata":{"@collection":"Things"}}}]}""",
            HttpStatusCode.Created);
        var ids = answer.GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("@id").GetString()!).ToList();
        Assert.Equal(3, ids.Distinct().Count());
        Assert.All(ids, id => Assert.True(Guid.TryParse(id, out _), id));
        foreach (string id in ids)
            await Send(server, HttpMethod.Get, "/databases/db/docs?id=" + id, null, HttpStatusCode.OK);
        // Other commands still need an id.
        await Send(server, HttpMethod.Post, "/databases/db/bulk_docs", """{"Commands":[{"Id":null,"Type":"DELETE"}]}""", HttpStatusCode.BadRequest);
    }

    [Fact]
    public async Task Compare_exchange_reads_answer_every_key_and_deletes_check_the_index()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var put = await Send(server, HttpMethod.Put, "/databases/db/cmpxchg?key=a&index=0", """{"Object":1}""", HttpStatusCode.OK);
        long index = put.GetProperty("Index").GetInt64();
        var both = await Send(server, HttpMethod.Get, "/databases/db/cmpxchg?key=a&key=b", null, HttpStatusCode.OK);
        var results = both.GetProperty("Results").EnumerateArray().ToList();
        Assert.Equal(["a", "b"], results.Select(r => r.GetProperty("Key").GetString()));
        Assert.Equal(1, results[0].GetProperty("Value").GetProperty("Object").GetInt32());
        Assert.Equal(JsonValueKind.Null, results[1].GetProperty("Value").ValueKind);
        // One missing key alone: RavenDB's 404 (its clients read it as null).
        await Send(server, HttpMethod.Get, "/databases/db/cmpxchg?key=b", null, HttpStatusCode.NotFound);

        // index=0 is not "any index": the value (index > 0) stays.
        var refused = await Send(server, HttpMethod.Delete, "/databases/db/cmpxchg?key=a&index=0", null, HttpStatusCode.OK);
        Assert.False(refused.GetProperty("Successful").GetBoolean());
        Assert.Equal(index, refused.GetProperty("Index").GetInt64());
        await Send(server, HttpMethod.Get, "/databases/db/cmpxchg?key=a", null, HttpStatusCode.OK);
        var deleted = await Send(server, HttpMethod.Delete, $"/databases/db/cmpxchg?key=a&index={index}", null, HttpStatusCode.OK);
        Assert.True(deleted.GetProperty("Successful").GetBoolean());
        await Send(server, HttpMethod.Get, "/databases/db/cmpxchg?key=a", null, HttpStatusCode.NotFound);
    }

    [Fact]
    public async Task Null_ids_read_as_null_results_and_a_disabled_client_configuration_is_answered()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await Send(server, HttpMethod.Put, "/databases/db/docs?id=users/1", """{"Name":"a","@metadata":{"@collection":"Users"}}""", HttpStatusCode.Created);
        var posted = await Send(server, HttpMethod.Post, "/databases/db/docs", """{"Ids":["users/1",null,"users/2"]}""", HttpStatusCode.OK);
        var results = posted.GetProperty("Results").EnumerateArray().ToList();
        Assert.Equal(3, results.Count);
        Assert.Equal("a", results[0].GetProperty("Name").GetString());
        Assert.Equal(JsonValueKind.Null, results[1].ValueKind);
        Assert.Equal(JsonValueKind.Null, results[2].ValueKind);
        var got = await Send(server, HttpMethod.Get, "/databases/db/docs?id=users/1&id=", null, HttpStatusCode.OK);
        Assert.Equal(JsonValueKind.Null, got.GetProperty("Results")[1].ValueKind);
        await Send(server, HttpMethod.Post, "/databases/db/docs", """{"Ids":[1]}""", HttpStatusCode.BadRequest);

        await Send(server, HttpMethod.Put, "/databases/db/admin/configuration/client", """{"Disabled":true,"MaxNumberOfRequestsPerSession":50}""", HttpStatusCode.NoContent);
        var configuration = (await Send(server, HttpMethod.Get, "/databases/db/configuration/client", null, HttpStatusCode.OK)).GetProperty("Configuration");
        Assert.True(configuration.GetProperty("Disabled").GetBoolean());
        Assert.Equal(50, configuration.GetProperty("MaxNumberOfRequestsPerSession").GetInt32());
    }

    [Fact]
    public async Task Detailed_collection_statistics_count_documents_and_their_stored_sizes()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        for (int i = 1; i <= 3; i++)
            await Send(server, HttpMethod.Put, $"/databases/db/docs?id=users/{i}", new JsonObject { ["Name"] = new string('x', 100 * i), ["@metadata"] = new JsonObject { ["@collection"] = "Users" } }.ToJsonString(), HttpStatusCode.Created);
        await Send(server, HttpMethod.Put, "/databases/db/docs?id=orders/1", """{"Total":1,"@metadata":{"@collection":"Orders"}}""", HttpStatusCode.Created);
        await Send(server, HttpMethod.Delete, "/databases/db/docs?id=orders/1", null, HttpStatusCode.NoContent);
        var stats = await Send(server, HttpMethod.Get, "/databases/db/collections/stats/detailed", null, HttpStatusCode.OK);
        Assert.Equal(3, stats.GetProperty("CountOfDocuments").GetInt64());
        var users = stats.GetProperty("Collections").GetProperty("Users");
        Assert.Equal("Users", users.GetProperty("Name").GetString());
        Assert.Equal(3, users.GetProperty("CountOfDocuments").GetInt64());
        long documents = users.GetProperty("DocumentsSize").GetProperty("SizeInBytes").GetInt64();
        Assert.InRange(documents, 600, 600 + 3 * 200); // the names' bytes and each record's header and metadata
        Assert.Equal(documents, users.GetProperty("Size").GetProperty("SizeInBytes").GetInt64());
        Assert.EndsWith("Bytes", users.GetProperty("Size").GetProperty("HumaneSize").GetString(), StringComparison.Ordinal);
        var orders = stats.GetProperty("Collections").GetProperty("Orders");
        Assert.Equal(0, orders.GetProperty("CountOfDocuments").GetInt64());
        Assert.True(orders.GetProperty("TombstonesSize").GetProperty("SizeInBytes").GetInt64() > 0);
    }

    [Fact]
    public async Task Unbounded_time_series_ranges_have_null_ends()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await Send(server, HttpMethod.Put, "/databases/db/docs?id=users/1", """{"Name":"a","@metadata":{"@collection":"Users"}}""", HttpStatusCode.Created);
        await Send(server, HttpMethod.Post, "/databases/db/timeseries?docId=users/1",
            """{"Name":"HeartRate","Appends":[{"Timestamp":"2026-01-01T00:00:00Z","Values":[60]},{"Timestamp":"2026-01-02T00:00:00Z","Values":[70]}]}""", HttpStatusCode.NoContent);
        var whole = await Send(server, HttpMethod.Get, "/databases/db/timeseries?docId=users/1&name=HeartRate", null, HttpStatusCode.OK);
        Assert.Equal(JsonValueKind.Null, whole.GetProperty("From").ValueKind);
        Assert.Equal(JsonValueKind.Null, whole.GetProperty("To").ValueKind);
        Assert.Equal(2, whole.GetProperty("Entries").GetArrayLength());
        var bounded = await Send(server, HttpMethod.Get, "/databases/db/timeseries?docId=users/1&name=HeartRate&from=2026-01-01T12:00:00Z", null, HttpStatusCode.OK);
        Assert.Equal("2026-01-01T12:00:00.0000000Z", bounded.GetProperty("From").GetString());
        Assert.Equal(JsonValueKind.Null, bounded.GetProperty("To").ValueKind);
        var loaded = await Send(server, HttpMethod.Get, "/databases/db/docs?id=users/1&timeseries=HeartRate&from=&to=", null, HttpStatusCode.OK);
        var range = loaded.GetProperty("TimeSeriesIncludes").GetProperty("users/1").GetProperty("HeartRate")[0];
        Assert.Equal(JsonValueKind.Null, range.GetProperty("From").ValueKind);
        Assert.Equal(JsonValueKind.Null, range.GetProperty("To").ValueKind);
    }
    [Fact]
    public async Task Counters_answer_as_RavenDB_does_and_patch_scripts_change_them()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await Send(server, HttpMethod.Put, "/databases/db/docs?id=users/1", """{"Name":"Ann","@metadata":{"@collection":"Users"}}""", HttpStatusCode.Created);
        await Send(server, HttpMethod.Put, "/databases/db/docs?id=users/2", """{"Name":"Bob","@metadata":{"@collection":"Users"}}""", HttpStatusCode.Created);
        await Send(server, HttpMethod.Post, "/databases/db/counters",
            """{"Documents":[{"DocumentId":"users/1","Operations":[{"Type":"Increment","CounterName":"Likes","Delta":3},{"Type":"Increment","CounterName":"Shares","Delta":1}]},{"DocumentId":"users/2","Operations":[{"Type":"Increment","CounterName":"Likes","Delta":1}]}]}""",
            HttpStatusCode.OK);
        // A counter asked for in another casing is answered under that name.
        var read = await Send(server, HttpMethod.Get, "/databases/db/counters?docId=users/1&counter=likes", null, HttpStatusCode.OK);
        Assert.Equal("likes", read.GetProperty("Counters")[0].GetProperty("CounterName").GetString());
        Assert.Equal(3, read.GetProperty("Counters")[0].GetProperty("TotalValue").GetInt64());
        // CountOfCounterEntries counts documents with counters (RavenDB's counter groups), not counters.
        Assert.Equal(2, (await Send(server, HttpMethod.Get, "/databases/db/stats", null, HttpStatusCode.OK)).GetProperty("CountOfCounterEntries").GetInt64());

        // include counters(): every counter, IncludedCounterNames an empty list per document (clients read it as all).
        var all = await Send(server, HttpMethod.Post, "/databases/db/queries", """{"Query":"from Users where Name = 'Ann' include counters()"}""", HttpStatusCode.OK);
        Assert.Equal(JsonValueKind.Array, all.GetProperty("IncludedCounterNames").GetProperty("users/1").ValueKind);
        Assert.Equal(0, all.GetProperty("IncludedCounterNames").GetProperty("users/1").GetArrayLength());
        Assert.Equal(2, all.GetProperty("CounterIncludes").GetProperty("users/1").GetArrayLength());
        // include counters($names) with an array parameter (null names skipped).
        var named = await Send(server, HttpMethod.Post, "/databases/db/queries",
            """{"Query":"from Users where Name = 'Ann' include counters($names)","QueryParameters":{"names":["Likes",null,"Missing"]}}""", HttpStatusCode.OK);
        Assert.Equal(["Likes", "Missing"], named.GetProperty("IncludedCounterNames").GetProperty("users/1").EnumerateArray().Select(n => n.GetString()));
        var details = named.GetProperty("CounterIncludes").GetProperty("users/1").EnumerateArray().ToList();
        Assert.Equal(3, details[0].GetProperty("TotalValue").GetInt64());
        Assert.Equal(JsonValueKind.Null, details[1].ValueKind);

        // Patch scripts: incrementCounter / deleteCounter on this or another document, counter() reads.
        await Send(server, HttpMethod.Patch, "/databases/db/docs?id=users/1",
            """{"Patch":{"Script":"incrementCounter(this, 'Likes', 10); incrementCounter('users/2', 'Likes'); deleteCounter(this, 'Shares'); this.Seen = counter(this, 'Likes');","Values":{}}}""",
            HttpStatusCode.OK);
        var after = await Send(server, HttpMethod.Get, "/databases/db/counters?docId=users/1", null, HttpStatusCode.OK);
        Assert.Equal(["Likes:13"], after.GetProperty("Counters").EnumerateArray().Select(c => $"{c.GetProperty("CounterName").GetString()}:{c.GetProperty("TotalValue").GetInt64()}"));
        Assert.Equal(2, (await Send(server, HttpMethod.Get, "/databases/db/counters?docId=users/2&counter=Likes", null, HttpStatusCode.OK)).GetProperty("Counters")[0].GetProperty("TotalValue").GetInt64());
        var doc = (await Send(server, HttpMethod.Get, "/databases/db/docs?id=users/1", null, HttpStatusCode.OK)).GetProperty("Results")[0];
        Assert.Equal(3, doc.GetProperty("Seen").GetInt64()); // read as the script started
        Assert.Equal(["Likes"], doc.GetProperty("@metadata").GetProperty("@counters").EnumerateArray().Select(n => n.GetString()));
        // Patch by query too; a counter of a missing document fails the patch, nothing written.
        await Send(server, HttpMethod.Patch, "/databases/db/queries?waitForCompletion=true", """{"Query":{"Query":"from Users update { incrementCounter(this, 'Visits', 2); }"}}""", HttpStatusCode.OK);
        var deadline = DateTime.UtcNow.AddSeconds(30);
        long visits = 0;
        while (visits != 2 && DateTime.UtcNow < deadline)
        {
            var v = await Send(server, HttpMethod.Get, "/databases/db/counters?docId=users/2&counter=Visits", null, HttpStatusCode.OK);
            visits = v.GetProperty("Counters")[0].ValueKind == JsonValueKind.Null ? 0 : v.GetProperty("Counters")[0].GetProperty("TotalValue").GetInt64();
            if (visits != 2)
                await Task.Delay(20); // polling the condition, with the deadline above
        }
        Assert.Equal(2, visits);
        await Send(server, HttpMethod.Patch, "/databases/db/docs?id=users/1", """{"Patch":{"Script":"this.X = 1; incrementCounter('users/404', 'Likes');","Values":{}}}""", HttpStatusCode.BadRequest);
        Assert.False((await Send(server, HttpMethod.Get, "/databases/db/docs?id=users/1", null, HttpStatusCode.OK)).GetProperty("Results")[0].TryGetProperty("X", out _));
    }
    [Fact]
    public async Task Compare_exchange_includes_read_document_paths_cache_and_come_from_projections()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await Send(server, HttpMethod.Put, "/databases/db/docs?id=users/1", """{"Name":"Ann","Email":"ann@x","Friend":"users/2","@metadata":{"@collection":"Users"}}""", HttpStatusCode.Created);
        await Send(server, HttpMethod.Put, "/databases/db/docs?id=users/2", """{"Name":"Bob","Email":"bob@x","@metadata":{"@collection":"Users"}}""", HttpStatusCode.Created);
        var put = await Send(server, HttpMethod.Put, "/databases/db/cmpxchg?key=ann@x&index=0", """{"Object":{"Verified":true}}""", HttpStatusCode.OK);

        // A load's cmpxchg= names a path of the documents: the keys are the values there.
        var loaded = await Send(server, HttpMethod.Get, "/databases/db/docs?id=users/1&cmpxchg=Email", null, HttpStatusCode.OK);
        var included = loaded.GetProperty("CompareExchangeValueIncludes");
        Assert.True(included.GetProperty("ann@x").GetProperty("Value").GetProperty("Object").GetProperty("Verified").GetBoolean());
        Assert.False(included.TryGetProperty("Email", out _));

        // A query including compare-exchange values has an ETag; the same query answers 304 until a value changes.
        string body = """{"Query":"from Users where Name = 'Ann' include cmpxchg('Email')"}""";
        var first = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body));
        Assert.Equal(HttpStatusCode.OK, first.StatusCode);
        string etag = first.Headers.ETag!.Tag;
        HttpResponseMessage Again(string tag)
        {
            var request = new HttpRequestMessage(HttpMethod.Post, "/databases/db/queries") { Content = TestServer.Json(body) };
            request.Headers.TryAddWithoutValidation("If-None-Match", tag);
            return server.Http.SendAsync(request).GetAwaiter().GetResult();
        }
        Assert.Equal(HttpStatusCode.NotModified, Again(etag).StatusCode);
        await Send(server, HttpMethod.Put, $"/databases/db/cmpxchg?key=ann@x&index={put.GetProperty("Index").GetInt64()}", """{"Object":{"Verified":false}}""", HttpStatusCode.OK);
        var changed = Again(etag);
        Assert.Equal(HttpStatusCode.OK, changed.StatusCode);
        var fresh = JsonDocument.Parse(await changed.Content.ReadAsStringAsync()).RootElement;
        Assert.False(fresh.GetProperty("CompareExchangeValueIncludes").GetProperty("ann@x").GetProperty("Value").GetProperty("Object").GetProperty("Verified").GetBoolean());

        // includes.cmpxchg() and includes.document() in a JavaScript projection.
        var projected = await Send(server, HttpMethod.Post, "/databases/db/queries",
            """{"Query":"declare function f(u) { includes.cmpxchg(u.Email); includes.document(u.Friend); return { Name: u.Name }; } from Users as u where u.Name = 'Ann' select f(u)"}""",
            HttpStatusCode.OK);
        Assert.Equal("Ann", projected.GetProperty("Results")[0].GetProperty("Name").GetString());
        Assert.True(projected.GetProperty("CompareExchangeValueIncludes").TryGetProperty("ann@x", out _));
        Assert.Equal("Bob", projected.GetProperty("Includes").GetProperty("users/2").GetProperty("Name").GetString());
    }
    [Fact]
    public async Task Input_RavenDB_tolerates_is_taken()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        // Control characters in ids and HiLo tags are stored (not the key separators NUL, U+001E, U+001F).
        await Send(server, HttpMethod.Put, "/databases/db/docs?id=" + Uri.EscapeDataString("tab\there\u0001"), """{"A":1}""", HttpStatusCode.Created);
        var read = await Send(server, HttpMethod.Get, "/databases/db/docs?id=" + Uri.EscapeDataString("tab\there\u0001"), null, HttpStatusCode.OK);
        Assert.Equal("tab\there\u0001", read.GetProperty("Results")[0].GetProperty("@metadata").GetProperty("@id").GetString());
        await Send(server, HttpMethod.Put, "/databases/db/docs?id=" + Uri.EscapeDataString("a\u001eb"), """{"A":1}""", HttpStatusCode.BadRequest);
        var hilo = await Send(server, HttpMethod.Get, "/databases/db/hilo/next?tag=" + Uri.EscapeDataString("odd\u0007tag") + "&lastBatchSize=0&lastRangeAt=&identityPartsSeparator=/&lastMax=0", null, HttpStatusCode.Created);
        Assert.True(hilo.GetProperty("High").GetInt64() > 0);

        // A counter operation without a name is skipped; the others apply.
        await Send(server, HttpMethod.Post, "/databases/db/counters",
            """{"Documents":[{"DocumentId":"tab\there\u0001","Operations":[{"Type":"Increment","CounterName":null,"Delta":5},{"Type":"Increment","CounterName":"Likes","Delta":2}]}]}""", HttpStatusCode.OK);
        var counters = await Send(server, HttpMethod.Get, "/databases/db/counters?docId=" + Uri.EscapeDataString("tab\there\u0001"), null, HttpStatusCode.OK);
        Assert.Equal(["Likes:2"], counters.GetProperty("Counters").EnumerateArray().Select(c => $"{c.GetProperty("CounterName").GetString()}:{c.GetProperty("TotalValue").GetInt64()}"));

        // A bulk insert whose time-series item is followed by the next item without a comma (older clients write that).
        string body = """[{"Id":"users/1","Type":"PUT","Document":{"Name":"A","@metadata":{"@collection":"Users"}}},{"Id":"users/1","Type":"TimeSeriesBulkInsert","TimeSeries":{"Name":"HR","TimeFormat":"UnixTimeInMs","Appends":[[1700000000000,1,72.0]]}}{"Id":"users/2","Type":"PUT","Document":{"Name":"B","@metadata":{"@collection":"Users"}}}]""";
        var inserted = await server.Http.PostAsync("/databases/db/bulk_insert?id=9", TestServer.Json(body));
        Assert.True(inserted.StatusCode == HttpStatusCode.Created, await inserted.Content.ReadAsStringAsync());
        await Send(server, HttpMethod.Get, "/databases/db/docs?id=users/2", null, HttpStatusCode.OK);
        var series = await Send(server, HttpMethod.Get, "/databases/db/timeseries?docId=users/1&name=HR", null, HttpStatusCode.OK);
        Assert.Equal(1, series.GetProperty("Entries").GetArrayLength());
    }
    [Fact]
    public async Task Time_series_ranges_page_together_include_documents_and_the_configuration_is_in_the_record()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await Send(server, HttpMethod.Put, "/databases/db/docs?id=users/1", """{"Name":"Ann","@metadata":{"@collection":"Users"}}""", HttpStatusCode.Created);
        await Send(server, HttpMethod.Put, "/databases/db/docs?id=watches/1", """{"Brand":"W","@metadata":{"@collection":"Watches"}}""", HttpStatusCode.Created);
        var appends = string.Join(",", Enumerable.Range(0, 10).Select(i => $$$"""{"Timestamp":"2026-01-01T00:0{{{i}}}:00.0000000Z","Values":[{{{i}}}],"Tag":"watches/1"}"""));
        await Send(server, HttpMethod.Post, "/databases/db/timeseries?docId=users/1", $$"""{"Name":"HR","Appends":[{{appends}}]}""", HttpStatusCode.NoContent);

        // Two ranges paged together: start skips across both, pageSize counts both.
        var paged = await Send(server, HttpMethod.Get,
            "/databases/db/timeseries/ranges?docId=users/1&name=HR&from=2026-01-01T00:00:00Z&to=2026-01-01T00:03:00Z&name=HR&from=2026-01-01T00:05:00Z&to=2026-01-01T00:09:00Z&start=2&pageSize=4",
            null, HttpStatusCode.OK);
        var ranges = paged.GetProperty("Values").GetProperty("HR").EnumerateArray().ToList();
        Assert.Equal([2.0, 3.0], ranges[0].GetProperty("Entries").EnumerateArray().Select(e => e.GetProperty("Values")[0].GetDouble()));
        Assert.Equal([5.0, 6.0], ranges[1].GetProperty("Entries").EnumerateArray().Select(e => e.GetProperty("Values")[0].GetDouble()));
        // TotalResults only for a range that covers the whole series.
        Assert.False(ranges[0].TryGetProperty("TotalResults", out _));
        var whole = await Send(server, HttpMethod.Get, "/databases/db/timeseries/ranges?docId=users/1&name=HR&from=&to=&includeDocument=true&includeTags=true", null, HttpStatusCode.OK);
        Assert.Equal(10, whole.GetProperty("Values").GetProperty("HR")[0].GetProperty("TotalResults").GetInt64());
        Assert.Equal("Ann", whole.GetProperty("Includes").GetProperty("users/1").GetProperty("Name").GetString());
        Assert.Equal("W", whole.GetProperty("Includes").GetProperty("watches/1").GetProperty("Brand").GetString());

        // The configuration is in the database record; a policy kept shorter than its period, or months against seconds, is refused.
        await Send(server, HttpMethod.Post, "/databases/db/admin/timeseries/config",
            """{"Collections":{"Users":{"Policies":[{"Name":"ByHour","AggregationTime":{"Value":3600,"Unit":"Second"},"RetentionTime":{"Value":864000,"Unit":"Second"}}]}}}""", HttpStatusCode.OK);
        var record = await Send(server, HttpMethod.Get, "/admin/databases?name=db", null, HttpStatusCode.OK);
        Assert.Equal("ByHour", record.GetProperty("TimeSeries").GetProperty("Collections").GetProperty("Users").GetProperty("Policies")[0].GetProperty("Name").GetString());
        var shorter = await Send(server, HttpMethod.Post, "/databases/db/admin/timeseries/config",
            """{"Collections":{"Users":{"Policies":[{"Name":"ByDay","AggregationTime":{"Value":86400,"Unit":"Second"},"RetentionTime":{"Value":3600,"Unit":"Second"}}]}}}""", HttpStatusCode.BadRequest);
        Assert.Contains("must be greater than its aggregation time (1 day)", shorter.GetProperty("Message").GetString());
        var months = await Send(server, HttpMethod.Post, "/databases/db/admin/timeseries/config",
            """{"Collections":{"Users":{"Policies":[{"Name":"ByMonth","AggregationTime":{"Value":1,"Unit":"Month"},"RetentionTime":{"Value":2592000,"Unit":"Second"}}]}}}""", HttpStatusCode.BadRequest);
        Assert.Contains("since a month might have different number of days", months.GetProperty("Message").GetString()); // 30 days against a month
        // Unambiguous across units: a month kept 5 years, a minute kept 1 month.
        await Send(server, HttpMethod.Post, "/databases/db/admin/timeseries/config",
            """{"Collections":{"Users":{"Policies":[{"Name":"ByMonth","AggregationTime":{"Value":1,"Unit":"Month"},"RetentionTime":{"Value":60,"Unit":"Month"}},{"Name":"ByMinute","AggregationTime":{"Value":60,"Unit":"Second"},"RetentionTime":{"Value":1,"Unit":"Month"}}]}}}""", HttpStatusCode.OK);
    }

    [Fact]
    public async Task Attachments_and_revisions_take_etags_of_their_own_as_RavenDB_numbers_them()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        static long Etag(string changeVector) => long.Parse(changeVector[2..changeVector.IndexOf('-', StringComparison.Ordinal)], System.Globalization.CultureInfo.InvariantCulture);
        var put = await Send(server, HttpMethod.Put, "/databases/db/docs?id=users/1", """{"N":1,"@metadata":{"@collection":"Users"}}""", HttpStatusCode.Created);
        long first = Etag(put.GetProperty("ChangeVector").GetString()!);
        // The attachment takes the next etag (its change vector), the document's new version the one after.
        using (var request = new HttpRequestMessage(HttpMethod.Put, "/databases/db/attachments?id=users/1&name=a.txt") { Content = new StringContent("hello") })
        {
            var r = await server.Http.SendAsync(request);
            Assert.Equal(HttpStatusCode.Created, r.StatusCode);
            Assert.Equal(first + 1, Etag((await TestServer.ReadJson(r)).GetProperty("ChangeVector").GetString()!));
        }
        var doc = await Send(server, HttpMethod.Get, "/databases/db/docs?id=users/1", null, HttpStatusCode.OK);
        Assert.Equal(first + 2, Etag(doc.GetProperty("Results")[0].GetProperty("@metadata").GetProperty("@change-vector").GetString()!));
        // Removing it: a tombstone's etag, then the document's.
        using (var request = new HttpRequestMessage(HttpMethod.Delete, "/databases/db/attachments?id=users/1&name=a.txt"))
            Assert.Equal(HttpStatusCode.NoContent, (await server.Http.SendAsync(request)).StatusCode);
        doc = await Send(server, HttpMethod.Get, "/databases/db/docs?id=users/1", null, HttpStatusCode.OK);
        Assert.Equal(first + 4, Etag(doc.GetProperty("Results")[0].GetProperty("@metadata").GetProperty("@change-vector").GetString()!));

        // With revisions kept, each version's revision takes the etag after the version's.
        await Send(server, HttpMethod.Post, "/databases/db/admin/revisions/config", """{"Default":{"Disabled":false}}""", HttpStatusCode.OK);
        var v1 = await Send(server, HttpMethod.Put, "/databases/db/docs?id=users/2", """{"N":1,"@metadata":{"@collection":"Users"}}""", HttpStatusCode.Created);
        var v2 = await Send(server, HttpMethod.Put, "/databases/db/docs?id=users/2", """{"N":2,"@metadata":{"@collection":"Users"}}""", HttpStatusCode.Created);
        Assert.Equal(first + 5, Etag(v1.GetProperty("ChangeVector").GetString()!));
        Assert.Equal(first + 7, Etag(v2.GetProperty("ChangeVector").GetString()!));

        // In a batch, an attachment command answers the attachment's change vector and the document's after it.
        using (var request = new HttpRequestMessage(HttpMethod.Put, "/databases/db/attachments?id=users/2&name=a.txt") { Content = new StringContent("hello") })
            Assert.Equal(HttpStatusCode.Created, (await server.Http.SendAsync(request)).StatusCode);
        var before = await Send(server, HttpMethod.Get, "/databases/db/docs?id=users/2", null, HttpStatusCode.OK);
        long held = Etag(before.GetProperty("Results")[0].GetProperty("@metadata").GetProperty("@change-vector").GetString()!);
        var copy = (await Send(server, HttpMethod.Post, "/databases/db/bulk_docs",
            """{"Commands":[{"Type":"AttachmentCOPY","Id":"users/2","Name":"a.txt","DestinationId":"users/2","DestinationName":"b.txt"}]}""",
            HttpStatusCode.Created)).GetProperty("Results")[0];
        Assert.Equal(held + 2, Etag(copy.GetProperty("ChangeVector").GetString()!)); // the version's revision took held + 1
        Assert.Equal(held + 3, Etag(copy.GetProperty("DocumentChangeVector").GetString()!));
    }
}
