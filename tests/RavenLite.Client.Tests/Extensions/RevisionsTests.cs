using RavenLite.Client.Operations;
using RavenLite.Client.Revisions;

namespace RavenLite.Client.Tests.Extensions;

public sealed class RevisionsTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task Revisions_are_kept_read_counted_forced_and_reverted()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var configuration = new RevisionsConfiguration { Default = new RevisionsCollectionConfiguration { MinimumRevisionsToKeep = 10 } };
        configuration.Collections["Companies"] = new RevisionsCollectionConfiguration { Disabled = true };
        Assert.True(await store.Maintenance.SendAsync(new ConfigureRevisionsOperation(configuration)) > 0);

        DateTime afterSecond = default;
        for (int i = 1; i <= 4; i++)
        {
            using var s = store.OpenAsyncSession();
            var u = i == 1 ? new User() : (await s.LoadAsync<User>("users/1"))!;
            u.Name = "v" + i;
            if (i == 1)
                await s.StoreAsync(u, "users/1");
            await s.SaveChangesAsync();
            if (i == 2)
            {
                await Task.Delay(20);
                afterSecond = DateTime.UtcNow;
                await Task.Delay(20);
            }
        }
        using (var s = store.OpenAsyncSession())
        {
            Assert.Equal(4, await s.Advanced.Revisions.GetCountForAsync("users/1"));
            var all = await s.Advanced.Revisions.GetForAsync<User>("users/1");
            Assert.Equal(["v4", "v3", "v2", "v1"], all.Select(u => u.Name).ToArray());
            Assert.Equal("users/1", all[0].Id);
            var metadata = await s.Advanced.Revisions.GetMetadataForAsync("users/1", start: 1, pageSize: 1);
            Assert.Contains("Revision", (string?)metadata[0]["@flags"], StringComparison.Ordinal);
            var v3 = await s.Advanced.Revisions.GetAsync<User>((string)metadata[0]["@change-vector"]!);
            Assert.Equal("v3", v3!.Name);
            Assert.Equal("v2", (await s.Advanced.Revisions.GetAsync<User>("users/1", afterSecond))!.Name);
            Assert.Null(await s.Advanced.Revisions.GetAsync<User>("A:999999-nope"));

            await s.StoreAsync(new Company { Name = "Acme" }, "companies/1");
            await s.SaveChangesAsync();
            Assert.Equal(0, await s.Advanced.Revisions.GetCountForAsync("companies/1"));
            var acme = await s.LoadAsync<Company>("companies/1");
            s.Advanced.Revisions.ForceRevisionCreationFor(acme);
            await s.SaveChangesAsync();
            Assert.Equal(1, await s.Advanced.Revisions.GetCountForAsync("companies/1"));
            s.Advanced.UseOptimisticConcurrency = true;
            acme!.Name = "Acme 2"; // the tracked change vector followed the forced revision
            await s.SaveChangesAsync();
        }

        // Revert to the time after the second version: users/1 is v2 again; a document created since is deleted.
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "late" }, "users/late");
            await s.SaveChangesAsync();
        }
        long op = await store.Maintenance.SendAsync(new RevertRevisionsOperation(afterSecond));
        await OperationCompletion.WaitForCompletionAsync(store, op);
        using (var s = store.OpenAsyncSession())
        {
            Assert.Equal("v2", (await s.LoadAsync<User>("users/1"))!.Name);
            Assert.Null(await s.LoadAsync<User>("users/late"));
            Assert.Equal(5, await s.Advanced.Revisions.GetCountForAsync("users/1")); // the revert is a change too
        }
    }
}
