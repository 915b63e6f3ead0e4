namespace RavenLite.Server.Tests.Queries;

/// <summary>
/// The WKT shapes RavenDB's clients send beyond points and polygons — <c>CIRCLE (lng lat d=radius)</c> (in the query's
/// units) and <c>LINESTRING</c>, as query shapes and as indexed values — and the <c>@spatial</c> metadata of a
/// distance-ordered answer.
/// </summary>
public sealed class SpatialShapeTests
{
    private static async Task<TestServer> StartAsync()
    {
        var server = await TestServer.StartWithDatabaseAsync();
        var commands = new JsonArray
        {
            Put("places/1", """{"Name":"a","Lat":10,"Lng":10,"@metadata":{"@collection":"Places"}}"""),
            Put("places/2", """{"Name":"b","Lat":10.5,"Lng":10.5,"@metadata":{"@collection":"Places"}}"""),
            Put("places/3", """{"Name":"c","Lat":20,"Lng":20,"@metadata":{"@collection":"Places"}}"""),
            Put("places/4", """{"Name":"nowhere","@metadata":{"@collection":"Places"}}"""),
            Put("roads/1", """{"Name":"road","Path":"LINESTRING (9 9, 11 11)","@metadata":{"@collection":"Roads"}}"""),
            Put("roads/2", """{"Name":"ring","Path":"CIRCLE (40 40 d=5)","@metadata":{"@collection":"Roads"}}"""),
        };
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        var index = """{"Indexes":[{"Name":"Roads","Maps":["from r in docs.Roads select new { r.Name, Path = CreateSpatialField((string)r.Path) }"]}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        return server;
    }

    private static JsonObject Put(string id, string json) => new() { ["Id"] = id, ["Type"] = "PUT", ["Document"] = JsonNode.Parse(json) };

    private static async Task<JsonElement> Query(TestServer server, string rql, HttpStatusCode expect = HttpStatusCode.OK)
    {
        var body = new JsonObject { ["Query"] = rql, ["WaitForNonStaleResults"] = true, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
        var r = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(expect == r.StatusCode, $"{rql} → {(int)r.StatusCode}: {json}");
        return json;
    }

    private static async Task<string[]> Names(TestServer server, string rql) =>
        (await Query(server, rql + " select Name")).GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Name").GetString()!).ToArray();

    [Fact]
    public async Task Circles_and_line_strings_in_WKT()
    {
        await using var server = await StartAsync();
        // b is 78 km from a: inside 100 km, outside 50 km, inside 50 miles (80.5 km).
        Assert.Equal(["a", "b"], await Names(server, "from Places where spatial.within(spatial.point(Lat, Lng), spatial.wkt('CIRCLE(10 10 d=100)'))"));
        Assert.Equal(["a"], await Names(server, "from Places where spatial.within(spatial.point(Lat, Lng), spatial.wkt('CIRCLE(10 10 d=50)'))"));
        Assert.Equal(["a", "b"], await Names(server, "from Places where spatial.within(spatial.point(Lat, Lng), spatial.wkt('CIRCLE(10 10 d=50)', 'Miles'))"));
        Assert.Equal(["a", "b", "c"], await Names(server, "from Places where spatial.intersects(spatial.point(Lat, Lng), spatial.wkt('LINESTRING(0 0, 30 30)'))"));
        Assert.Empty(await Names(server, "from Places where spatial.intersects(spatial.point(Lat, Lng), spatial.wkt('LINESTRING(0 1, 30 31)'))"));
        // Indexed line strings and circles.
        Assert.Equal(["road"], await Names(server, "from index 'Roads' where spatial.intersects(Path, spatial.circle(10, 10, 10))"));
        Assert.Empty(await Names(server, "from index 'Roads' where spatial.intersects(Path, spatial.circle(10, 30, 30))"));
        Assert.Equal(["road"], await Names(server, "from index 'Roads' where spatial.within(Path, spatial.wkt('POLYGON((8 8, 12 8, 12 12, 8 12, 8 8))'))"));
        Assert.Equal(["ring"], await Names(server, "from index 'Roads' where spatial.contains(Path, spatial.wkt('POINT(40.02 40.02)'))"));
        await Query(server, "from Places where spatial.within(spatial.point(Lat, Lng), spatial.wkt('CIRCLE(10 10)'))", HttpStatusCode.BadRequest);
        await Query(server, "from Places where spatial.within(spatial.point(Lat, Lng), spatial.wkt('LINESTRING(10 10)'))", HttpStatusCode.BadRequest);
    }

    [Fact]
    public async Task Distance_ordered_answers_carry_spatial_metadata()
    {
        await using var server = await StartAsync();
        var results = (await Query(server, "from Places order by spatial.distance(spatial.point(Lat, Lng), spatial.point(10, 10)) select Name")).GetProperty("Results").EnumerateArray().ToList();
        Assert.Equal(["nowhere", "a", "b", "c"], results.Select(r => r.GetProperty("Name").GetString()));
        var spatial = results.Select(r => r.GetProperty("@metadata").GetProperty("@spatial")).ToList();
        Assert.Equal(JsonValueKind.Null, spatial[0].GetProperty("Distance").ValueKind);
        Assert.Equal(0, spatial[1].GetProperty("Distance").GetDouble());
        Assert.Equal(10.5, spatial[2].GetProperty("Latitude").GetDouble());
        Assert.Equal(10.5, spatial[2].GetProperty("Longitude").GetDouble());
        Assert.InRange(spatial[2].GetProperty("Distance").GetDouble(), 77.5, 78.5);
        Assert.InRange(spatial[3].GetProperty("Distance").GetDouble(), 1540, 1550);
        // Documents themselves (no projection) carry it too; other queries do not.
        var whole = (await Query(server, "from Places where Name = 'b' order by spatial.distance(spatial.point(Lat, Lng), spatial.point(10, 10))")).GetProperty("Results")[0];
        Assert.True(whole.GetProperty("@metadata").TryGetProperty("@spatial", out _));
        var plain = (await Query(server, "from Places where Name = 'b'")).GetProperty("Results")[0];
        Assert.False(plain.GetProperty("@metadata").TryGetProperty("@spatial", out _));
    }
}
