namespace RavenLite.Server.Tests.Etl;

/// <summary>
/// RavenDB ETL into a database on another server (docs/etl.md "RavenDB ETL"): RavenDB's id scheme for documents
/// loaded to another collection, replaced (not accumulated) when their source changes; attachments and counters the
/// script adds; a deletion behaviour function; an empty script copying documents with their extensions.
/// </summary>
public sealed class RavenEtlTests
{
    private static async Task<long> AddAsync(TestServer source, TestServer destination, string script)
    {
        var cs = new JsonObject { ["Name"] = "dst", ["Type"] = "Raven", ["Database"] = "dst", ["TopologyDiscoveryUrls"] = new JsonArray(destination.Url.ToString().TrimEnd('/')) };
        Assert.True((await source.Http.PutAsync("/databases/src/admin/connection-strings", TestServer.Json(cs.ToJsonString()))).IsSuccessStatusCode);
        var config = new JsonObject
        {
            ["Name"] = "copy",
            ["EtlType"] = "Raven",
            ["ConnectionStringName"] = "dst",
            ["Transforms"] = new JsonArray(new JsonObject { ["Name"] = "orders", ["Collections"] = new JsonArray("Orders"), ["Script"] = script }),
        };
        var r = await source.Http.PutAsync("/databases/src/admin/etl", TestServer.Json(config.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(r.IsSuccessStatusCode, json.ToString());
        return json.GetProperty("TaskId").GetInt64();
    }

    private static async Task<List<string>> IdsAsync(TestServer server, string prefix)
    {
        var page = await TestServer.ReadJson(await server.Http.GetAsync($"/databases/dst/docs?startsWith={Uri.EscapeDataString(prefix)}&metadataOnly=true"));
        return [.. page.GetProperty("Results").EnumerateArray().Select(d => d.GetProperty("@metadata").GetProperty("@id").GetString()!)];
    }

    private static async Task CaughtUpAsync(TestServer source, long taskId) =>
        await Eventually.HoldsAsync(async () =>
        {
            var t = (await TestServer.ReadJson(await source.Http.GetAsync($"/databases/src/task?key={taskId}&type=RavenEtl"))).GetProperty("Transformations")[0];
            return t.GetProperty("EtagLag").GetInt64() == 0 && t.GetProperty("State").GetString() == "Running";
        }, "the ETL caught up");

    [Fact]
    public async Task Documents_loaded_to_another_collection_take_RavenDB_ids_are_replaced_on_change_and_carry_what_the_script_adds()
    {
        await using var source = await TestServer.StartWithDatabaseAsync("src");
        await using var destination = await TestServer.StartWithDatabaseAsync("dst");
        await ReplicationSetup.PutAsync(source.Http, "src", "orders/1", EtlSetup.Order(1));
        await ReplicationSetup.PutAsync(source.Http, "src", "orders/2", EtlSetup.Order(2));
        Assert.True((await source.Http.PutAsync("/databases/src/attachments?id=orders/1&name=invoice.pdf", new ByteArrayContent([1, 2, 3]))).IsSuccessStatusCode);
        var counters = new JsonObject { ["DocumentId"] = "orders/1", ["Operations"] = new JsonArray(new JsonObject { ["Type"] = "Increment", ["CounterName"] = "views", ["Delta"] = 7 }) };
        Assert.True((await source.Http.PostAsync("/databases/src/counters", TestServer.Json(new JsonObject { ["Documents"] = new JsonArray(counters) }.ToJsonString()))).IsSuccessStatusCode);
        const string script = """
            var summary = loadToOrders({ Customer: this.Customer, Lines: this.Lines.length });
            if (hasAttachment('invoice.pdf'))
                summary.addAttachment('invoice', loadAttachment('invoice.pdf'));
            summary.addCounter(loadCounter('views'));
            for (var i = 0; i < this.Lines.length; i++)
                loadToLines({ Product: this.Lines[i].Product });
            function deleteDocumentsOfOrdersBehavior(docId, deleted) { return !(deleted && docId === 'orders/2'); }
            """;
        long taskId = await AddAsync(source, destination, script);
        await CaughtUpAsync(source, taskId);

        var order = (await ReplicationSetup.GetAsync(destination.Http, "dst", "orders/1"))!.Value;
        Assert.Equal("customers/1", order.GetProperty("Customer").GetString());
        Assert.Equal(2, order.GetProperty("Lines").GetInt32());
        Assert.Equal("invoice", order.GetProperty("@metadata").GetProperty("@attachments")[0].GetProperty("Name").GetString());
        var attachment = await destination.Http.GetAsync("/databases/dst/attachments?id=orders/1&name=invoice");
        Assert.Equal(new byte[] { 1, 2, 3 }, await attachment.Content.ReadAsByteArrayAsync());
        var views = await TestServer.ReadJson(await destination.Http.GetAsync("/databases/dst/counters?docId=orders/1&counter=views"));
        Assert.Equal(7, views.GetProperty("Counters")[0].GetProperty("TotalValue").GetInt64());
        var lines = await IdsAsync(destination, "orders/1/lines/");
        Assert.Equal(2, lines.Count);
        Assert.All(lines, id => Assert.Matches(@"^orders/1/lines/\d{19}-A(-2)?$", id));

        // A change replaces what the document loaded before: one line now, under the new version's id.
        await ReplicationSetup.PutAsync(source.Http, "src", "orders/1", """{"Customer":"c","Lines":[{"Product":"p"}],"@metadata":{"@collection":"Orders"}}""");
        await CaughtUpAsync(source, taskId);
        lines = await IdsAsync(destination, "orders/1/lines/");
        Assert.Single(lines);
        Assert.Equal("p", (await ReplicationSetup.GetAsync(destination.Http, "dst", lines[0]))!.Value.GetProperty("Product").GetString());

        // Deletes follow, except where the behaviour function keeps the copy.
        Assert.Equal(HttpStatusCode.NoContent, (await source.Http.DeleteAsync("/databases/src/docs?id=orders/1")).StatusCode);
        Assert.Equal(HttpStatusCode.NoContent, (await source.Http.DeleteAsync("/databases/src/docs?id=orders/2")).StatusCode);
        await CaughtUpAsync(source, taskId);
        Assert.Null(await ReplicationSetup.GetAsync(destination.Http, "dst", "orders/1"));
        Assert.Empty(await IdsAsync(destination, "orders/1/"));
        Assert.NotNull(await ReplicationSetup.GetAsync(destination.Http, "dst", "orders/2"));
    }

    [Fact]
    public async Task An_empty_script_copies_documents_with_their_attachments_counters_and_time_series()
    {
        await using var source = await TestServer.StartWithDatabaseAsync("src");
        await using var destination = await TestServer.StartWithDatabaseAsync("dst");
        await ReplicationSetup.PutAsync(source.Http, "src", "orders/1", EtlSetup.Order(1));
        Assert.True((await source.Http.PutAsync("/databases/src/attachments?id=orders/1&name=a.txt", new ByteArrayContent("hello"u8.ToArray()))).IsSuccessStatusCode);
        var counters = new JsonObject { ["DocumentId"] = "orders/1", ["Operations"] = new JsonArray(new JsonObject { ["Type"] = "Increment", ["CounterName"] = "likes", ["Delta"] = 3 }) };
        Assert.True((await source.Http.PostAsync("/databases/src/counters", TestServer.Json(new JsonObject { ["Documents"] = new JsonArray(counters) }.ToJsonString()))).IsSuccessStatusCode);
        var ts = new JsonObject { ["Name"] = "Heart", ["Appends"] = new JsonArray(new JsonObject { ["Timestamp"] = "2026-01-01T00:00:00Z", ["Values"] = new JsonArray(70) }) };
        Assert.True((await source.Http.PostAsync("/databases/src/timeseries?docId=orders/1", TestServer.Json(ts.ToJsonString()))).IsSuccessStatusCode);
        long taskId = await AddAsync(source, destination, "");
        await CaughtUpAsync(source, taskId);
        var copy = (await ReplicationSetup.GetAsync(destination.Http, "dst", "orders/1"))!.Value;
        Assert.Equal("customers/1", copy.GetProperty("Customer").GetString());
        Assert.Equal("hello", await (await destination.Http.GetAsync("/databases/dst/attachments?id=orders/1&name=a.txt")).Content.ReadAsStringAsync());
        Assert.Equal(3, (await TestServer.ReadJson(await destination.Http.GetAsync("/databases/dst/counters?docId=orders/1&counter=likes"))).GetProperty("Counters")[0].GetProperty("TotalValue").GetInt64());
        var series = await TestServer.ReadJson(await destination.Http.GetAsync("/databases/dst/timeseries?docId=orders/1&name=Heart"));
        Assert.Equal(70, series.GetProperty("Entries")[0].GetProperty("Values")[0].GetDouble());
    }
}
