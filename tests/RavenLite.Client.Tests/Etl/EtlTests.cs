using RavenLite.Client.Etl;
using RavenLite.Client.Replication;
using RavenLite.TestKit;

namespace RavenLite.Client.Tests.Etl;

/// <summary>
/// ETL set up through the .NET client (PutConnectionStringOperation, AddEtlOperation, UpdateEtlOperation,
/// ResetEtlOperation): SQL ETL into a real PostgreSQL this test starts, RavenDB ETL into another database.
/// </summary>
public sealed class EtlTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    public sealed class Line
    {
        public string Product { get; set; } = "";
        public int Quantity { get; set; }
        public double Price { get; set; }
    }

    public sealed class Order
    {
        public string Customer { get; set; } = "";
        public List<Line> Lines { get; set; } = [];
    }

    private const string OrdersScript = """
        var total = 0;
        for (var i = 0; i < this.Lines.length; i++) {
            var l = this.Lines[i];
            total += l.Quantity * l.Price;
            loadToOrderLines({ Product: l.Product, Quantity: l.Quantity, Price: l.Price });
        }
        loadToOrders({ Customer: this.Customer, Total: total });
        """;

    private static Order NewOrder(int i) => new()
    {
        Customer = "customers/" + (i % 7),
        Lines = [.. Enumerable.Range(0, 1 + i % 3).Select(j => new Line { Product = $"products/{j}", Quantity = j + 1, Price = 2.5 * (i % 5 + 1) })],
    };

    /// <summary>The rows the script makes of <paramref name="orders"/>: (Orders, OrderLines), as LocalPostgres.Rows formats them.</summary>
    private static (List<string> Orders, List<string> Lines) Expected(IReadOnlyDictionary<string, Order> orders, bool withCount = false)
    {
        var o = new List<string>();
        var l = new List<string>();
        foreach (var (id, order) in orders)
        {
            double total = 0;
            foreach (var line in order.Lines)
            {
                total += line.Quantity * line.Price;
                l.Add(FormattableString.Invariant($"{id}|{line.Product}|{line.Quantity}|{line.Price}"));
            }
            o.Add(withCount ? FormattableString.Invariant($"{id}|{order.Customer}|{total}|{order.Lines.Count}") : FormattableString.Invariant($"{id}|{order.Customer}|{total}"));
        }
        o.Sort(StringComparer.Ordinal);
        l.Sort(StringComparer.Ordinal);
        return (o, l);
    }

    private static async Task Eventually(Func<bool> condition, string what)
    {
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (!condition())
        {
            if (DateTime.UtcNow > deadline)
                throw new TimeoutException("timed out waiting for " + what);
            await Task.Delay(50);
        }
    }

    [Fact]
    public async Task Sql_etl_loads_orders_and_lines_into_PostgreSQL_follows_changes_and_a_reset_reloads_under_a_new_script()
    {
        using var dir = new TempDirectory();
        using var pg = LocalPostgres.Start(dir.Path);
        pg.Execute("""
            CREATE TABLE "Orders" ("Id" text NOT NULL, "Customer" text, "Total" double precision, "LineCount" int);
            CREATE INDEX ON "Orders" ("Id");
            CREATE TABLE "OrderLines" ("OrderId" text NOT NULL, "Product" text, "Quantity" int, "Price" double precision);
            CREATE INDEX ON "OrderLines" ("OrderId");
            """);
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var orders = new Dictionary<string, Order>();
        using (var s = store.OpenAsyncSession())
        {
            for (int i = 1; i <= 40; i++)
            {
                orders[$"orders/{i}"] = NewOrder(i);
                await s.StoreAsync(orders[$"orders/{i}"], $"orders/{i}");
            }
            await s.SaveChangesAsync();
        }

        await store.Maintenance.SendAsync(new PutConnectionStringOperation(new SqlConnectionString("reporting", pg.ConnectionString)));
        var configuration = new SqlEtlConfiguration
        {
            Name = "orders-to-pg",
            ConnectionStringName = "reporting",
            SqlTables = { new SqlEtlTable("Orders", "Id"), new SqlEtlTable("OrderLines", "OrderId") },
            Transforms = { new Transformation { Name = "orders", Collections = { "Orders" }, Script = OrdersScript } },
        };
        long taskId = await store.Maintenance.SendAsync(new AddEtlOperation(configuration));
        Assert.True(taskId > 0);
        string ordersSql = """SELECT "Id", "Customer", "Total" FROM "Orders" """, linesSql = """SELECT "OrderId", "Product", "Quantity", "Price" FROM "OrderLines" """;
        await Eventually(() => pg.Rows(ordersSql).SequenceEqual(Expected(orders).Orders) && pg.Rows(linesSql).SequenceEqual(Expected(orders).Lines), "the 40 orders in PostgreSQL");

        // An update replaces the document's rows, a delete removes them.
        using (var s = store.OpenAsyncSession())
        {
            orders["orders/3"] = new Order { Customer = "customers/changed", Lines = [new Line { Product = "products/9", Quantity = 9, Price = 1 }] };
            await s.StoreAsync(orders["orders/3"], "orders/3");
            s.Delete("orders/4");
            orders.Remove("orders/4");
            await s.SaveChangesAsync();
        }
        await Eventually(() => pg.Rows(ordersSql).SequenceEqual(Expected(orders).Orders) && pg.Rows(linesSql).SequenceEqual(Expected(orders).Lines), "the update and the delete in PostgreSQL");
        var info = await store.Maintenance.SendAsync(new GetEtlTaskInfoOperation(taskId, "SqlEtl"));
        Assert.Equal("Active", info.ConnectionStatus);
        Assert.Equal("Running", info.Transformations.Single().State);

        // A new script applies to the changes from now on; a reset loads everything again under it.
        configuration.Transforms[0].Script = OrdersScript.Replace("Total: total }", "Total: total, LineCount: this.Lines.length }", StringComparison.Ordinal);
        Assert.Equal(taskId, await store.Maintenance.SendAsync(new UpdateEtlOperation(taskId, configuration)));
        await store.Maintenance.SendAsync(new ResetEtlOperation("orders-to-pg", "orders"));
        string withCount = """SELECT "Id", "Customer", "Total", "LineCount" FROM "Orders" """;
        await Eventually(() => pg.Rows(withCount).SequenceEqual(Expected(orders, withCount: true).Orders) && pg.Rows(linesSql).SequenceEqual(Expected(orders).Lines), "the reset under the new script");

        // Disabled, it loads nothing; enabled, it catches up.
        await store.Maintenance.SendAsync(new ToggleOngoingTaskStateOperation(taskId, "SqlEtl", disable: true));
        using (var s = store.OpenAsyncSession())
        {
            orders["orders/41"] = NewOrder(41);
            await s.StoreAsync(orders["orders/41"], "orders/41");
            await s.SaveChangesAsync();
        }
        Assert.Equal("Disabled", (await store.Maintenance.SendAsync(new GetEtlTaskInfoOperation(taskId, "SqlEtl"))).TaskState);
        Assert.DoesNotContain(pg.Rows(ordersSql), r => r.StartsWith("orders/41|", StringComparison.Ordinal));
        await store.Maintenance.SendAsync(new ToggleOngoingTaskStateOperation(taskId, "SqlEtl", disable: false));
        await Eventually(() => pg.Rows(withCount).SequenceEqual(Expected(orders, withCount: true).Orders), "orders/41 after enabling");

        await store.Maintenance.SendAsync(new DeleteOngoingTaskOperation(taskId, "SqlEtl"));
        await Assert.ThrowsAnyAsync<Exception>(() => store.Maintenance.SendAsync(new GetEtlTaskInfoOperation(taskId, "SqlEtl")));
    }

    [Fact]
    public async Task Raven_etl_loads_transformed_documents_into_another_database_and_an_update_replaces_them()
    {
        var source = await fixture.Driver.GetDocumentStoreAsync();
        var destination = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = source.OpenAsyncSession())
        {
            for (int i = 1; i <= 5; i++)
                await s.StoreAsync(NewOrder(i), $"orders/{i}");
            await s.SaveChangesAsync();
        }
        await source.Maintenance.SendAsync(new PutConnectionStringOperation(new RavenConnectionString("copy", destination.Database!, [fixture.Driver.Url.ToString().TrimEnd('/')])));
        long taskId = await source.Maintenance.SendAsync(new AddEtlOperation(new RavenEtlConfiguration
        {
            Name = "orders-summary",
            ConnectionStringName = "copy",
            Transforms = { new Transformation { Name = "summary", Collections = { "Orders" }, Script = "loadToOrders({ Customer: this.Customer, Lines: this.Lines.length });" } },
        }));
        await Eventually(() =>
        {
            using var s = destination.OpenSession();
            return s.Load<OrderSummary>("orders/5") is { Lines: > 0 };
        }, "orders/5 on the destination");
        using (var s = source.OpenAsyncSession())
        {
            await s.StoreAsync(new Order { Customer = "c", Lines = [new Line(), new Line(), new Line(), new Line()] }, "orders/5");
            await s.SaveChangesAsync();
        }
        await Eventually(() =>
        {
            using var s = destination.OpenSession();
            return s.Load<OrderSummary>("orders/5") is { Lines: 4, Customer: "c" };
        }, "the update of orders/5 on the destination");
        Assert.Equal("Active", (await source.Maintenance.SendAsync(new GetEtlTaskInfoOperation(taskId, "RavenEtl"))).ConnectionStatus);
    }

    public sealed class OrderSummary
    {
        public string Customer { get; set; } = "";
        public int Lines { get; set; }
    }
}
