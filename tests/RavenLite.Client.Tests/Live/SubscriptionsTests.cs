using System.Collections.Concurrent;
using RavenLite.Client.Exceptions;
using RavenLite.Client.Subscriptions;

namespace RavenLite.Client.Tests.Live;

public sealed class SubscriptionsTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    private static async Task Until(Func<bool> done, string what)
    {
        for (int i = 0; i < 400 && !done(); i++)
            await Task.Delay(25);
        Assert.True(done(), "timed out waiting for " + what);
    }

    [Fact]
    public async Task A_worker_processes_matching_documents_in_batches_and_resumes_after_its_acknowledgement()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        await using (var bulk = store.BulkInsert())
            for (int i = 1; i <= 120; i++)
                await bulk.StoreAsync(new User { Name = "u" + i, Age = i, CompanyId = "companies/1" }, "users/" + i);
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new Company { Name = "Acme" }, "companies/1");
            await s.SaveChangesAsync();
        }
        string name = await store.Subscriptions.CreateAsync(new SubscriptionCreationOptions { Name = "Adults", Query = "from Users where Age >= 18 include CompanyId" });
        Assert.Equal("Adults", name);
        // A query that does not parse is refused; a collection with no documents yet is not (as RavenDB).
        await Assert.ThrowsAnyAsync<RavenException>(() => store.Subscriptions.CreateAsync(new SubscriptionCreationOptions { Query = "from Users where" }));
        await store.Subscriptions.DeleteAsync(await store.Subscriptions.CreateAsync(new SubscriptionCreationOptions { Query = "from Invoices" }));

        var seen = new ConcurrentDictionary<string, int>();
        int batches = 0;
        string? included = null;
        var worker = store.Subscriptions.GetSubscriptionWorker<User>(new SubscriptionWorkerOptions("Adults") { MaxDocsPerBatch = 25 });
        var run = worker.Run(batch =>
        {
            Interlocked.Increment(ref batches);
            Assert.True(batch.Items.Count <= 25);
            foreach (var item in batch.Items)
            {
                Assert.Equal(item.Id, item.Result.Id);
                Assert.True(item.Result.Age >= 18);
                seen.AddOrUpdate(item.Id, 1, (_, n) => n + 1);
            }
            if (batch.Includes.TryGetValue("companies/1", out var company))
                included = company.GetProperty("Name").GetString();
        });
        await Until(() => seen.Count == 103, "103 adults");
        Assert.True(batches >= 5);
        Assert.Equal("Acme", included);

        // A second worker is refused while this one is connected (OpenIfFree).
        var second = store.Subscriptions.GetSubscriptionWorker<User>(new SubscriptionWorkerOptions("Adults"));
        await Assert.ThrowsAsync<SubscriptionInUseException>(() => second.Run(_ => { }));
        await second.DisposeAsync();

        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "late", Age = 40 }, "users/late");
            await s.SaveChangesAsync();
        }
        await Until(() => seen.ContainsKey("users/late"), "a document written while the worker runs");
        await worker.DisposeAsync();
        Assert.True(run.IsCompletedSuccessfully);
        var state = await store.Subscriptions.GetSubscriptionStateAsync("Adults");
        Assert.NotNull(state.ChangeVectorForNextBatchStartingPoint);
        for (int i = 0; i < 200 && state.Connected; i++) // the server notices the closed connection asynchronously
        {
            await Task.Delay(25);
            state = await store.Subscriptions.GetSubscriptionStateAsync("Adults");
        }
        Assert.False(state.Connected);

        // Resumes after the acknowledged position: only what changed since.
        using (var s = store.OpenAsyncSession())
        {
            var u = await s.LoadAsync<User>("users/50");
            u!.Name = "changed";
            await s.SaveChangesAsync();
        }
        var again = new ConcurrentBag<string>();
        var drain = store.Subscriptions.GetSubscriptionWorker<User>(new SubscriptionWorkerOptions("Adults") { CloseWhenNoDocsLeft = true });
        await drain.Run(batch =>
        {
            foreach (var item in batch.Items)
                again.Add(item.Id);
        }).WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal(["users/50"], again);
        await drain.DisposeAsync();

        await store.Subscriptions.DisableAsync("Adults");
        var disabled = store.Subscriptions.GetSubscriptionWorker<User>(new SubscriptionWorkerOptions("Adults"));
        var closed = await Assert.ThrowsAsync<SubscriptionClosedException>(() => disabled.Run(_ => { }));
        Assert.False(closed.CanReconnect);
        await disabled.DisposeAsync();
        await store.Subscriptions.EnableAsync("Adults");
        Assert.Single(await store.Subscriptions.GetSubscriptionsAsync());
        await store.Subscriptions.DeleteAsync("Adults");
        var missing = store.Subscriptions.GetSubscriptionWorker<User>(new SubscriptionWorkerOptions("Adults"));
        await Assert.ThrowsAsync<SubscriptionDoesNotExistException>(() => missing.Run(_ => { }));
        await missing.DisposeAsync();
    }

    [Fact]
    public async Task A_subscription_on_revisions_delivers_each_change_with_the_version_before_it()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var configuration = new Revisions.RevisionsConfiguration();
        configuration.Collections["Users"] = new Revisions.RevisionsCollectionConfiguration { Disabled = false };
        await store.Maintenance.SendAsync(new Revisions.ConfigureRevisionsOperation(configuration));
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "a", Age = 1 }, "users/1");
            await s.SaveChangesAsync();
        }
        await store.Subscriptions.CreateAsync(new SubscriptionCreationOptions { Name = "History", Query = "from Users (Revisions = true)" });
        for (int age = 2; age <= 3; age++)
        {
            using var s = store.OpenAsyncSession();
            var user = await s.LoadAsync<User>("users/1");
            user!.Age = age;
            await s.SaveChangesAsync();
        }
        var changes = new ConcurrentQueue<(int? Before, int After)>();
        var worker = store.Subscriptions.GetSubscriptionWorker<Revision<User>>(new SubscriptionWorkerOptions("History"));
        var run = worker.Run(batch =>
        {
            foreach (var item in batch.Items)
            {
                Assert.Equal("users/1", item.Id);
                changes.Enqueue((item.Result.Previous?.Age, item.Result.Current!.Age));
            }
        });
        await Until(() => changes.Count == 3, "three revisions");
        Assert.Equal([(null, 1), (1, 2), (2, 3)], changes.ToArray());
        await worker.DisposeAsync();
        await Assert.ThrowsAsync<InvalidQueryException>(() => store.Subscriptions.CreateAsync(new SubscriptionCreationOptions { Query = "from Users (Revisions = true) select Name" }));
    }
}
