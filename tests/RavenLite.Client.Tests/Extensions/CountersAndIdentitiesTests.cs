using RavenLite.Client.Counters;
using RavenLite.Client.Exceptions;
using RavenLite.Client.Identity;

namespace RavenLite.Client.Tests.Extensions;

public sealed class CountersAndIdentitiesTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task Session_counters_are_saved_with_the_batch_and_listed_in_metadata()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "Ann" }, "users/1");
            await s.SaveChangesAsync();
            var ann = await s.LoadAsync<User>("users/1");
            s.CountersFor(ann!).Increment("Likes", 3);
            s.CountersFor("users/1").Increment("Views");
            Assert.True(s.Advanced.HasChanges);
            await s.SaveChangesAsync();
            // The tracked change vector followed the counters' change of the document: a concurrency-checked save passes.
            s.Advanced.UseOptimisticConcurrency = true;
            ann!.Name = "Ann B";
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            var ann = await s.LoadAsync<User>("users/1");
            Assert.Equal("Ann B", ann!.Name);
            var metadata = s.Advanced.GetMetadataFor(ann);
            Assert.Equal("HasCounters", (string?)metadata["@flags"]);
            Assert.Equal(["Likes", "Views"], metadata["@counters"]!.AsArray().Select(n => (string)n!).ToArray());
            Assert.Equal(3, await s.CountersFor(ann).GetAsync("likes"));
            Assert.Null(await s.CountersFor(ann).GetAsync("missing"));
            var all = await s.CountersFor(ann).GetAllAsync();
            Assert.Equal(2, all.Count);
            Assert.Equal(1, all["Views"]);
            s.CountersFor(ann).Delete("Views");
            s.CountersFor(ann).Increment("Likes", -5);
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            var ann = await s.LoadAsync<User>("users/1");
            Assert.Equal(["Likes"], s.Advanced.GetMetadataFor(ann!)["@counters"]!.AsArray().Select(n => (string)n!).ToArray());
            Assert.Equal(-2, await s.CountersFor(ann!).GetAsync("Likes"));
        }
    }

    [Fact]
    public async Task Counter_batches_apply_all_or_nothing_and_never_lose_concurrent_increments()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "a" }, "users/a");
            await s.StoreAsync(new User { Name = "b" }, "users/b");
            await s.SaveChangesAsync();
        }
        var details = await store.Maintenance.SendAsync(new CounterBatchOperation([
            new CounterOperation("users/a", CounterOperationType.Increment, "Hits", 10),
            new CounterOperation("users/b", CounterOperationType.Put, "Hits", 7),
            new CounterOperation("users/b", CounterOperationType.Get, "Nope"),
        ]));
        Assert.Equal(3, details.Count);
        Assert.Equal(10, details[0]!.TotalValue);
        Assert.Equal(7, details[1]!.TotalValue);
        Assert.Null(details[2]);

        // A batch naming a missing document fails whole: users/a keeps its value.
        var e = await Assert.ThrowsAsync<DocumentDoesNotExistException>(() => store.Maintenance.SendAsync(new CounterBatchOperation([
            new CounterOperation("users/a", CounterOperationType.Increment, "Hits", 1000),
            new CounterOperation("users/missing", CounterOperationType.Increment, "Hits", 1),
        ])));
        Assert.Contains("users/missing", e.Message, StringComparison.Ordinal);
        Assert.Equal(10, (await store.Maintenance.SendAsync(new GetCountersOperation("users/a", "Hits")))[0]!.TotalValue);

        await Task.WhenAll(Enumerable.Range(0, 32).Select(async _ =>
        {
            using var s = store.OpenAsyncSession();
            s.CountersFor("users/b").Increment("Hits");
            await s.SaveChangesAsync();
        }));
        Assert.Equal(7 + 32, (await store.Maintenance.SendAsync(new GetCountersOperation("users/b", "Hits")))[0]!.TotalValue);

        // Deleting the document deletes its counters: a new document under the id has none.
        using (var s = store.OpenAsyncSession())
        {
            s.Delete("users/b");
            await s.SaveChangesAsync();
            await s.StoreAsync(new User { Name = "b again" }, "users/b");
            await s.SaveChangesAsync();
        }
        Assert.Empty(await store.Maintenance.SendAsync(new GetCountersOperation("users/b")));
    }

    [Fact]
    public async Task Identities_are_handed_out_seeded_and_listed()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        Assert.Equal(1, await store.Maintenance.SendAsync(new NextIdentityForOperation("orders")));
        Assert.Equal(2, await store.Maintenance.SendAsync(new NextIdentityForOperation("orders|")));
        Assert.Equal(10, await store.Maintenance.SendAsync(new SeedIdentityForOperation("orders", 10)));
        Assert.Equal(10, await store.Maintenance.SendAsync(new SeedIdentityForOperation("orders", 5)));
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "x" }, "orders|");
            await s.SaveChangesAsync();
            Assert.NotNull(await s.LoadAsync<User>("orders/11"));
        }
        var all = await store.Maintenance.SendAsync(new GetIdentitiesOperation());
        Assert.Equal(11, all["orders|"]);
        Assert.Equal(3, await store.Maintenance.SendAsync(new SeedIdentityForOperation("orders", 3, force: true)));
    }
}
