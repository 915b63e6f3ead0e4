using RavenLite.Client.TimeSeries;

namespace RavenLite.Client.Tests.Extensions;

public sealed class TimeSeriesTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task Session_time_series_are_appended_read_incremented_and_deleted()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var start = new DateTime(2026, 3, 1, 0, 0, 0, DateTimeKind.Utc);
        using (var s = store.OpenAsyncSession())
        {
            var user = new User { Name = "Ann" };
            await s.StoreAsync(user, "users/1");
            var hr = s.TimeSeriesFor(user, "HeartRate");
            for (int i = 0; i < 500; i++)
                hr.Append(start.AddSeconds(i), 60 + (i % 20), i == 0 ? "watches/1" : null);
            s.TimeSeriesFor("users/1", "Position").Append(start, [1.5, -2.25]);
            var views = s.TimeSeriesFor("users/1", "INC:Views");
            views.Increment(start, 3);
            views.Increment(start, 4);
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            var user = await s.LoadAsync<User>("users/1");
            var metadata = s.Advanced.GetMetadataFor(user!);
            Assert.Contains("HasTimeSeries", (string?)metadata["@flags"], StringComparison.Ordinal);
            Assert.Equal(["HeartRate", "INC:Views", "Position"], metadata["@timeseries"]!.AsArray().Select(n => (string)n!).ToArray());
            var all = await s.TimeSeriesFor(user!, "HeartRate").GetAsync();
            Assert.Equal(500, all.Count);
            Assert.Equal("watches/1", all[0].Tag);
            Assert.Equal(60 + 7, all[7].Value);
            var range = await s.TimeSeriesFor("users/1", "heartrate").GetAsync(start.AddSeconds(100), start.AddSeconds(109), start: 2, pageSize: 3);
            Assert.Equal([start.AddSeconds(102), start.AddSeconds(103), start.AddSeconds(104)], range.Select(e => e.Timestamp).ToArray());
            var position = await s.TimeSeriesFor("users/1", "Position").GetAsync();
            Assert.Equal(new[] { 1.5, -2.25 }, position[0].Values);
            Assert.Equal(7, (await s.TimeSeriesFor("users/1", "INC:Views").GetAsync())[0].Value);
            s.TimeSeriesFor("users/1", "HeartRate").Delete(start.AddSeconds(10), start.AddSeconds(489));
            s.TimeSeriesFor("users/1", "Position").Delete();
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            Assert.Equal(20, (await s.TimeSeriesFor("users/1", "HeartRate").GetAsync()).Count);
            Assert.Empty(await s.TimeSeriesFor("users/1", "Position").GetAsync());
            var user = await s.LoadAsync<User>("users/1");
            Assert.Equal(["HeartRate", "INC:Views"], s.Advanced.GetMetadataFor(user!)["@timeseries"]!.AsArray().Select(n => (string)n!).ToArray());
            Assert.Empty(await store.Maintenance.SendAsync(new GetTimeSeriesOperation("users/1", "Nothing")));
        }
    }

    [Fact]
    public async Task Rollup_policies_and_raw_retention_run_once_configured()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var minute = DateTime.UtcNow.AddMinutes(-10);
        var start = new DateTime(minute.Ticks / TimeSpan.TicksPerMinute * TimeSpan.TicksPerMinute, DateTimeKind.Utc);
        using (var s = store.OpenAsyncSession())
        {
            var company = new Company { Name = "Acme" };
            await s.StoreAsync(company, "companies/1");
            var rate = s.TimeSeriesFor(company, "Rate");
            for (int i = 0; i < 120; i++)
                rate.Append(start.AddSeconds(i), i % 60);
            rate.Append(DateTime.UtcNow.AddDays(-10), 1000); // past the raw retention below
            await s.SaveChangesAsync();
        }
        await store.Maintenance.SendAsync(new ConfigureTimeSeriesOperation(
            new Dictionary<string, (IReadOnlyList<TimeSeriesPolicy>, TimeSpan?)> { ["Companies"] = ([new TimeSeriesPolicy("ByMinute", TimeSpan.FromMinutes(1))], TimeSpan.FromDays(1)) },
            TimeSpan.FromSeconds(1)));
        IReadOnlyList<TimeSeriesEntry> rollup = [];
        for (int i = 0; i < 100 && rollup.Count < 3; i++)
        {
            using var s = store.OpenAsyncSession();
            rollup = await s.TimeSeriesFor("companies/1", "Rate@ByMinute").GetAsync();
            await Task.Delay(100);
        }
        Assert.Equal(3, rollup.Count); // the old entry's minute, then the two recent minutes
        Assert.Equal(new double[] { 0, 59, 0, 59, 1770, 60 }, rollup[1].Values);

        // A late entry in a minute already rolled up: that minute is rolled up again.
        using (var s = store.OpenAsyncSession())
        {
            s.TimeSeriesFor("companies/1", "Rate").Append(start.AddSeconds(30.5), 100);
            await s.SaveChangesAsync();
        }
        for (int i = 0; i < 100; i++)
        {
            using var s = store.OpenAsyncSession();
            rollup = await s.TimeSeriesFor("companies/1", "Rate@ByMinute").GetAsync();
            if (rollup[1].Values[5] == 61)
                break;
            await Task.Delay(100);
        }
        Assert.Equal(new double[] { 0, 59, 0, 100, 1870, 61 }, rollup[1].Values);
        using (var s = store.OpenAsyncSession())
            Assert.Equal(121, (await s.TimeSeriesFor("companies/1", "Rate").GetAsync()).Count); // 120 + the late one (the 10-day-old entry went with the retention)
    }
}
