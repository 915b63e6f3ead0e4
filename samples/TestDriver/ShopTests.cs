// RavenLite's test driver: a real server in the test process, a fresh database per store, all deleted on dispose.
// Pack once (`dotnet pack` at the root), then: dotnet test samples/TestDriver
using RavenLite.Client.Linq;
using RavenLite.TestDriver;
using Xunit;

namespace ShopSample;

public sealed class ShopTests : IAsyncLifetime
{
    private RavenTestDriver _driver = null!;

    public async Task InitializeAsync() => _driver = await RavenTestDriver.StartAsync();

    public async Task DisposeAsync() => await _driver.DisposeAsync();

    [Fact]
    public async Task A_query_finds_the_products_under_a_price()
    {
        using var store = await _driver.GetDocumentStoreAsync();
        using (var session = store.OpenAsyncSession())
        {
            await session.StoreAsync(new Product { Name = "Chai", Price = 18 });
            await session.StoreAsync(new Product { Name = "Ikura", Price = 31 });
            await session.SaveChangesAsync();
        }
        using (var session = store.OpenAsyncSession())
        {
            var cheap = await session.Query<Product>().Customize(x => x.WaitForNonStaleResults()).Where(p => p.Price < 20).ToListAsync();
            Assert.Equal("Chai", Assert.Single(cheap).Name);
        }
    }
}

public sealed class Product
{
    public string? Id { get; set; }
    public string Name { get; set; } = "";
    public decimal Price { get; set; }
}
