using RavenLite.Server.TimeSeries;

namespace RavenLite.Server.Tests.TimeSeries;

/// <summary>
/// Time series: the segment encoding gives back exactly what it was given (irregular times, several values, tags,
/// special doubles), a regular series stays within 4 bytes per entry in storage, a bad operation is a 400 that writes
/// nothing, and entries survive a restart.
/// </summary>
public sealed class TimeSeriesTests
{
    [Fact]
    public void Segments_round_trip_every_entry_exactly()
    {
        var rnd = new Random(11);
        var points = new List<TimeSeriesPoint>();
        long t = TimeSeriesPoint.ToMilliseconds(new DateTime(2026, 1, 1, 0, 0, 0, DateTimeKind.Utc));
        for (int i = 0; i < 20_000; i++)
        {
            t += rnd.Next(10) switch { 0 => rnd.Next(1, 5_000_000), 1 => 1, _ => 1000 };
            int n = rnd.Next(10) == 0 ? rnd.Next(1, 32) : 2;
            var values = new double[n];
            for (int k = 0; k < n; k++)
                values[k] = rnd.Next(6) switch { 0 => rnd.NextDouble() * 1e9, 1 => -rnd.Next(100), 2 => double.MaxValue, 3 => double.Epsilon, _ => 70 + rnd.Next(3) };
            string? tag = rnd.Next(5) == 0 ? "tags/" + rnd.Next(400) : null;
            points.Add(new TimeSeriesPoint(t, values, tag));
        }
        var segments = TimeSeriesSegment.Encode(points);
        Assert.True(segments.Count > 1);
        Assert.All(segments, s => Assert.True(s.Bytes.Length <= TimeSeriesSegment.MaxBytes + 64 * 33, $"segment of {s.Bytes.Length} bytes"));
        var decoded = segments.SelectMany(s => TimeSeriesSegment.Decode(s.Bytes)).ToList();
        Assert.Equal(points.Count, decoded.Count);
        for (int i = 0; i < points.Count; i++)
        {
            Assert.Equal(points[i].Milliseconds, decoded[i].Milliseconds);
            Assert.Equal(points[i].Tag, decoded[i].Tag);
            Assert.Equal(points[i].Values, decoded[i].Values);
        }
        Assert.Equal(segments[0].Start, points[0].Milliseconds);
    }

    [Fact]
    public async Task Series_are_compact_refuse_bad_operations_and_survive_a_restart()
    {
        string dir = Path.Combine(Path.GetTempPath(), "rl-ts-" + Guid.NewGuid().ToString("N"));
        var start = new DateTime(2026, 1, 1, 0, 0, 0, DateTimeKind.Utc);
        try
        {
            await using (var server = await TestServer.StartWithDatabaseAsync(dataDir: dir))
            {
                var http = server.Http;
                Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/db/docs?id=sensors/1", TestServer.Json("""{"@metadata":{"@collection":"Sensors"}}"""))).StatusCode);
                const int count = 100_000;
                for (int batch = 0; batch < count / 10_000; batch++)
                {
                    var body = new StringBuilder("""{"Name":"Temp","Appends":[""");
                    for (int i = 0; i < 10_000; i++)
                    {
                        int n = batch * 10_000 + i;
                        body.Append(i == 0 ? "" : ",").Append("{\"Timestamp\":\"").Append(start.AddSeconds(n).ToString("o")).Append("\",\"Values\":[")
                            .Append(20 + (n / 60 % 10)).Append("]}");
                    }
                    body.Append("]}");
                    Assert.Equal(HttpStatusCode.NoContent, (await http.PostAsync("/databases/db/timeseries?docId=sensors/1", TestServer.Json(body.ToString()))).StatusCode);
                }
                var tree = (await TestServer.ReadJson(await http.GetAsync("/studio-api/storage?database=db"))).GetProperty("Trees").EnumerateArray()
                    .Single(t => t.GetProperty("Name").GetString() == "TimeSeries");
                long pages = tree.GetProperty("LeafPages").GetInt64() + tree.GetProperty("BranchPages").GetInt64() + tree.GetProperty("OverflowPages").GetInt64();
                double bytesPerEntry = pages * 8192.0 / count;
                Assert.True(bytesPerEntry <= 4, $"{bytesPerEntry:F2} bytes per entry");

                foreach (string bad in new[]
                {
                    """{"Name":"Temp","Appends":[{"Timestamp":"2026-01-02T00:00:00Z","Values":[1]},{"Timestamp":"2026-01-01T00:00:00Z","Values":[2]}]}""",
                    """{"Name":"Temp","Appends":[{"Timestamp":"yesterday","Values":[1]}]}""",
                    """{"Name":"Temp","Appends":[{"Timestamp":"2026-01-01T00:00:00Z","Values":[]}]}""",
                    """{"Name":"Temp","Appends":[{"Timestamp":"2026-01-01T00:00:00Z","Values":["1"]}]}""",
                    """{"Name":"","Appends":[]}""",
                    """{"Name":"Temp","Increments":[{"Timestamp":"2026-01-01T00:00:00Z","Values":[1]}]}""",
                    """{"Name":"INC:Views","Appends":[{"Timestamp":"2026-01-01T00:00:00Z","Values":[1]}]}""",
                    """{"Name":"Temp","Deletes":[{"From":"2026-02-01T00:00:00Z","To":"2026-01-01T00:00:00Z"}]}""",
                })
                {
                    var r = await http.PostAsync("/databases/db/timeseries?docId=sensors/1", TestServer.Json(bad));
                    Assert.True(r.StatusCode == HttpStatusCode.BadRequest, $"{bad} → {(int)r.StatusCode}");
                }
                Assert.Equal(HttpStatusCode.BadRequest, (await http.PostAsync("/databases/db/timeseries?docId=sensors/404",
                    TestServer.Json("""{"Name":"Temp","Appends":[{"Timestamp":"2026-01-01T00:00:00Z","Values":[1]}]}"""))).StatusCode);
                var stats = await TestServer.ReadJson(await http.GetAsync("/databases/db/timeseries/stats?docId=sensors/1"));
                Assert.Equal(count, stats.GetProperty("TimeSeries")[0].GetProperty("NumberOfEntries").GetInt64());
            }
            await using (var server = await TestServer.StartAsync(dir))
            {
                // The last n entries, included on a load and in a query.
                var load = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/docs?id=sensors/1&timeseriescount=Temp&countType=Last&countValue=5"));
                var included = load.GetProperty("TimeSeriesIncludes").GetProperty("sensors/1").GetProperty("Temp")[0].GetProperty("Entries");
                Assert.Equal(5, included.GetArrayLength());
                Assert.Equal(start.AddSeconds(99_999), included[4].GetProperty("Timestamp").GetDateTime().ToUniversalTime());
                var query = await TestServer.ReadJson(await server.Http.PostAsync("/databases/db/queries", TestServer.Json(
                    """{"Query":"from Sensors include timeseries('Temp', last(3))"}""")));
                Assert.Equal(3, query.GetProperty("TimeSeriesIncludes").GetProperty("sensors/1").GetProperty("Temp")[0].GetProperty("Entries").GetArrayLength());
                Assert.Equal(HttpStatusCode.BadRequest, (await server.Http.GetAsync("/databases/db/docs?id=sensors/1&timeseriestime=Temp&timeType=Last&timeValue=5&timeUnit=Fortnight")).StatusCode);
                var range = await TestServer.ReadJson(await server.Http.GetAsync(
                    $"/databases/db/timeseries?docId=sensors/1&name=temp&from={start.AddSeconds(99_990):o}&to={start.AddSeconds(200_000):o}"));
                Assert.Equal(10, range.GetProperty("TotalResults").GetInt64());
                Assert.Equal(20 + (99_999 / 60 % 10), range.GetProperty("Entries")[9].GetProperty("Values")[0].GetDouble());
                Assert.Equal(HttpStatusCode.NotFound, (await server.Http.GetAsync("/databases/db/timeseries?docId=sensors/1&name=nope")).StatusCode);
            }
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }
}
