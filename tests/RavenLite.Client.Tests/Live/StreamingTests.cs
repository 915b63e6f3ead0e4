using RavenLite.Client.Exceptions;
using RavenLite.Client.Streaming;

namespace RavenLite.Client.Tests.Live;

public sealed class StreamingTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    private static async Task<List<StreamResult<T>>> All<T>(IAsyncEnumerator<StreamResult<T>> e)
    {
        var list = new List<StreamResult<T>>();
        await using (e)
            while (await e.MoveNextAsync())
                list.Add(e.Current);
        return list;
    }

    [Fact]
    public async Task Documents_and_query_results_stream_untracked_with_statistics()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        await using (var bulk = store.BulkInsert())
            for (int i = 1; i <= 2000; i++)
                await bulk.StoreAsync(new User { Name = "u" + i, Age = i % 50 }, "users/" + i);

        using var s = store.OpenAsyncSession();
        var all = await All(await s.Advanced.StreamAsync<User>("users/"));
        Assert.Equal(2000, all.Count);
        Assert.Equal("users/1", all[0].Id);
        Assert.Equal("users/1", all[0].Document.Id);
        Assert.Equal("u1", all[0].Document.Name);
        Assert.NotNull(all[0].ChangeVector);
        Assert.False(s.Advanced.IsLoaded("users/1")); // streamed results are not tracked

        var page = await All(await s.Advanced.StreamAsync<User>("users/", startAfter: "users/1990", start: 1, pageSize: 2));
        Assert.Equal(["users/1992", "users/1993"], page.Select(r => r.Id));
        Assert.Equal(12, (await All(await s.Advanced.StreamAsync<User>("users/", matches: "199*|1"))).Count); // 1, 199, 1990…1999

        var linq = await All(await s.Advanced.StreamAsync(s.Query<User>().Where(u => u.Age == 7), out var stats));
        Assert.Equal(40, linq.Count);
        Assert.All(linq, r => Assert.Equal(7, r.Document.Age));
        Assert.Equal(40, stats.TotalResults);
        Assert.StartsWith("Auto/Users/By", stats.IndexName);

        var raw = await All(await s.Advanced.StreamAsync(s.Advanced.AsyncRawQuery<string>("from Users where Age = $a order by Name select Name").AddParameter("a", 3)));
        Assert.Equal(40, raw.Count);
        Assert.Equal(raw.Select(r => r.Document).OrderBy(n => n, StringComparer.Ordinal), raw.Select(r => r.Document));

        await Assert.ThrowsAsync<IndexDoesNotExistException>(async () => await s.Advanced.StreamAsync(s.Advanced.AsyncRawQuery<User>("from index 'Nope'")));
        await Assert.ThrowsAsync<InvalidQueryException>(async () => await s.Advanced.StreamAsync(s.Advanced.AsyncRawQuery<User>("from Users where")));
        await Assert.ThrowsAsync<NotSupportedException>(() => s.Advanced.StreamAsync(s.Advanced.AsyncRawQuery<User>("from Users").WaitForNonStaleResults()));
    }
}
