using RavenLite.Client.Exceptions;
using RavenLite.Client.Linq;

namespace RavenLite.Client.Tests.Live;

public sealed class LazyTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task Pending_lazy_operations_go_in_one_request_when_a_value_is_asked_for()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenAsyncSession())
        {
            for (int i = 1; i <= 5; i++)
                await s.StoreAsync(new User { Name = "u" + i, Age = i * 10 }, "users/" + i);
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            var one = s.Advanced.Lazily.LoadAsync<User>("users/1");
            var many = s.Advanced.Lazily.LoadAsync<User>(["users/2", "users/404"]);
            var old = s.Query<User>().Where(u => u.Age >= 30).LazilyAsync();
            var count = s.Query<User>().Where(u => u.Age < 30).CountLazilyAsync();
            Assert.Equal(0, s.Advanced.NumberOfRequests);
            Assert.Equal("u1", (await one.Value)!.Name);
            Assert.Equal(1, s.Advanced.NumberOfRequests);
            var m = await many.Value;
            Assert.Equal("u2", m["users/2"]!.Name);
            Assert.Null(m["users/404"]);
            Assert.Equal(["u3", "u4", "u5"], (await old.Value).Select(u => u.Name).Order());
            Assert.Equal(2, await count.Value);
            Assert.Equal(1, s.Advanced.NumberOfRequests);
            Assert.True(s.Advanced.IsLoaded("users/1")); // lazily loaded documents are tracked
            (await one.Value)!.Name = "changed";
            Assert.True(s.Advanced.HasChanges);
        }
        using (var s = store.OpenAsyncSession())
        {
            var good = s.Advanced.Lazily.LoadAsync<User>("users/3");
            var bad = s.Advanced.AsyncRawQuery<User>("from Users").ToListAsync(); // not lazy: runs now
            await bad;
            var broken = s.Query<User>().Where(u => u.Age > 1).Customize(c => c.WaitForNonStaleResults()).LazilyAsync();
            await s.Advanced.Eagerly.ExecuteAllPendingLazyOperationsAsync();
            Assert.Equal("u3", (await good.Value)!.Name);
            Assert.Equal(5, (await broken.Value).Count());
        }
        using (var s = store.OpenAsyncSession())
        {
            var lazyIndex = s.Query<User>(indexName: "NoSuchIndex").LazilyAsync();
            var fine = s.Advanced.Lazily.LoadAsync<User>("users/4");
            await Assert.ThrowsAsync<IndexDoesNotExistException>(() => lazyIndex.Value);
            Assert.Equal("u4", (await fine.Value)!.Name); // one failure stays in its own slot
        }
    }
}
