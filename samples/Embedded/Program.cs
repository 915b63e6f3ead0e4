// RavenLite embedded: the server inside this process, its data in a directory the standalone server opens too.
// Pack once (`dotnet pack` at the root), then: dotnet run --project samples/Embedded [data-directory]
// Each run adds a product, so a second run finds the first one's: the data outlives the process.
using RavenLite.Client.Linq;
using RavenLite.Embedded;

string dataDirectory = args.Length > 0 ? args[0] : "embedded-data";
await EmbeddedServer.Instance.StartServerAsync(new EmbeddedServerOptions { DataDirectory = dataDirectory });
Console.WriteLine($"serving {dataDirectory} at {EmbeddedServer.Instance.ServerUri} (the Studio at /studio/)");

var store = await EmbeddedServer.Instance.GetDocumentStoreAsync("Shop");
using (var session = store.OpenAsyncSession())
{
    var product = new Product { Name = "Chai", Price = 18 };
    await session.StoreAsync(product);
    await session.SaveChangesAsync();
    Console.WriteLine($"stored {product.Id}");
}
using (var session = store.OpenAsyncSession())
{
    int count = await session.Query<Product>().Customize(x => x.WaitForNonStaleResults()).CountAsync();
    Console.WriteLine($"products: {count}");
}

// Stops the server: every database closed, its journal synced (the process exiting would do the same).
await EmbeddedServer.Instance.DisposeAsync();

internal sealed class Product
{
    public string? Id { get; set; }
    public string Name { get; set; } = "";
    public decimal Price { get; set; }
}
