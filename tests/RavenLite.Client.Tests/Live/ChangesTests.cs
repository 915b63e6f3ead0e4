using System.Collections.Concurrent;
using RavenLite.Client.Changes;

namespace RavenLite.Client.Tests.Live;

public sealed class ChangesTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    private static async Task Until(Func<bool> done, string what)
    {
        for (int i = 0; i < 400 && !done(); i++)
            await Task.Delay(25);
        Assert.True(done(), "timed out waiting for " + what);
    }

    [Fact]
    public async Task Observers_get_the_changes_they_subscribed_to_until_they_unsubscribe()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using var changes = store.Changes();
        await changes.EnsureConnectedNow();
        var users = new ConcurrentQueue<DocumentChange>();
        var one = new ConcurrentQueue<DocumentChange>();
        var counters = new ConcurrentQueue<CounterChange>();
        var indexes = new ConcurrentQueue<IndexChange>();
        var usersObs = changes.ForDocumentsInCollection("Users");
        using var u = usersObs.Subscribe(users.Enqueue);
        var oneObs = changes.ForDocument("users/1");
        var oneSub = oneObs.Subscribe(one.Enqueue);
        var countersObs = changes.ForCountersOfDocument("users/1");
        using var c = countersObs.Subscribe(counters.Enqueue);
        var indexObs = changes.ForAllIndexes();
        using var i = indexObs.Subscribe(indexes.Enqueue);
        await Task.WhenAll(usersObs.EnsureSubscribedNow(), oneObs.EnsureSubscribedNow(), countersObs.EnsureSubscribedNow(), indexObs.EnsureSubscribedNow());

        string? cv;
        using (var s = store.OpenAsyncSession())
        {
            var ann = new User { Name = "Ann" };
            await s.StoreAsync(ann, "users/1");
            await s.StoreAsync(new User { Name = "Bob" }, "users/2");
            await s.StoreAsync(new Company { Name = "Acme" }, "companies/1");
            await s.SaveChangesAsync();
            cv = s.Advanced.GetChangeVectorFor(ann);
        }
        await Until(() => users.Count >= 2 && !one.IsEmpty, "document changes");
        Assert.Equal(["users/1", "users/2"], users.Select(x => x.Id).Order());
        var first = Assert.Single(one);
        Assert.Equal(("Put", "Users", cv), (first.Type, first.CollectionName, first.ChangeVector));

        using (var s = store.OpenAsyncSession())
        {
            s.CountersFor("users/1").Increment("Likes", 7);
            await s.SaveChangesAsync();
        }
        await Until(() => !counters.IsEmpty, "counter change");
        Assert.Equal(("Put", "Likes", 7L), (counters.First().Type, counters.First().Name, counters.First().Value));

        await store.Maintenance.SendAsync(new RavenLite.Client.Operations.PutIndexesOperation(new RavenLite.Client.Operations.IndexDefinition { Name = "Users/ByName", Maps = ["from u in docs.Users select new { u.Name }"] }));
        await Until(() => indexes.Any(x => x.Type == "IndexAdded" && x.Name == "Users/ByName"), "index change");

        await Until(() => one.Count >= 2, "the counter's metadata change of users/1");
        oneSub.Dispose(); // the last observer of users/1: unsubscribed
        int seen = one.Count;
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "Ann B" }, "users/1");
            await s.StoreAsync(new User { Name = "Cy" }, "users/3");
            await s.SaveChangesAsync();
        }
        await Until(() => users.Any(x => x.Id == "users/3"), "the later change");
        Assert.Equal(seen, one.Count);
    }

    [Fact]
    public async Task A_missing_database_fails_the_connection()
    {
        await fixture.Driver.GetDocumentStoreAsync();
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using var changes = store.Changes("no-such-database");
        await Assert.ThrowsAsync<Exceptions.RavenException>(() => changes.EnsureConnectedNow());
    }
}
