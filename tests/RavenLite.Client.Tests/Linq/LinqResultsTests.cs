using RavenLite.Client.Exceptions;
using RavenLite.Client.Linq;

namespace RavenLite.Client.Tests.Linq;

/// <summary>LINQ queries executed against a real server, each checked against LINQ-to-objects over the same data.</summary>
public sealed class LinqResultsTests(DriverFixture fixture) : IClassFixture<DriverFixture>, IAsyncLifetime
{
    private static readonly string[] Names = ["Ann", "bob", "Cara", "Dan", "eve", "Finn"];
    private static readonly string[] Cities = ["Oslo", "Paris", "Rome"];
    private readonly List<User> _users = [];
    private IDocumentStore _store = null!;

    public async Task InitializeAsync()
    {
        _store = await fixture.Driver.GetDocumentStoreAsync();
        var rnd = new Random(2024);
        using var s = _store.OpenAsyncSession();
        for (int i = 0; i < 120; i++)
        {
            var u = new User
            {
                Name = Names[rnd.Next(Names.Length)] + (i % 3 == 0 ? "" : i.ToString(System.Globalization.CultureInfo.InvariantCulture)),
                Age = rnd.Next(18, 70),
                Active = rnd.Next(2) == 0,
                Score = Math.Round(rnd.NextDouble() * 10, 2),
                Address = rnd.Next(4) == 0 ? null : new Address { City = Cities[rnd.Next(Cities.Length)], Country = "NO" },
                Tags = rnd.Next(2) == 0 ? ["vip"] : [],
            };
            await s.StoreAsync(u, $"users/{i:D3}");
            _users.Add(u);
        }
        s.Advanced.MaxNumberOfRequestsPerSession = 200;
        await s.SaveChangesAsync();
    }

    public Task DisposeAsync() => Task.CompletedTask;

    private static List<string?> Ids(IEnumerable<User> users) => users.Select(u => u.Id).ToList();

    [Fact]
    public async Task Where_with_comparisons_and_logic_matches_linq_to_objects()
    {
        using var s = _store.OpenAsyncSession();
        var results = await s.Query<User>().Where(u => u.Age >= 30 && u.Age < 50 && (u.Active || u.Score > 7.5)).ToListAsync();
        var expected = _users.Where(u => u.Age >= 30 && u.Age < 50 && (u.Active || u.Score > 7.5));
        Assert.Equal(Ids(expected).Order(), Ids(results).Order());
        Assert.NotEmpty(results);

        var notActive = await s.Query<User>().Where(u => !u.Active && u.Age != 30).ToListAsync();
        Assert.Equal(Ids(_users.Where(u => !u.Active && u.Age != 30)).Order(), Ids(notActive).Order());
    }

    [Fact]
    public async Task StartsWith_In_and_Search()
    {
        using var s = _store.OpenAsyncSession();
        var starts = await s.Query<User>().Where(u => u.Name.StartsWith("ca")).ToListAsync();
        Assert.Equal(Ids(_users.Where(u => u.Name.StartsWith("ca", StringComparison.OrdinalIgnoreCase))).Order(), Ids(starts).Order());

        var cities = new[] { "Oslo", "Rome" };
        var inCities = await s.Query<User>().Where(u => u.Address!.City.In(cities)).ToListAsync();
        Assert.Equal(Ids(_users.Where(u => u.Address != null && cities.Contains(u.Address.City))).Order(), Ids(inCities).Order());

        var ages = new List<int> { 20, 21, 22 };
        var inAges = await s.Query<User>().Where(u => ages.Contains(u.Age)).ToListAsync();
        Assert.Equal(Ids(_users.Where(u => ages.Contains(u.Age))).Order(), Ids(inAges).Order());

        var vip = await s.Query<User>().Where(u => u.Tags.Contains("vip")).CountAsync().ContinueWith(t => t, TaskScheduler.Default);
        Assert.True(vip.IsFaulted); // Contains on a document array is not translated: a clear NotSupportedException
        Assert.IsType<NotSupportedException>(vip.Exception!.InnerException);

        var search = await s.Query<User>().Where(u => u.Name.Search("ann eve")).ToListAsync();
        Assert.Equal(Ids(_users.Where(u => u.Name is "Ann" or "eve")).Order(), Ids(search).Order());
    }

    [Fact]
    public async Task Ordering_and_paging()
    {
        using var s = _store.OpenAsyncSession();
        var page = await s.Query<User>().Where(u => u.Age > 25).OrderByDescending(u => u.Age).ThenBy(u => u.Score).Skip(5).Take(10).ToListAsync();
        var expected = _users.Where(u => u.Age > 25).OrderByDescending(u => u.Age).ThenBy(u => u.Score).Skip(5).Take(10);
        Assert.Equal(Ids(expected), Ids(page));

        var byName = await s.Query<User>().OrderBy(u => u.Name).Take(15).ToListAsync();
        Assert.Equal(Ids(_users.OrderBy(u => u.Name, StringComparer.OrdinalIgnoreCase).Take(15)), Ids(byName));
    }

    [Fact]
    public async Task Terminal_operators_and_statistics()
    {
        using var s = _store.OpenAsyncSession();
        Assert.Equal(_users.Count(u => u.Active), await s.Query<User>().CountAsync(u => u.Active));
        Assert.True(await s.Query<User>().AnyAsync(u => u.Age > 60) == _users.Any(u => u.Age > 60));
        Assert.False(await s.Query<User>().AnyAsync(u => u.Age > 200));
        var oldest = await s.Query<User>().OrderByDescending(u => u.Age).ThenBy(u => u.Name).FirstAsync();
        Assert.Equal(_users.OrderByDescending(u => u.Age).ThenBy(u => u.Name, StringComparer.OrdinalIgnoreCase).First().Id, oldest.Id);
        Assert.Null(await s.Query<User>().FirstOrDefaultAsync(u => u.Age > 200));
        await Assert.ThrowsAsync<InvalidOperationException>(() => s.Query<User>().FirstAsync(u => u.Age > 200));
        var one = await s.Query<User>().Where(u => u.Id == "users/007").SingleAsync();
        Assert.Equal(_users[7].Name, one.Name);
        await Assert.ThrowsAsync<InvalidOperationException>(() => s.Query<User>().SingleOrDefaultAsync());

        var list = await s.Query<User>().Statistics(out var stats).Where(u => u.Age < 30).Take(3).ToListAsync();
        Assert.Equal(3, list.Count);
        Assert.Equal(_users.Count(u => u.Age < 30), stats.TotalResults);
        Assert.False(stats.IsStale);
        Assert.StartsWith("Auto/Users/By", stats.IndexName, StringComparison.Ordinal);

        var waited = await s.Query<User>().Customize(x => x.WaitForNonStaleResults(TimeSpan.FromSeconds(5))).CountAsync();
        Assert.Equal(_users.Count, waited);

        // Synchronous LINQ operators run through the same provider.
        Assert.Equal(_users.Count(u => u.Age > 40), s.Query<User>().Count(u => u.Age > 40));
        Assert.Equal(Ids(_users.Where(u => u.Age == 33)).Order(), s.Query<User>().Where(u => u.Age == 33).ToList().Select(u => u.Id).Order());
    }

    [Fact]
    public async Task Projections_return_plain_objects_and_results_are_tracked_entities()
    {
        using var s = _store.OpenAsyncSession();
        var projected = await s.Query<User>().Where(u => u.Age < 25).OrderBy(u => u.Age).Select(u => new { u.Name, u.Age, City = u.Address!.City }).ToListAsync();
        var expected = _users.Where(u => u.Age < 25).OrderBy(u => u.Age).Select(u => new { u.Name, u.Age, City = u.Address?.City! }).ToList();
        Assert.Equal(expected, projected);

        var names = await s.Query<User>().Where(u => u.Age > 65).Select(u => u.Name).Distinct().ToListAsync();
        Assert.Equal(_users.Where(u => u.Age > 65).Select(u => u.Name).Distinct(StringComparer.Ordinal).Order(), names.Order());

        var tracked = await s.Query<User>().Where(u => u.Id == "users/010").ToListAsync();
        Assert.Same(tracked[0], await s.LoadAsync<User>("users/010")); // query results join the identity map
        tracked[0].Score = 99;
        await s.SaveChangesAsync();
        using var check = _store.OpenAsyncSession();
        Assert.Equal(99, (await check.LoadAsync<User>("users/010"))!.Score);
        _users[10].Score = 99;
    }

    [Fact]
    public async Task Raw_rql_with_parameters_and_errors_from_the_server()
    {
        using var s = _store.OpenAsyncSession();
        var raw = await s.Advanced.AsyncRawQuery<User>("from Users where Age between $lo and $hi order by Age as long")
            .AddParameter("lo", 30).AddParameter("hi", 32).Statistics(out var stats).ToListAsync();
        Assert.Equal(Ids(_users.Where(u => u.Age is >= 30 and <= 32).OrderBy(u => u.Age)), Ids(raw));
        Assert.Equal(raw.Count, stats.TotalResults);

        var bad = await Assert.ThrowsAsync<InvalidQueryException>(() => s.Advanced.AsyncRawQuery<User>("from Users where Age >").ToListAsync());
        Assert.Contains("position", bad.Message, StringComparison.Ordinal);
        var missing = await Assert.ThrowsAsync<IndexDoesNotExistException>(() => s.Query<User>("Users/ByName").ToListAsync());
        Assert.Contains("Users/ByName", missing.Message, StringComparison.Ordinal);
    }
}
