using Microsoft.Extensions.DependencyInjection;
using RavenLite.Client.DependencyInjection;
using RavenLite.Client.Exceptions;
using RavenLite.Client.Linq;
using RavenLite.Client.Operations;
using RavenLite.Client.Session;

namespace RavenLite.Client.Tests.Operations;

public sealed class OperationsTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task Databases_are_created_listed_and_deleted_and_a_deleted_one_is_a_typed_error()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var server = store.Maintenance.Server;
        await server.SendAsync(new CreateDatabaseOperation("Ops-Extra"));
        await Assert.ThrowsAsync<ConcurrencyException>(() => server.SendAsync(new CreateDatabaseOperation("Ops-Extra")));
        var names = await server.SendAsync(new GetDatabaseNamesOperation());
        Assert.Contains("Ops-Extra", names);
        Assert.Contains(store.Database, names);

        using (var s = store.OpenAsyncSession("Ops-Extra"))
        {
            await s.StoreAsync(new User { Name = "in extra" }, "users/1");
            await s.SaveChangesAsync();
        }
        Assert.Equal(1, (await store.Maintenance.ForDatabase("Ops-Extra").SendAsync(new GetStatisticsOperation())).CountOfDocuments);

        await server.SendAsync(new DeleteDatabaseOperation("Ops-Extra"));
        Assert.DoesNotContain("Ops-Extra", await server.SendAsync(new GetDatabaseNamesOperation()));
        using var gone = store.OpenAsyncSession("Ops-Extra");
        var e = await Assert.ThrowsAsync<DatabaseDoesNotExistException>(() => gone.LoadAsync<User>("users/1"));
        Assert.Contains("Ops-Extra", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Statistics_and_index_list()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new Company { Name = "a" }, "companies/a");
            await s.StoreAsync(new Company { Name = "b" }, "companies/b");
            await s.SaveChangesAsync();
            s.Delete("companies/b");
            await s.SaveChangesAsync();
        }
        var stats = await store.Maintenance.SendAsync(new GetStatisticsOperation());
        Assert.Equal(1, stats.CountOfDocuments);
        Assert.Equal(1, stats.CountOfTombstones);
        Assert.False(string.IsNullOrEmpty(stats.DatabaseId));
        Assert.Empty(await store.Maintenance.SendAsync(new GetIndexNamesOperation()));
    }

    [Fact]
    public async Task Static_indexes_are_put_queried_waited_for_listed_and_deleted()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenAsyncSession())
        {
            for (int i = 0; i < 50; i++)
                await s.StoreAsync(new User { Name = i % 2 == 0 ? $"Ann Lee {i}" : $"Bob Stone {i}", Age = i }, $"users/{i}");
            await s.SaveChangesAsync();
        }
        await store.Maintenance.SendAsync(new PutIndexesOperation(new IndexDefinition
        {
            Name = "Users/ByName",
            Maps = ["from u in docs.Users select new { u.Name, u.Age }"],
            Fields = new Dictionary<string, IndexFieldOptions> { ["Name"] = new() { Indexing = "Search" } },
        }));
        await fixture.Driver.WaitForIndexingAsync(store, TimeSpan.FromSeconds(30));
        Assert.Contains("Users/ByName", await store.Maintenance.SendAsync(new GetIndexNamesOperation()));
        using (var s = store.OpenAsyncSession())
        {
            var lees = await s.Query<User>("Users/ByName").Statistics(out var stats).Where(u => u.Name.Search("lee") && u.Age < 10).ToListAsync();
            Assert.Equal([0, 2, 4, 6, 8], lees.Select(u => u.Age).Order());
            Assert.Equal("Users/ByName", stats.IndexName);
            Assert.False(stats.IsStale);
        }
        var bad = await Assert.ThrowsAsync<IndexCompilationException>(() => store.Maintenance.SendAsync(new PutIndexesOperation(new IndexDefinition
        {
            Name = "Users/Bad",
            Maps = ["from u in docs.Users select new { Text = System.IO.File.ReadAllText(u.Name) }"],
        })));
        Assert.Equal(400, bad.StatusCode);
        Assert.Contains("is not allowed in index code", bad.Message, StringComparison.Ordinal);
        Assert.Equal("Maps", bad.IndexDefinitionProperty);
        Assert.Contains("ReadAllText", bad.ProblematicText, StringComparison.Ordinal);
        await store.Maintenance.SendAsync(new DeleteIndexOperation("Users/ByName"));
        Assert.DoesNotContain("Users/ByName", await store.Maintenance.SendAsync(new GetIndexNamesOperation()));
        // Deleting an index that is not there is RavenDB's 404: no error, nothing deleted.
        Assert.False(await store.Maintenance.SendAsync(new DeleteIndexOperation("Users/ByName")));
    }

    [Fact]
    public async Task A_custom_id_generator_replaces_hilo()
    {
        int n = 0;
        var store = await fixture.Driver.GetDocumentStoreAsync(configure: s =>
            s.Conventions.DocumentIdGenerator = (db, entity, _) => Task.FromResult($"{entity.GetType().Name.ToLowerInvariant()}s/custom-{Interlocked.Increment(ref n)}"));
        using var s = store.OpenAsyncSession();
        var c = new Company { Name = "x" };
        await s.StoreAsync(c);
        Assert.Equal("companys/custom-1", c.Id);
        await s.SaveChangesAsync();
        Assert.Equal(1, (await store.Maintenance.SendAsync(new GetStatisticsOperation())).CountOfDocuments); // no HiLo document
    }

    [Fact]
    public async Task Bad_requests_carry_the_servers_message()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using var s = store.OpenAsyncSession();
        await s.StoreAsync(new User { Name = "long id" }, "users/" + new string('x', 600));
        var e = await Assert.ThrowsAsync<BadRequestException>(() => s.SaveChangesAsync());
        Assert.Equal(400, e.StatusCode);
        Assert.Contains("512", e.Message, StringComparison.Ordinal); // the server names its id limit
    }

    [Fact]
    public async Task An_unreachable_server_is_a_clear_error()
    {
        using var store = new DocumentStore { Urls = ["http://127.0.0.1:1"], Database = "x" }.Initialize();
        using var s = store.OpenAsyncSession();
        var e = await Assert.ThrowsAsync<RavenException>(() => s.LoadAsync<User>("users/1"));
        Assert.Contains("127.0.0.1:1", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Initialize_validates_and_freezes_settings()
    {
        Assert.Throws<InvalidOperationException>(() => new DocumentStore().Initialize());
        Assert.Throws<InvalidOperationException>(() => new DocumentStore { Urls = ["not a url"] }.Initialize());
        using var store = new DocumentStore { Urls = ["http://127.0.0.1:8080"] }.Initialize();
        Assert.Throws<InvalidOperationException>(() => store.Database = "late");
        Assert.Throws<InvalidOperationException>(() => store.Conventions.JsonSerializerOptions = new());
        Assert.Throws<InvalidOperationException>(() => store.OpenAsyncSession()); // no database anywhere
    }

    [Fact]
    public async Task AddRavenLite_registers_one_store_and_a_session_per_scope()
    {
        var database = (await fixture.Driver.GetDocumentStoreAsync()).Database;
        var services = new ServiceCollection();
        services.AddRavenLite(s =>
        {
            s.Urls = [fixture.Driver.Url.ToString()];
            s.Database = database;
        });
        await using var provider = services.BuildServiceProvider();
        var store = provider.GetRequiredService<IDocumentStore>();
        Assert.Same(store, provider.GetRequiredService<IDocumentStore>());
        IAsyncDocumentSession a, b;
        using (var scope = provider.CreateScope())
        {
            a = scope.ServiceProvider.GetRequiredService<IAsyncDocumentSession>();
            Assert.Same(a, scope.ServiceProvider.GetRequiredService<IAsyncDocumentSession>());
            await a.StoreAsync(new Company { Name = "DI" }, "companies/di");
            await a.SaveChangesAsync();
        }
        using (var scope = provider.CreateScope())
        {
            b = scope.ServiceProvider.GetRequiredService<IAsyncDocumentSession>();
            Assert.NotSame(a, b);
            Assert.Equal("DI", (await b.LoadAsync<Company>("companies/di"))!.Name);
        }
    }
}
