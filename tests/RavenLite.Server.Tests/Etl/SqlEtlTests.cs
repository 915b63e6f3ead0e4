namespace RavenLite.Server.Tests.Etl;

/// <summary>
/// SQL ETL's script handling, test endpoint and refusals (docs/etl.md): a failing script stops the task naming the
/// document and line, and a fixed script resumes it; <c>POST /admin/etl/sql/test</c> shows the statements; bad
/// configurations are a 400 that leaves nothing behind.
/// </summary>
public sealed class SqlEtlTests
{
    [Fact]
    public async Task A_script_error_stops_the_task_naming_the_document_and_line_and_a_fixed_script_resumes_it()
    {
        using var dir = new TempDirectory();
        using var pg = LocalPostgres.Start(dir.Path);
        pg.Execute(EtlSetup.Tables);
        await using var server = await TestServer.StartWithDatabaseAsync("shop");
        for (int i = 1; i <= 5; i++)
            await ReplicationSetup.PutAsync(server.Http, "shop", $"orders/{i}", EtlSetup.Order(i));
        await ReplicationSetup.PutAsync(server.Http, "shop", "orders/3", """{"Customer":"broken","@metadata":{"@collection":"Orders"}}"""); // no Lines
        string failing = "var n = 0;\nif (!this.Lines) throw new Error('order without lines');\n" + EtlSetup.Script;
        long taskId = await EtlSetup.AddSqlEtlAsync(server.Http, "shop", pg.ConnectionString, failing);
        JsonElement t = default;
        await Eventually.HoldsAsync(async () => (t = await EtlSetup.TransformationAsync(server.Http, "shop", taskId)).GetProperty("State").GetString() == "Error", "the task stopped");
        string error = t.GetProperty("Error").GetString()!;
        Assert.Contains("'orders/3'", error, StringComparison.Ordinal);
        Assert.Contains("line 2", error, StringComparison.Ordinal);
        Assert.Contains("order without lines", error, StringComparison.Ordinal);
        var task = await TestServer.ReadJson(await server.Http.GetAsync($"/databases/shop/task?key={taskId}&type=SqlEtl"));
        Assert.Equal(error, task.GetProperty("Error").GetString());
        Assert.Equal("Reconnect", task.GetProperty("TaskConnectionStatus").GetString());

        // Fixed (documents without lines are skipped), it resumes from where it stopped.
        var fixedConfig = EtlSetup.SqlConfiguration("if (!this.Lines) return;\n" + EtlSetup.Script);
        var r = await server.Http.PutAsync($"/databases/shop/admin/etl?id={taskId}", TestServer.Json(fixedConfig.ToJsonString()));
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        await Eventually.HoldsAsync(async () => (await EtlSetup.TransformationAsync(server.Http, "shop", taskId)).GetProperty("EtagLag").GetInt64() == 0, "the fixed task caught up");
        var rows = pg.Rows(EtlSetup.OrdersSql);
        Assert.Equal(["orders/1", "orders/2", "orders/4", "orders/5"], rows.Select(x => x.Split('|')[0]));
        Assert.Equal("Running", (await EtlSetup.TransformationAsync(server.Http, "shop", taskId)).GetProperty("State").GetString());
    }

    [Fact]
    public async Task The_test_endpoint_shows_the_statements_and_a_rolled_back_run_reports_PostgreSQL_errors()
    {
        using var dir = new TempDirectory();
        using var pg = LocalPostgres.Start(dir.Path);
        pg.Execute(EtlSetup.Tables);
        await using var server = await TestServer.StartWithDatabaseAsync("shop");
        await ReplicationSetup.PutAsync(server.Http, "shop", "orders/1", EtlSetup.Order(1));
        var cs = new JsonObject { ["Name"] = "pg", ["Type"] = "Sql", ["FactoryName"] = "Npgsql", ["ConnectionString"] = pg.ConnectionString };
        Assert.True((await server.Http.PutAsync("/databases/shop/admin/connection-strings", TestServer.Json(cs.ToJsonString()))).IsSuccessStatusCode);
        var config = EtlSetup.SqlConfiguration("output('total of ' + id(this));\n" + EtlSetup.Script);
        config["ParameterizeDeletes"] = false;
        var body = new JsonObject { ["DocumentId"] = "orders/1", ["Configuration"] = config, ["PerformRolledBackTransaction"] = true };
        var result = await TestServer.ReadJson(await server.Http.PostAsync("/databases/shop/admin/etl/sql/test", TestServer.Json(body.ToJsonString())));
        Assert.Empty(result.GetProperty("TransformationErrors").EnumerateArray());
        Assert.Empty(result.GetProperty("LoadErrors").EnumerateArray());
        Assert.Equal("total of orders/1", result.GetProperty("DebugOutput")[0].GetString());
        var orders = result.GetProperty("Summary").EnumerateArray().Single(s => s.GetProperty("TableName").GetString() == "Orders").GetProperty("Commands").EnumerateArray().ToList();
        Assert.Equal("""DELETE FROM "Orders" WHERE "Id" IN ('orders/1')""", orders[0].GetProperty("CommandText").GetString());
        Assert.Equal("""COPY "Orders" ("Id", "Customer", "Total") FROM STDIN""", orders[1].GetProperty("CommandText").GetString());
        Assert.Equal("'customers/1'", orders[1].GetProperty("Params").EnumerateArray().Single(p => p.GetProperty("Key").GetString() == "Customer").GetProperty("Value").GetString());
        Assert.Empty(pg.Rows(EtlSetup.OrdersSql)); // rolled back: nothing (there is no task)

        // A column the table lacks: the rolled-back run reports PostgreSQL's error, and nothing is loaded by the test.
        config["Transforms"]![0]!["Script"] = "loadToOrders({ Missing: 1 });";
        body["Configuration"] = config.DeepClone();
        result = await TestServer.ReadJson(await server.Http.PostAsync("/databases/shop/admin/etl/sql/test", TestServer.Json(body.ToJsonString())));
        Assert.Contains("Missing", result.GetProperty("LoadErrors")[0].GetString(), StringComparison.Ordinal);
    }

    /// <summary>
    /// A batch's script runs are split between engines on several threads: the error is still the first failing
    /// document in etag order (here both halves of the first chunk fail), and after the fix the rows are exactly the
    /// transform of the source.
    /// </summary>
    [Fact]
    public async Task Scripts_on_several_threads_stop_at_the_first_failing_document_in_etag_order()
    {
        using var dir = new TempDirectory();
        using var pg = LocalPostgres.Start(dir.Path);
        pg.Execute(EtlSetup.Tables);
        await using var server = await TestServer.StartWithDatabaseAsync("shop");
        var commands = new JsonArray();
        for (int i = 0; i < 300; i++)
            commands.Add(new JsonObject { ["Id"] = $"orders/{i:D3}", ["Type"] = "PUT", ["Document"] = JsonNode.Parse(i is 100 or 200 ? """{"Customer":"broken","@metadata":{"@collection":"Orders"}}""" : EtlSetup.Order(i)) });
        var put = await server.Http.PostAsync("/databases/shop/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()));
        Assert.True(put.IsSuccessStatusCode, await put.Content.ReadAsStringAsync());
        long taskId = await EtlSetup.AddSqlEtlAsync(server.Http, "shop", pg.ConnectionString, "if (!this.Lines) throw new Error('order without lines');\n" + EtlSetup.Script);
        JsonElement t = default;
        await Eventually.HoldsAsync(async () => (t = await EtlSetup.TransformationAsync(server.Http, "shop", taskId)).GetProperty("State").GetString() == "Error", "the task stopped");
        Assert.Contains("'orders/100'", t.GetProperty("Error").GetString(), StringComparison.Ordinal);
        Assert.Empty(pg.Rows(EtlSetup.OrdersSql)); // the batch with the failure loaded nothing

        var r = await server.Http.PutAsync($"/databases/shop/admin/etl?id={taskId}", TestServer.Json(EtlSetup.SqlConfiguration("if (!this.Lines) return;\n" + EtlSetup.Script).ToJsonString()));
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        await Eventually.HoldsAsync(async () => (await EtlSetup.TransformationAsync(server.Http, "shop", taskId)).GetProperty("EtagLag").GetInt64() == 0, "the fixed task caught up");
        var (orders, lines) = await EtlSetup.ExpectedAsync(server.Http, "shop");
        var actualOrders = pg.Rows(EtlSetup.OrdersSql);
        var actualLines = pg.Rows(EtlSetup.LinesSql);
        Assert.True(orders.SequenceEqual(actualOrders), EtlSetup.Difference(orders, actualOrders));
        Assert.True(lines.SequenceEqual(actualLines), EtlSetup.Difference(lines, actualLines));
        Assert.Equal(298, actualOrders.Count);
    }

    [Fact]
    public async Task Bad_configurations_are_refused_with_a_clear_400_and_leave_nothing()
    {
        await using var server = await TestServer.StartWithDatabaseAsync("shop");
        async Task<string> Refused(string path, JsonObject body)
        {
            var r = await server.Http.PutAsync(path, TestServer.Json(body.ToJsonString()));
            string text = await r.Content.ReadAsStringAsync();
            Assert.True(r.StatusCode == HttpStatusCode.BadRequest, $"{r.StatusCode}: {text}");
            return text;
        }
        Assert.Contains("PostgreSQL only", await Refused("/databases/shop/admin/connection-strings",
            new JsonObject { ["Name"] = "mssql", ["Type"] = "Sql", ["FactoryName"] = "System.Data.SqlClient", ["ConnectionString"] = "Server=x" }), StringComparison.Ordinal);
        Assert.Contains("no Sql connection string named 'pg'", await Refused("/databases/shop/admin/etl", EtlSetup.SqlConfiguration(EtlSetup.Script)), StringComparison.Ordinal);
        var ok = await server.Http.PutAsync("/databases/shop/admin/connection-strings", TestServer.Json(
            new JsonObject { ["Name"] = "pg", ["Type"] = "Sql", ["FactoryName"] = "Npgsql", ["ConnectionString"] = "Host=127.0.0.1;Port=1;Username=u" }.ToJsonString()));
        Assert.True(ok.IsSuccessStatusCode);
        Assert.Contains("'Customers', which is not among the task's SqlTables", await Refused("/databases/shop/admin/etl", EtlSetup.SqlConfiguration("loadToCustomers({});")), StringComparison.Ordinal);
        Assert.Contains("does not parse: line 2", await Refused("/databases/shop/admin/etl", EtlSetup.SqlConfiguration("var a = 1;\nloadToOrders({)")), StringComparison.Ordinal);
        Assert.Contains("EtlType 'Olap'", await Refused("/databases/shop/admin/etl", new JsonObject { ["Name"] = "x", ["EtlType"] = "Olap", ["ConnectionStringName"] = "pg" }), StringComparison.Ordinal);
        var tasks = await TestServer.ReadJson(await server.Http.GetAsync("/databases/shop/tasks"));
        Assert.Empty(tasks.GetProperty("OngoingTasks").EnumerateArray());

        // The Sql connection string is listed beside the Raven ones, and cannot go while a task uses it.
        var strings = await TestServer.ReadJson(await server.Http.GetAsync("/databases/shop/admin/connection-strings?type=Sql"));
        Assert.Equal("Npgsql", strings.GetProperty("SqlConnectionStrings").GetProperty("pg").GetProperty("FactoryName").GetString());
        Assert.True((await server.Http.PutAsync("/databases/shop/admin/etl", TestServer.Json(EtlSetup.SqlConfiguration(EtlSetup.Script).ToJsonString()))).IsSuccessStatusCode);
        var delete = await server.Http.DeleteAsync("/databases/shop/admin/connection-strings?connectionString=pg&type=Sql");
        Assert.Equal(HttpStatusCode.BadRequest, delete.StatusCode);
        Assert.Contains("used by ETL task 'orders-to-pg'", await delete.Content.ReadAsStringAsync(), StringComparison.Ordinal);
    }
}
