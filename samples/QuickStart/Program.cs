// RavenLite quick start: store → query → bulk insert. Start a server first (`dotnet run -c Release --project Server`, or
// `ravenlite serve`), pack once (`dotnet pack` at the root), then: dotnet run --project samples/QuickStart [http://127.0.0.1:8080]
using RavenLite.Client;
using RavenLite.Client.Linq;
using RavenLite.Client.Operations;

using var store = new DocumentStore { Urls = [args.Length > 0 ? args[0] : "http://127.0.0.1:8080"], Database = "QuickStart-" + Environment.ProcessId }.Initialize();
await store.Maintenance.Server.SendAsync(new CreateDatabaseOperation(store.Database!));

using (var session = store.OpenAsyncSession())
{
    var ann = new Person { Name = "Ann", Age = 34, City = "Oslo" };
    await session.StoreAsync(ann);                                   // id from HiLo: people/1-A
    await session.StoreAsync(new Person { Name = "Bob", Age = 27, City = "Paris" });
    await session.SaveChangesAsync();                                // one request, one transaction
    Console.WriteLine($"stored {ann.Id}");
}

using (var session = store.OpenAsyncSession())
{
    var over30 = await session.Query<Person>().Where(p => p.Age > 30).OrderBy(p => p.Name).ToListAsync();
    Console.WriteLine($"over 30: {string.Join(", ", over30.Select(p => $"{p.Name} ({p.Age}, {p.City})"))}");
}

await using (var bulk = store.BulkInsert())
    for (int i = 0; i < 10_000; i++)
        await bulk.StoreAsync(new Person { Name = "Person " + i, Age = i % 90, City = "Rome" });

// Queries read indexes that catch up in the background; this one waits until they have seen the bulk insert.
using (var session = store.OpenAsyncSession())
    Console.WriteLine($"people in Rome: {await session.Query<Person>().Customize(x => x.WaitForNonStaleResults()).CountAsync(p => p.City == "Rome")}");
await store.Maintenance.Server.SendAsync(new DeleteDatabaseOperation(store.Database!));

internal sealed class Person
{
    public string? Id { get; set; }
    public string Name { get; set; } = "";
    public int Age { get; set; }
    public string City { get; set; } = "";
}
