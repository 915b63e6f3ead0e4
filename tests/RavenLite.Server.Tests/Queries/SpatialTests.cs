using System.Globalization;
using RavenLite.Server.Indexing;

namespace RavenLite.Server.Tests.Queries;

/// <summary>
/// Spatial queries: spatial.within/intersects/disjoint/contains with circles and WKT polygons and
/// order by spatial.distance(), on points and polygons of a static index (geohash terms) and on document
/// coordinates of dynamic queries, each checked against brute force (haversine, point in polygon) over
/// random data; bad shapes are 400s.
/// </summary>
public sealed class SpatialTests(ITestOutputHelper output)
{
    private static double Haversine(double lat1, double lng1, double lat2, double lng2)
    {
        const double R = 6371.0087714;
        double dLat = (lat2 - lat1) * Math.PI / 180, dLng = (lng2 - lng1) * Math.PI / 180;
        double a = Math.Pow(Math.Sin(dLat / 2), 2) + Math.Cos(lat1 * Math.PI / 180) * Math.Cos(lat2 * Math.PI / 180) * Math.Pow(Math.Sin(dLng / 2), 2);
        return 2 * R * Math.Asin(Math.Min(1, Math.Sqrt(a)));
    }

    private static async Task<JsonElement> Query(TestServer server, string rql, JsonObject? parameters = null, HttpStatusCode expect = HttpStatusCode.OK)
    {
        var body = new JsonObject { ["Query"] = rql, ["QueryParameters"] = parameters?.DeepClone() ?? new JsonObject(), ["WaitForNonStaleResults"] = true, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
        var r = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(expect == r.StatusCode, $"{rql} → {(int)r.StatusCode}: {json}");
        return json;
    }

    private static List<int> Ids(JsonElement answer) =>
        answer.GetProperty("Results").EnumerateArray().Select(d => int.Parse(d.GetProperty("@metadata").GetProperty("@id").GetString()!.Split('/')[1], CultureInfo.InvariantCulture)).ToList();

    private static string F(double d) => d.ToString("R", CultureInfo.InvariantCulture);

    [Fact]
    public async Task Points_within_circles_and_polygons_and_by_distance_equal_brute_force()
    {
        int seed = int.TryParse(Environment.GetEnvironmentVariable("RAVENLITE_TEST_SEED"), CultureInfo.InvariantCulture, out int s) ? s : Random.Shared.Next();
        output.WriteLine($"seed {seed} (RAVENLITE_TEST_SEED)");
        var rnd = new Random(seed);
        await using var server = await TestServer.StartWithDatabaseAsync();
        // Clustered points (Tel Aviv area) and a few far ones, also near the antimeridian.
        var points = Enumerable.Range(0, 600).Select(i => i % 10 == 0
            ? (Lat: rnd.NextDouble() * 170 - 85, Lng: rnd.NextDouble() * 360 - 180)
            : (Lat: 32 + rnd.NextDouble(), Lng: 34.5 + rnd.NextDouble())).ToList();
        points.Add((10, 179.99));
        points.Add((10, -179.99));
        var commands = new JsonArray();
        for (int i = 0; i < points.Count; i++)
            commands.Add(new JsonObject { ["Id"] = $"places/{i}", ["Type"] = "PUT", ["Document"] = new JsonObject { ["Lat"] = points[i].Lat, ["Lng"] = points[i].Lng, ["@metadata"] = new JsonObject { ["@collection"] = "Places" } } });
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        var index = """{"Indexes":[{"Name":"Places/Geo","Maps":["from p in docs.Places select new { Coordinates = CreateSpatialField(p.Lat, p.Lng) }"]}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);

        var circles = new List<(double Lat, double Lng, double Km)> { (32.5, 35, 0.5), (32.5, 35, 5), (32.2, 34.9, 30), (0, 0, 3000), (10, 180, 50), (89, 0, 500) };
        for (int i = 0; i < 10; i++)
            circles.Add((32 + rnd.NextDouble(), 34.5 + rnd.NextDouble(), rnd.NextDouble() * 40));
        foreach (var (lat, lng, km) in circles)
        {
            var expected = Enumerable.Range(0, points.Count).Where(i => Haversine(lat, lng, points[i].Lat, points[i].Lng) <= km).ToList();
            var shape = $"spatial.circle({F(km)}, {F(lat)}, {F(lng)})";
            Assert.Equal(expected, Ids(await Query(server, $"from index 'Places/Geo' where spatial.within(Coordinates, {shape})")).Order());
            Assert.Equal(expected, Ids(await Query(server, $"from index 'Places/Geo' where spatial.intersects(Coordinates, {shape})")).Order());
            Assert.Equal(Enumerable.Range(0, points.Count).Except(expected), Ids(await Query(server, $"from index 'Places/Geo' where spatial.disjoint(Coordinates, {shape})")).Order());
            Assert.Equal(expected, Ids(await Query(server, $"from Places where spatial.within(spatial.point(Lat, Lng), {shape})")).Order());
            // Miles.
            var inMiles = Enumerable.Range(0, points.Count).Where(i => Haversine(lat, lng, points[i].Lat, points[i].Lng) <= km * 1.609344).ToList();
            Assert.Equal(inMiles, Ids(await Query(server, $"from index 'Places/Geo' where spatial.within(Coordinates, spatial.circle({F(km)}, {F(lat)}, {F(lng)}, 'Miles'))")).Order());
        }

        // A polygon (a rectangle with a notch), ordered by distance from a point.
        string wkt = "POLYGON ((34.6 32.1, 35.3 32.1, 35.3 32.8, 35.0 32.8, 35.0 32.5, 34.6 32.5, 34.6 32.1))";
        bool Inside((double Lat, double Lng) p) => p.Lat >= 32.1 && p.Lng >= 34.6 && p.Lng <= 35.3 && (p.Lat <= 32.5 ? true : p.Lng >= 35.0 && p.Lat <= 32.8);
        var inPolygon = Enumerable.Range(0, points.Count).Where(i => Inside(points[i])).OrderBy(i => Haversine(32, 34.5, points[i].Lat, points[i].Lng)).ToList();
        var answer = await Query(server, "from index 'Places/Geo' where spatial.within(Coordinates, spatial.wkt($w)) order by spatial.distance(Coordinates, spatial.point(32, 34.5))", new JsonObject { ["w"] = wkt });
        Assert.Equal(inPolygon, Ids(answer));
        var far = await Query(server, "from Places where spatial.within(spatial.point(Lat, Lng), spatial.wkt($w)) order by spatial.distance(spatial.point(Lat, Lng), spatial.point(32, 34.5)) desc", new JsonObject { ["w"] = wkt });
        Assert.Equal(Enumerable.Reverse(inPolygon), Ids(far));
    }

    [Fact]
    public async Task Polygons_in_the_index_relate_to_query_shapes_as_brute_force_says()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        // Squares of 0.2° on a grid, as WKT.
        var squares = new List<(double Lat, double Lng)>();
        var commands = new JsonArray();
        for (int x = 0; x < 10; x++)
        {
            for (int y = 0; y < 10; y++)
            {
                double lat = 40 + y * 0.3, lng = 10 + x * 0.3;
                squares.Add((lat, lng));
                string w = string.Create(CultureInfo.InvariantCulture, $"POLYGON (({lng} {lat}, {lng + 0.2} {lat}, {lng + 0.2} {lat + 0.2}, {lng} {lat + 0.2}, {lng} {lat}))");
                commands.Add(new JsonObject { ["Id"] = $"areas/{squares.Count - 1}", ["Type"] = "PUT", ["Document"] = new JsonObject { ["Shape"] = w, ["@metadata"] = new JsonObject { ["@collection"] = "Areas" } } });
            }
        }
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        var index = """{"Indexes":[{"Name":"Areas/Geo","Maps":["from a in docs.Areas select new { Shape = CreateSpatialField(a.Shape) }"]}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        // A query rectangle from (41.0, 11.0) to (41.75, 11.75): squares fully inside, touching, and holding a point.
        string rect = "POLYGON ((11.0 41.0, 11.75 41.0, 11.75 41.75, 11.0 41.75, 11.0 41.0))";
        var p = new JsonObject { ["w"] = rect };
        bool Within((double Lat, double Lng) s) => s.Lat >= 41.0 && s.Lat + 0.2 <= 41.75 && s.Lng >= 11.0 && s.Lng + 0.2 <= 11.75;
        bool Overlaps((double Lat, double Lng) s) => s.Lat <= 41.75 && s.Lat + 0.2 >= 41.0 && s.Lng <= 11.75 && s.Lng + 0.2 >= 11.0;
        Assert.Equal(Enumerable.Range(0, squares.Count).Where(i => Within(squares[i])), Ids(await Query(server, "from index 'Areas/Geo' where spatial.within(Shape, spatial.wkt($w))", p)).Order());
        Assert.Equal(Enumerable.Range(0, squares.Count).Where(i => Overlaps(squares[i])), Ids(await Query(server, "from index 'Areas/Geo' where spatial.intersects(Shape, spatial.wkt($w))", p)).Order());
        // The square holding a point (contains), and squares a circle crosses.
        var holding = Ids(await Query(server, "from index 'Areas/Geo' where spatial.contains(Shape, spatial.wkt('POINT (10.95 40.65)'))"));
        Assert.Equal(Enumerable.Range(0, squares.Count).Where(i => squares[i].Lat <= 40.65 && squares[i].Lat + 0.2 >= 40.65 && squares[i].Lng <= 10.95 && squares[i].Lng + 0.2 >= 10.95), holding);
        var nearCorner = Ids(await Query(server, "from index 'Areas/Geo' where spatial.intersects(Shape, spatial.circle(5, 40.0, 10.0))"));
        Assert.Equal([0], nearCorner);
    }

    [Theory]
    [InlineData("spatial.within(Coordinates, spatial.wkt('MULTIPOINT ((1 1), (2 2))'))", "is not WKT")]
    [InlineData("spatial.within(Coordinates, spatial.wkt('POLYGON ((1 1, 2 2, 3 1))'))", "closed rings")]
    [InlineData("spatial.within(Coordinates, spatial.circle(10, 91, 0))", "latitude")]
    [InlineData("spatial.within(Coordinates, spatial.circle(-1, 10, 0))", "radius")]
    [InlineData("spatial.within(Coordinates, spatial.circle(10, 10, 0, 'Parsecs'))", "Parsecs")]
    [InlineData("spatial.within(Coordinates, spatial.circle(10, 10))", "arguments")]
    [InlineData("spatial.within(Coordinates, 10)", "spatial.circle")]
    public async Task Bad_shapes_are_400_naming_the_problem(string where, string named)
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var index = """{"Indexes":[{"Name":"Places/Geo","Maps":["from p in docs.Places select new { Coordinates = CreateSpatialField(p.Lat, p.Lng) }"]}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        var answer = await Query(server, "from index 'Places/Geo' where " + where, expect: HttpStatusCode.BadRequest);
        Assert.Contains(named, answer.GetProperty("Message").GetString(), StringComparison.Ordinal);
    }

    [Fact]
    public void Geohash_cells_are_the_standard_ones()
    {
        Assert.Equal("u4pruydqq", GeoHash.Encode(57.64911, 10.40744, 9)); // the geohash.org example
        Assert.Equal("ezs42", GeoHash.Encode(42.6, -5.6, 5));
        var (level, cells) = GeoHash.Cover((32.0, 32.01, 34.0, 34.01), 16);
        Assert.True(cells.Count <= 16 && cells.All(c => c.Length == level));
        Assert.Contains(GeoHash.Encode(32.005, 34.005, level), cells);
    }
}
