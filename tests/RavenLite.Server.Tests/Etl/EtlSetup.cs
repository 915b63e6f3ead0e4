namespace RavenLite.Server.Tests.Etl;

/// <summary>
/// The orders the ETL tests write and what their script makes of them: one <c>Orders</c> row per order (its customer
/// and total) and one <c>OrderLines</c> row per line, so a checker can compare PostgreSQL with the transform of the
/// source exactly.
/// </summary>
internal static class EtlSetup
{
    public const string Tables = """
        CREATE TABLE "Orders" ("Id" text NOT NULL, "Customer" text, "Total" double precision);
        CREATE INDEX ON "Orders" ("Id");
        CREATE TABLE "OrderLines" ("OrderId" text NOT NULL, "Product" text, "Quantity" int, "Price" double precision);
        CREATE INDEX ON "OrderLines" ("OrderId");
        """;

    public const string Script = """
        var total = 0;
        for (var i = 0; i < this.Lines.length; i++) {
            var l = this.Lines[i];
            total += l.Quantity * l.Price;
            loadToOrderLines({ Product: l.Product, Quantity: l.Quantity, Price: l.Price });
        }
        loadToOrders({ Customer: this.Customer, Total: total });
        """;

    public const string OrdersSql = """SELECT "Id", "Customer", "Total" FROM "Orders" """;

    public const string LinesSql = """SELECT "OrderId", "Product", "Quantity", "Price" FROM "OrderLines" """;

    /// <summary>Order <paramref name="i"/> (version <paramref name="version"/>): 1 to 3 lines.</summary>
    public static string Order(int i, int version = 0) => new JsonObject
    {
        ["Customer"] = $"customers/{(i + version) % 7}",
        ["Lines"] = new JsonArray([.. Enumerable.Range(0, 1 + (i + version) % 3).Select(j => (JsonNode)new JsonObject
        {
            ["Product"] = $"products/{j}",
            ["Quantity"] = j + 1 + version,
            ["Price"] = i % 5 + 1,
        })]),
        ["@metadata"] = new JsonObject { ["@collection"] = "Orders" },
    }.ToJsonString();

    /// <summary>Puts the SQL connection string and the task (script <paramref name="script"/>); returns the task id.</summary>
    public static async Task<long> AddSqlEtlAsync(HttpClient http, string database, string connectionString, string script = Script, string name = "orders-to-pg")
    {
        var cs = new JsonObject { ["Name"] = "pg", ["Type"] = "Sql", ["FactoryName"] = "Npgsql", ["ConnectionString"] = connectionString };
        var r = await http.PutAsync($"/databases/{database}/admin/connection-strings", TestServer.Json(cs.ToJsonString()));
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        r = await http.PutAsync($"/databases/{database}/admin/etl", TestServer.Json(SqlConfiguration(script, name).ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(r.IsSuccessStatusCode, json.ToString());
        return json.GetProperty("TaskId").GetInt64();
    }

    public static JsonObject SqlConfiguration(string script, string name = "orders-to-pg") => new()
    {
        ["Name"] = name,
        ["EtlType"] = "Sql",
        ["ConnectionStringName"] = "pg",
        ["SqlTables"] = new JsonArray(
            new JsonObject { ["TableName"] = "Orders", ["DocumentIdColumn"] = "Id" },
            new JsonObject { ["TableName"] = "OrderLines", ["DocumentIdColumn"] = "OrderId" }),
        ["Transforms"] = new JsonArray(new JsonObject { ["Name"] = "orders", ["Collections"] = new JsonArray("Orders"), ["Script"] = script }),
    };

    /// <summary>The task's first transformation as <c>GET /task</c> reports it.</summary>
    public static async Task<JsonElement> TransformationAsync(HttpClient http, string database, long taskId)
    {
        var task = await TestServer.ReadJson(await http.GetAsync($"/databases/{database}/task?key={taskId}&type=SqlEtl"));
        return task.GetProperty("Transformations")[0];
    }

    /// <summary>The rows the script makes of every order now in <paramref name="database"/>: (Orders, OrderLines), sorted as LocalPostgres.Rows gives them.</summary>
    public static async Task<(List<string> Orders, List<string> Lines)> ExpectedAsync(HttpClient http, string database)
    {
        var orders = new List<string>();
        var lines = new List<string>();
        for (int start = 0; ; start += 1024)
        {
            var page = await TestServer.ReadJson(await http.GetAsync($"/databases/{database}/docs?startsWith=orders/&start={start}&pageSize=1024"));
            var results = page.GetProperty("Results").EnumerateArray().ToList();
            foreach (var doc in results)
            {
                if (!doc.TryGetProperty("Lines", out var docLines))
                    continue; // an order without lines: the tests' fixed scripts skip it
                string id = doc.GetProperty("@metadata").GetProperty("@id").GetString()!;
                double total = 0;
                foreach (var l in docLines.EnumerateArray())
                {
                    double q = l.GetProperty("Quantity").GetDouble(), p = l.GetProperty("Price").GetDouble();
                    total += q * p;
                    lines.Add(FormattableString.Invariant($"{id}|{l.GetProperty("Product").GetString()}|{q}|{p}"));
                }
                orders.Add(FormattableString.Invariant($"{id}|{doc.GetProperty("Customer").GetString()}|{total}"));
            }
            if (results.Count < 1024)
                break;
        }
        orders.Sort(StringComparer.Ordinal);
        lines.Sort(StringComparer.Ordinal);
        return (orders, lines);
    }

    /// <summary>What differs between the expected and the actual rows (for a failure's message).</summary>
    public static string Difference(List<string> expected, List<string> actual) =>
        $"{expected.Count} expected, {actual.Count} present; missing: {string.Join(", ", expected.Except(actual).Take(5))}; extra or duplicated: {string.Join(", ", Extra(expected, actual).Take(5))}";

    private static IEnumerable<string> Extra(List<string> expected, List<string> actual)
    {
        var left = expected.GroupBy(x => x).ToDictionary(g => g.Key, g => g.Count());
        foreach (string a in actual)
        {
            if (left.TryGetValue(a, out int n) && n > 0)
                left[a] = n - 1;
            else
                yield return a;
        }
    }
}
