namespace RavenLite.Server.Tests.Queries;

/// <summary>
/// Cartesian spatial fields (<c>Spatial: {Type: "Cartesian", MinX, MaxX, MinY, MaxY}</c>, RavenDB's
/// <c>SpatialOptionsFactory.cartesian()</c>): WKT in x y, Euclidean circles and distances in the plane's units, shapes
/// outside the plane not indexed, <c>@spatial</c> answering y and x; and the BoundingBox strategy relating boxes.
/// </summary>
public sealed class CartesianSpatialTests
{
    private static JsonObject Put(string id, string name, string wkt) =>
        new() { ["Id"] = id, ["Type"] = "PUT", ["Document"] = new JsonObject { ["Name"] = name, ["Wkt"] = wkt, ["@metadata"] = new JsonObject { ["@collection"] = "Shapes" } } };

    private static async Task<TestServer> StartAsync()
    {
        var server = await TestServer.StartWithDatabaseAsync();
        var commands = new JsonArray
        {
            Put("shapes/1", "near", "POINT (10 10)"),
            Put("shapes/2", "middle", "POINT (500 500)"),
            Put("shapes/3", "east", "POINT (900 100)"),
            Put("shapes/4", "outside", "POINT (2000 5)"),
            Put("shapes/5", "triangle", "POLYGON ((0 0, 100 0, 0 100, 0 0))"),
        };
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        const string map = "from s in docs.Shapes select new { s.Name, Location = CreateSpatialField((string)s.Wkt) }";
        var indexes = new JsonObject
        {
            ["Indexes"] = new JsonArray(
                new JsonObject
                {
                    ["Name"] = "Plane", ["Maps"] = new JsonArray(map),
                    ["Fields"] = JsonNode.Parse("""{"Location":{"Spatial":{"Type":"Cartesian","Strategy":"QuadPrefixTree","MaxTreeLevel":12,"MinX":0,"MaxX":1000,"MinY":0,"MaxY":1000,"Units":"Kilometers"}}}"""),
                },
                new JsonObject
                {
                    ["Name"] = "Boxes", ["Maps"] = new JsonArray(map),
                    ["Fields"] = JsonNode.Parse("""{"Location":{"Spatial":{"Type":"Cartesian","Strategy":"BoundingBox","MinX":0,"MaxX":1000,"MinY":0,"MaxY":1000}}}"""),
                }),
        };
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(indexes.ToJsonString()))).StatusCode);
        return server;
    }

    private static async Task<JsonElement> Query(TestServer server, string rql)
    {
        var body = new JsonObject { ["Query"] = rql, ["WaitForNonStaleResults"] = true, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
        var r = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(r.StatusCode == HttpStatusCode.OK, $"{rql} → {(int)r.StatusCode}: {json}");
        return json;
    }

    private static async Task<string[]> Names(TestServer server, string rql) =>
        (await Query(server, rql)).GetProperty("Results").EnumerateArray().Select(r => r.GetProperty("Name").GetString()!).ToArray();

    [Fact]
    public async Task Cartesian_shapes_relate_and_measure_in_the_plane()
    {
        await using var server = await StartAsync();
        // circle(radius, y, x): Euclidean radius 5 around x=12, y=10 holds (10, 10) only (and touches no other shape).
        Assert.Equal(["near", "triangle"], await Names(server, "from index Plane where spatial.within(Location, spatial.circle(5, 10, 12)) or spatial.intersects(Location, spatial.circle(5, 10, 12)) order by Name"));
        Assert.Equal(["near"], await Names(server, "from index Plane where spatial.within(Location, spatial.circle(5, 10, 12))"));
        Assert.Equal(["middle"], await Names(server, "from index Plane where spatial.within(Location, spatial.wkt('POLYGON ((400 400, 600 400, 600 600, 400 600, 400 400))'))"));
        // A circle of radius 600 around the origin reaches (500, 500) (707 away) only as its box would: it does not hold it.
        Assert.Equal(["near", "triangle"], await Names(server, "from index Plane where spatial.within(Location, spatial.circle(600, 0, 0)) order by Name"));
        // A point outside the plane has no terms: no shape query finds it.
        Assert.DoesNotContain("outside", await Names(server, "from index Plane where spatial.within(Location, spatial.wkt('POLYGON ((0 0, 1000 0, 1000 1000, 0 1000, 0 0))'))"));

        var ordered = await Query(server, "from index Plane where spatial.within(Location, spatial.wkt('POLYGON ((1 1, 999 1, 999 999, 1 999, 1 1))')) order by spatial.distance(Location, spatial.point(0, 0))");
        var results = ordered.GetProperty("Results").EnumerateArray().ToList();
        Assert.Equal(["near", "middle", "east"], results.Select(r => r.GetProperty("Name").GetString()));
        var spatial = results[2].GetProperty("@metadata").GetProperty("@spatial");
        Assert.Equal(Math.Sqrt(900 * 900 + 100 * 100), spatial.GetProperty("Distance").GetDouble(), 6);
        Assert.Equal(100, spatial.GetProperty("Latitude").GetDouble(), 6); // y
        Assert.Equal(900, spatial.GetProperty("Longitude").GetDouble(), 6); // x
    }

    [Fact]
    public async Task The_bounding_box_strategy_relates_boxes_and_bad_planes_are_refused()
    {
        await using var server = await StartAsync();
        // (90, 90) lies outside the triangle but inside its box.
        Assert.Empty(await Names(server, "from index Plane where spatial.intersects(Location, spatial.wkt('POINT (90 90)'))"));
        Assert.Equal(["triangle"], await Names(server, "from index Boxes where spatial.intersects(Location, spatial.wkt('POINT (90 90)'))"));
        Assert.Equal(["near", "triangle"], await Names(server, "from index Boxes where spatial.intersects(Location, spatial.wkt('POLYGON ((5 5, 15 5, 15 15, 5 15, 5 5))')) order by Name"));

        var bad = await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json("""
            {"Indexes":[{"Name":"Bad","Maps":["from s in docs.Shapes select new { Location = CreateSpatialField((string)s.Wkt) }"],"Fields":{"Location":{"Spatial":{"Type":"Cartesian","MinX":10,"MaxX":10}}}}]}
            """));
        Assert.Equal(HttpStatusCode.BadRequest, bad.StatusCode);
        Assert.Contains("MinX..MaxX and MinY..MaxY", await bad.Content.ReadAsStringAsync());
    }
}
