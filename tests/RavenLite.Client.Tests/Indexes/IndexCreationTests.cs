using RavenLite.Client.Indexes;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Tests.Indexes;

public sealed class Line
{
    public string Product { get; set; } = "";
    public int Quantity { get; set; }
    public double Price { get; set; }
}

public sealed class Order
{
    public string? Id { get; set; }
    public string Company { get; set; } = "";
    public List<Line> Lines { get; set; } = [];
}

/// <summary>A map index with a let, a where, a LINQ Sum and a string method, and a Search field.</summary>
public sealed class Orders_ByCompany : AbstractIndexCreationTask<Order, Orders_ByCompany.Entry>
{
    public sealed class Entry
    {
        public string Company { get; set; } = "";
        public double Total { get; set; }
        public int Lines { get; set; }
        public string Upper { get; set; } = "";
    }

    public Orders_ByCompany()
    {
        Map = orders => from o in orders
                        let total = o.Lines.Sum(l => l.Quantity * l.Price)
                        where o.Lines.Count > 0
                        select new { o.Company, Total = total, Lines = o.Lines.Count, Upper = o.Company.ToUpper() };
        Index(x => x.Upper, "Search");
    }
}

/// <summary>Dynamic fields: one field per product an order has, named by the product, holding its quantity.</summary>
public sealed class Orders_ByProductQuantity : AbstractIndexCreationTask<Order>
{
    public Orders_ByProductQuantity()
    {
        Map = orders => from o in orders
                        select new { o.Company, _ = o.Lines.Select(l => CreateField(l.Product, l.Quantity)) };
    }
}

/// <summary>Map-reduce: totals per company, over the lines (fan-out).</summary>
public sealed class Orders_Totals : AbstractIndexCreationTask<Order, Orders_Totals.Result>
{
    public sealed class Result
    {
        public string Company { get; set; } = "";
        public int Count { get; set; }
        public double Total { get; set; }
    }

    public Orders_Totals()
    {
        Map = orders => from o in orders
                        from l in o.Lines
                        select new { o.Company, Count = 1, Total = l.Quantity * l.Price };
        Reduce = results => from r in results
                            group r by r.Company into g
                            select new { Company = g.Key, Count = g.Sum(x => x.Count), Total = g.Sum(x => x.Total) };
    }
}

/// <summary>Multi-map over users and companies, with LoadDocument of a user's company.</summary>
public sealed class Names_Everywhere : AbstractMultiMapIndexCreationTask<Names_Everywhere.Entry>
{
    public sealed class Entry
    {
        public string Name { get; set; } = "";
        public string Kind { get; set; } = "";
        public string? CompanyName { get; set; }
    }

    public Names_Everywhere()
    {
        AddMap<User>(users => from u in users select new { u.Name, Kind = "user", CompanyName = LoadDocument<Company>(u.CompanyId).Name });
        AddMap<Company>(companies => from c in companies select new { c.Name, Kind = "company", CompanyName = c.Name });
        Index(x => x.Name, "Search");
    }
}

/// <summary>A JavaScript map-reduce index.</summary>
public sealed class Orders_TotalsJs : AbstractJavaScriptIndexCreationTask
{
    public Orders_TotalsJs()
    {
        Maps.Add("map('Orders', o => ({ Company: o.Company, Count: 1, Total: o.Lines.reduce((s, l) => s + l.Quantity * l.Price, 0) }))");
        Reduce = "groupBy(x => x.Company).aggregate(g => ({ Company: g.key, Count: g.values.reduce((a, v) => a + v.Count, 0), Total: g.values.reduce((a, v) => a + v.Total, 0) }))";
    }
}

/// <summary>Index classes (RavenDB's AbstractIndexCreationTask family): C# lambdas written as index text, put one by one or all from an assembly, and queried.</summary>
public sealed class IndexCreationTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public void A_lambda_map_is_written_as_the_csharp_text_the_server_compiles()
    {
        var conventions = new DocumentConventions();
        var map = new Orders_ByCompany().CreateIndexDefinition(conventions);
        Assert.Equal("Orders/ByCompany", map.Name);
        Assert.StartsWith("docs.Orders.Select(o => new { o = o, total = o.Lines.Sum(l => ((double)l.Quantity * l.Price)) })", map.Maps[0], StringComparison.Ordinal);
        Assert.Equal("Search", map.Fields["Upper"].Indexing);
        var reduce = new Orders_Totals().CreateIndexDefinition(conventions);
        Assert.Equal("results.GroupBy(r => r.Company).Select(g => new { Company = g.Key, Count = g.Sum(x => x.Count), Total = g.Sum(x => x.Total) })", reduce.Reduce);
        var multi = new Names_Everywhere().CreateIndexDefinition(conventions);
        Assert.Equal(2, multi.Maps.Count);
        Assert.Contains("LoadDocument(u.CompanyId, \"Companies\").Name", multi.Maps[0], StringComparison.Ordinal);
    }

    [Fact]
    public async Task Index_classes_are_created_from_the_assembly_and_answer_queries()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var orders = new List<Order>();
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new Company { Name = "Alfreds" }, "companies/1");
            await s.StoreAsync(new User { Name = "Ann", CompanyId = "companies/1" }, "users/1");
            for (int i = 0; i < 30; i++)
            {
                var o = new Order { Company = $"companies/{i % 3}", Lines = Enumerable.Range(0, i % 4).Select(k => new Line { Product = $"p{k}", Quantity = k + 1, Price = 2.5 * (k + 1) }).ToList() };
                orders.Add(o);
                await s.StoreAsync(o, $"orders/{i}");
            }
            await s.SaveChangesAsync();
        }
        await IndexCreation.CreateIndexesAsync(typeof(IndexCreationTests).Assembly, store);
        var names = await store.Maintenance.SendAsync(new GetIndexNamesOperation());
        foreach (string name in new[] { "Orders/ByCompany", "Orders/Totals", "Names/Everywhere", "Orders/TotalsJs", "Orders/ByProductQuantity" })
            Assert.Contains(name, names);
        await fixture.Driver.WaitForIndexingAsync(store, TimeSpan.FromSeconds(60));

        var want = orders.Where(o => o.Lines.Count > 0).GroupBy(o => o.Company).OrderBy(g => g.Key, StringComparer.Ordinal)
            .Select(g => $"{g.Key}:{g.Sum(o => o.Lines.Count)}:{g.Sum(o => o.Lines.Sum(l => l.Quantity * l.Price))}").ToList();
        using (var s = store.OpenAsyncSession())
        {
            var totals = await s.Advanced.AsyncRawQuery<Orders_Totals.Result>("from index 'Orders/Totals' order by Company").ToListAsync();
            Assert.Equal(want, totals.Select(t => $"{t.Company}:{t.Count}:{t.Total}"));
            var js = await s.Advanced.AsyncRawQuery<Orders_Totals.Result>("from index 'Orders/TotalsJs' where Count > 0 order by Company").ToListAsync();
            Assert.Equal(orders.GroupBy(o => o.Company).OrderBy(g => g.Key, StringComparer.Ordinal).Select(g => $"{g.Key}:{g.Count()}:{g.Sum(o => o.Lines.Sum(l => l.Quantity * l.Price))}"),
                js.Select(t => $"{t.Company}:{t.Count}:{t.Total}"));

            var big = await s.Advanced.AsyncRawQuery<Order>("from index 'Orders/ByCompany' where Total >= 25 and search(Upper, '\"companies 1\"')").ToListAsync();
            Assert.Equal(orders.Count(o => o.Lines.Count > 0 && o.Lines.Sum(l => l.Quantity * l.Price) >= 25 && o.Company == "companies/1"), big.Count);

            var withP2 = await s.Advanced.AsyncRawQuery<Order>("from index 'Orders/ByProductQuantity' where p2 >= 3").ToListAsync();
            Assert.Equal(orders.Count(o => o.Lines.Any(l => l.Product == "p2" && l.Quantity >= 3)), withP2.Count);
            Assert.NotEmpty(withP2);

            var ann = await s.Advanced.AsyncRawQuery<User>("from index 'Names/Everywhere' where CompanyName = 'Alfreds' and Kind = 'user'").ToListAsync();
            Assert.Equal("Ann", Assert.Single(ann).Name);
        }
    }
}
