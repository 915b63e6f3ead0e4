using RavenLite.Client.CompareExchange;
using RavenLite.Client.Exceptions;
using RavenLite.Client.Session;

namespace RavenLite.Client.Tests.Extensions;

public sealed class CompareExchangeTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    private sealed record Owner(string UserId, int Since);

    [Fact]
    public async Task Values_follow_index_semantics()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var put = await store.Maintenance.SendAsync(new PutCompareExchangeValueOperation<Owner>("names/ann", new Owner("users/1", 2020), 0));
        Assert.True(put.Successful);
        var clash = await store.Maintenance.SendAsync(new PutCompareExchangeValueOperation<Owner>("names/ann", new Owner("users/2", 2021), 0));
        Assert.False(clash.Successful);
        Assert.Equal("users/1", clash.Value!.UserId);
        Assert.Equal(put.Index, clash.Index);
        var update = await store.Maintenance.SendAsync(new PutCompareExchangeValueOperation<Owner>("names/ann", new Owner("users/3", 2022), put.Index));
        Assert.True(update.Successful);
        var read = await store.Maintenance.SendAsync(new GetCompareExchangeValueOperation<Owner>("NAMES/ANN")); // keys ignore case
        Assert.Equal(new Owner("users/3", 2022), read!.Value);
        Assert.Equal(update.Index, read.Index);
        Assert.Null(await store.Maintenance.SendAsync(new GetCompareExchangeValueOperation<Owner>("names/none")));
        await store.Maintenance.SendAsync(new PutCompareExchangeValueOperation<string>("names/bob", "users/9", 0));
        var all = await store.Maintenance.SendAsync(new GetCompareExchangeValuesOperation<object>("names/"));
        Assert.Equal(2, all.Count);
        Assert.False((await store.Maintenance.SendAsync(new DeleteCompareExchangeValueOperation<Owner>("names/ann", put.Index))).Successful);
        Assert.True((await store.Maintenance.SendAsync(new DeleteCompareExchangeValueOperation<Owner>("names/ann", update.Index))).Successful);
        Assert.Null(await store.Maintenance.SendAsync(new GetCompareExchangeValueOperation<Owner>("names/ann")));
    }

    [Fact]
    public async Task Cluster_wide_sessions_are_atomic_and_guard_documents()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var clusterWide = new SessionOptions { TransactionMode = TransactionMode.ClusterWide };
        using (var s = store.OpenAsyncSession(clusterWide))
        {
            await s.StoreAsync(new User { Name = "Ann" }, "users/ann");
            s.Advanced.ClusterTransaction.CreateCompareExchangeValue("emails/ann@x.com", "users/ann");
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession(clusterWide))
        {
            // The unique value is taken: nothing of this transaction is written.
            await s.StoreAsync(new User { Name = "Ann 2" }, "users/ann2");
            s.Advanced.ClusterTransaction.CreateCompareExchangeValue("emails/ann@x.com", "users/ann2");
            await Assert.ThrowsAsync<ClusterTransactionConcurrencyException>(() => s.SaveChangesAsync());
        }
        using (var s = store.OpenAsyncSession())
            Assert.Null(await s.LoadAsync<User>("users/ann2"));

        // Two sessions load the same document; the second to save loses.
        using var a = store.OpenAsyncSession(clusterWide);
        using var b = store.OpenAsyncSession(clusterWide);
        var ua = await a.LoadAsync<User>("users/ann");
        var ub = await b.LoadAsync<User>("users/ann");
        ua!.Name = "by a";
        ub!.Name = "by b";
        await a.SaveChangesAsync();
        await Assert.ThrowsAsync<ClusterTransactionConcurrencyException>(() => b.SaveChangesAsync());

        // A value read in the session, changed and saved; then deleted.
        using (var s = store.OpenAsyncSession(clusterWide))
        {
            var v = await s.Advanced.ClusterTransaction.GetCompareExchangeValueAsync<string>("emails/ann@x.com");
            v!.Value = "users/ann-moved";
            await s.SaveChangesAsync();
            Assert.True(v.Index > 0);
            s.Advanced.ClusterTransaction.DeleteCompareExchangeValue(v.Key, v.Index);
            await s.SaveChangesAsync();
        }
        Assert.Null(await store.Maintenance.SendAsync(new GetCompareExchangeValueOperation<string>("emails/ann@x.com")));
        using (var s = store.OpenAsyncSession())
        {
            Assert.Equal("by a", (await s.LoadAsync<User>("users/ann"))!.Name);
            Assert.Throws<InvalidOperationException>(() => s.Advanced.ClusterTransaction);
        }
    }
}
