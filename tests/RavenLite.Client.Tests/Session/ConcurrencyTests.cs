using RavenLite.Client.Exceptions;

namespace RavenLite.Client.Tests.Session;

public sealed class ConcurrencyTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    private static async Task Seed(IDocumentStore store)
    {
        using var s = store.OpenAsyncSession();
        await s.StoreAsync(new User { Name = "Original", Age = 1 }, "users/c");
        await s.SaveChangesAsync();
    }

    [Fact]
    public async Task A_concurrent_change_fails_the_optimistic_session_and_applies_nothing()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        await Seed(store);
        using var first = store.OpenAsyncSession();
        first.Advanced.UseOptimisticConcurrency = true;
        var mine = await first.LoadAsync<User>("users/c");

        using (var other = store.OpenAsyncSession())
        {
            var theirs = await other.LoadAsync<User>("users/c");
            theirs!.Name = "Theirs";
            await other.SaveChangesAsync();
        }

        mine!.Name = "Mine";
        await first.StoreAsync(new User { Name = "Bystander" }, "users/bystander"); // same batch
        var e = await Assert.ThrowsAsync<ConcurrencyException>(() => first.SaveChangesAsync());
        Assert.Equal(409, e.StatusCode);
        using var check = store.OpenAsyncSession();
        Assert.Equal("Theirs", (await check.LoadAsync<User>("users/c"))!.Name);
        Assert.Null(await check.LoadAsync<User>("users/bystander")); // one transaction: nothing applied
    }

    [Fact]
    public async Task Without_optimistic_concurrency_the_last_write_wins()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        await Seed(store);
        using var first = store.OpenAsyncSession();
        var mine = await first.LoadAsync<User>("users/c");
        using (var other = store.OpenAsyncSession())
        {
            (await other.LoadAsync<User>("users/c"))!.Name = "Theirs";
            await other.SaveChangesAsync();
        }
        mine!.Name = "Mine";
        await first.SaveChangesAsync();
        using var check = store.OpenAsyncSession();
        Assert.Equal("Mine", (await check.LoadAsync<User>("users/c"))!.Name);
    }

    [Fact]
    public async Task Store_level_convention_turns_it_on_for_every_session()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync(configure: s => s.Conventions.UseOptimisticConcurrency = true);
        await Seed(store);
        // A new document under an id that exists: with optimistic concurrency the save expects "absent".
        using var s = store.OpenAsyncSession();
        Assert.True(s.Advanced.UseOptimisticConcurrency);
        await s.StoreAsync(new User { Name = "Impostor" }, "users/c");
        await Assert.ThrowsAsync<ConcurrencyException>(() => s.SaveChangesAsync());
    }

    [Fact]
    public async Task Explicit_change_vectors_on_store_and_delete()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        await Seed(store);
        string cv;
        using (var s = store.OpenAsyncSession())
        {
            var u = await s.LoadAsync<User>("users/c");
            cv = s.Advanced.GetChangeVectorFor(u!)!;
        }
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "Stale write" }, "A:1-not-the-current", "users/c");
            await Assert.ThrowsAsync<ConcurrencyException>(() => s.SaveChangesAsync());
        }
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "Checked write" }, cv, "users/c");
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            s.Delete("users/c", cv); // cv is old now
            await Assert.ThrowsAsync<ConcurrencyException>(() => s.SaveChangesAsync());
        }
        using (var s = store.OpenAsyncSession())
            Assert.Equal("Checked write", (await s.LoadAsync<User>("users/c"))!.Name);
    }
}
