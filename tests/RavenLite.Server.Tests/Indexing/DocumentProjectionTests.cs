using System.Buffers;
using Microsoft.CodeAnalysis.CSharp;
using RavenLite.Server.Indexing;
using RavenLite.Server.Indexing.Scripting;

namespace RavenLite.Server.Tests.Indexing;

/// <summary>
/// A map is handed only the top-level properties it reads (DocumentProjection): which properties the C# compiler finds
/// a map reads (or that it may use a document whole), the structural scan that cuts a document down to them (checked
/// against System.Text.Json on random documents), and indexes that give the same answers either way.
/// </summary>
public sealed class DocumentProjectionTests
{
    [Theory]
    [InlineData("from o in docs select new { o.Company, Count = 1, Freight = o.Freight }", "Company,Freight")]
    [InlineData("from o in docs select new { o.Company, o.Employee, o.Freight, City = o.ShipTo.City }", "Company,Employee,Freight,ShipTo")]
    [InlineData("from o in docs where o.Freight > 10 from l in o.Lines select new { l.Product, o.Company }", "Company,Freight,Lines")]
    [InlineData("from o in docs let total = o.Lines.Sum(l => l.Quantity) select new { Total = total, Id = Id(o) }", "Lines")]
    [InlineData("from o in docs select new { Modified = MetadataFor(o)[\"@last-modified\"], o.Name }", "@metadata,Name")]
    [InlineData("from o in docs select new { City = o?.Address?.City, N = o?.Lines.Count() }", "Address,Lines")]
    [InlineData("docs.Select(o => new { o.Company, Lines = o.Lines.Count() })", "Company,Lines")]
    [InlineData("docs.Where(o => o.Active).Select(x => new { x.Name })", "Active,Name")]
    [InlineData("docs.SelectMany(o => o.Lines, (o, l) => new { o.Company, l.Product })", "Company,Lines,Product")]
    [InlineData("from o in docs select new { o.Name, Doc = AsJson(o) }", null)]
    [InlineData("from o in docs select o", null)]
    [InlineData("from o in docs select new { N = o[\"Name\"] }", null)]
    [InlineData("from o in docs select new { S = o.ToString() }", null)]
    [InlineData("from o in docs let d = o select new { d.Name }", null)]
    [InlineData("from o in docs group o by o.Company into g select new { Company = g.Key }", null)]
    [InlineData("docs.GroupBy(o => o.Company).Select(g => new { g.Key })", null)]
    [InlineData("docs.Select(Map)", null)]
    [InlineData("from o in docs select new { N = Helper.Name(o) }", null)]
    public void The_compiler_finds_the_properties_a_map_reads(string map, string? expected)
    {
        var reads = CSharpIndexCompiler.DocumentReads(SyntaxFactory.ParseExpression(map));
        Assert.Equal(expected, reads == null ? null : string.Join(",", reads.Order(StringComparer.Ordinal)));
    }

    [Fact]
    public void A_compiled_map_keeps_what_it_reads_through_the_disk_cache()
    {
        using var dir = new RavenLite.TestKit.TempDirectory("ravenlite-index-cache");
        string map = "from o in docs.Orders select new { o.Company, Freight = o.Freight, Stamp = \"" + Guid.NewGuid().ToString("N") + "\" }"; // text no other test compiled
        const string reduce = "from r in results group r by r.Company into g select new { Company = g.Key, Freight = g.Sum(x => x.Freight), Stamp = g.First().Stamp }";
        var compiled = CSharpIndexCompiler.Compile([map], reduce, diskCache: dir.Path);
        Assert.False(compiled.FromDisk);
        Assert.Equal(["Company", "Freight"], compiled.Maps[0].Reads!.Order(StringComparer.Ordinal));
        CSharpIndexCompiler.ForgetCompiled(); // a new process
        var loaded = CSharpIndexCompiler.Compile([map], reduce, diskCache: dir.Path);
        Assert.True(loaded.FromDisk);
        Assert.Equal(["Company", "Freight"], loaded.Maps[0].Reads!.Order(StringComparer.Ordinal));
    }

    [Fact]
    public void The_scan_keeps_exactly_the_named_properties_of_random_documents()
    {
        var rnd = new Random(20261128);
        string[] names = ["A", "B", "Name", "Lines", "x y", "Ünï", "@metadata", "Deep", "N"];
        var buffer = new ArrayBufferWriter<byte>();
        for (int round = 0; round < 3000; round++)
        {
            var doc = new JsonObject();
            int count = rnd.Next(0, 9);
            for (int i = 0; i < count; i++)
                doc[names[rnd.Next(names.Length)]] = RandomValue(rnd, 0);
            string text = Whitespace(doc.ToJsonString(new JsonSerializerOptions { Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping }), rnd);
            var keep = names.Where(_ => rnd.Next(3) == 0).ToList();
            var projection = new DocumentProjection(keep);
            Assert.True(projection.TryProject(Encoding.UTF8.GetBytes(text), buffer), text);
            using var whole = JsonDocument.Parse(text);
            using var cut = JsonDocument.Parse(buffer.WrittenMemory);
            foreach (string name in names)
            {
                bool inWhole = whole.RootElement.TryGetProperty(name, out var w);
                bool inCut = cut.RootElement.TryGetProperty(name, out var c);
                Assert.Equal(inWhole && keep.Contains(name), inCut);
                if (inCut)
                    Assert.Equal(w.GetRawText(), c.GetRawText());
            }
            Assert.Equal(whole.RootElement.EnumerateObject().Count(p => keep.Contains(p.Name)), cut.RootElement.EnumerateObject().Count());
        }
    }

    [Theory]
    [InlineData("{\"N\\u0061me\":1,\"Name\":2}")] // an escaped name: only the parser compares it
    [InlineData("[1,2]")]
    [InlineData("{\"Name\":1")]
    [InlineData("{\"Name\" 1}")]
    [InlineData("{\"Name\":\"open}")]
    [InlineData("{\"Name\":[1,{\"a\":2}}")]
    public void The_scan_declines_what_it_does_not_expect(string json)
    {
        var buffer = new ArrayBufferWriter<byte>();
        Assert.False(new DocumentProjection(["Name"]).TryProject(Encoding.UTF8.GetBytes(json), buffer));
        Assert.Equal(0, buffer.WrittenCount);
    }

    /// <summary>
    /// A map that reads a few properties (projected) and the same map written to use the document whole (AsJson: not
    /// projected) index the same values, including strings with escaped quotes and brackets, nested arrays, missing
    /// properties and a document whose names are escaped (read whole); so do a map-reduce index and an auto index.
    /// </summary>
    [Fact]
    public async Task Projected_and_whole_documents_index_the_same()
    {
        await using var server = await TestServer.StartWithDatabaseAsync("proj");
        var http = server.Http;
        var rnd = new Random(5);
        var commands = new JsonArray();
        for (int i = 0; i < 400; i++)
        {
            var doc = new JsonObject
            {
                ["Notes"] = $"he said \"}}]{{[\\\" {i}",
                ["Lines"] = new JsonArray(Enumerable.Range(0, rnd.Next(0, 4)).Select(k => (JsonNode)new JsonObject { ["P"] = $"p/{k}", ["Q"] = k, ["Tags"] = new JsonArray("a]", "{b") }).ToArray()),
                ["@metadata"] = new JsonObject { ["@collection"] = "Things" },
            };
            if (i % 7 != 0)
                doc["Company"] = $"companies/{i % 13}";
            if (i % 5 != 0)
                doc["Freight"] = Math.Round(rnd.NextDouble() * 100, 2);
            doc["ShipTo"] = new JsonObject { ["City"] = i % 3 == 0 ? null : $"City {i % 9}", ["Zip"] = "x\\y" };
            commands.Add(new JsonObject { ["Id"] = $"things/{i}", ["Type"] = "PUT", ["Document"] = doc });
        }
        // A document whose property names are escaped: the scan declines it and the map reads it whole.
        commands.Add(new JsonObject { ["Id"] = "things/escaped", ["Type"] = "PUT", ["Document"] = JsonNode.Parse("{\"Comp\\u0061ny\":\"companies/1\",\"Freight\":7.5,\"@metadata\":{\"@collection\":\"Things\"}}") });
        Assert.Equal(HttpStatusCode.Created, (await http.PostAsync("/databases/proj/bulk_docs", Json(new JsonObject { ["Commands"] = commands }))).StatusCode);

        await PutIndex(http, "Projected", "from o in docs.Things select new { o.Company, o.Freight, City = o.ShipTo.City, Lines = o.Lines.Count() }", null);
        await PutIndex(http, "Whole", "from o in docs.Things let d = AsJson(o) select new { d.Company, d.Freight, City = d.ShipTo.City, Lines = d.Lines.Count() }", null);
        const string reduce = "from r in results group r by r.Company into g select new { Company = g.Key, Freight = g.Sum(x => x.Freight), Count = g.Sum(x => x.Count) }";
        await PutIndex(http, "TotalsProjected", "from o in docs.Things select new { o.Company, Freight = o.Freight ?? 0, Count = 1 }", reduce);
        await PutIndex(http, "TotalsWhole", "from o in docs.Things let d = AsJson(o) select new { d.Company, Freight = d.Freight ?? 0, Count = 1 }", reduce);
        Assert.Null(CSharpIndexCompiler.DocumentReads(SyntaxFactory.ParseExpression("from o in docs let d = AsJson(o) select new { d.Company }")));

        foreach (string query in new[] { "where Company = 'companies/1'", "where City = 'City 4'", "where Lines = 2", "where Freight > 50", "where Company = null" })
            Assert.Equal(await Ids(http, $"from index 'Whole' {query} order by id()"), await Ids(http, $"from index 'Projected' {query} order by id()"));
        Assert.Contains("things/escaped", await Ids(http, "from index 'Projected' where Company = 'companies/1'"));
        Assert.Equal(await Results(http, "from index 'TotalsWhole' order by Company"), await Results(http, "from index 'TotalsProjected' order by Company"));
        // An auto index (its paths' first names are what it reads) and a collection query (no index) agree.
        Assert.Equal(await Ids(http, "from Things where ShipTo.City = 'City 2' and Freight > 10 order by id()"),
            (await Documents(http)).Where(d => d["ShipTo"]?["City"]?.GetValue<string>() == "City 2" && d["Freight"] is { } f && f.GetValue<double>() > 10)
                .Select(d => d["@metadata"]!["@id"]!.GetValue<string>()).Order(StringComparer.Ordinal).ToList());
    }

    private static async Task PutIndex(HttpClient http, string name, string map, string? reduce)
    {
        var definition = new JsonObject { ["Name"] = name, ["Maps"] = new JsonArray(map) };
        if (reduce != null)
            definition["Reduce"] = reduce;
        var r = await http.PutAsync("/databases/proj/admin/indexes", Json(new JsonObject { ["Indexes"] = new JsonArray(definition) }));
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
    }

    private static async Task<List<JsonNode>> Query(HttpClient http, string rql)
    {
        var r = await http.PostAsync("/databases/proj/queries", Json(new JsonObject { ["Query"] = rql, ["WaitForNonStaleResults"] = true, ["PageSize"] = 10_000 }));
        string text = await r.Content.ReadAsStringAsync();
        Assert.True(r.IsSuccessStatusCode, text);
        return JsonNode.Parse(text)!["Results"]!.AsArray().Select(n => n!).ToList();
    }

    private static async Task<List<string>> Ids(HttpClient http, string rql) =>
        (await Query(http, rql)).Select(d => d["@metadata"]!["@id"]!.GetValue<string>()).ToList();

    private static async Task<List<string>> Results(HttpClient http, string rql) =>
        (await Query(http, rql)).Select(d => $"{d["Company"]?.ToJsonString()}:{d["Freight"]?.GetValue<double>():F2}:{d["Count"]}").ToList();

    private static async Task<List<JsonNode>> Documents(HttpClient http)
    {
        var r = await http.GetAsync("/databases/proj/docs?startsWith=things/&pageSize=10000");
        return JsonNode.Parse(await r.Content.ReadAsStringAsync())!["Results"]!.AsArray().Select(n => n!).ToList();
    }

    private static ByteArrayContent Json(JsonNode node) => TestServer.Json(node.ToJsonString(), contentType: true);

    private static JsonNode? RandomValue(Random rnd, int depth)
    {
        switch (rnd.Next(depth > 3 ? 5 : 7))
        {
            case 0: return null;
            case 1: return rnd.Next(2) == 0;
            case 2: return rnd.Next(-1000, 1000) * (rnd.Next(2) == 0 ? 1 : 0.125);
            case 3:
            case 4:
                var chars = "ab\"\\/}{][,: \u00e9\u4e2d\n\t";
                return new string(Enumerable.Range(0, rnd.Next(0, 12)).Select(_ => chars[rnd.Next(chars.Length)]).ToArray());
            case 5:
                return new JsonArray(Enumerable.Range(0, rnd.Next(0, depth == 0 ? 40 : 4)).Select(_ => RandomValue(rnd, depth + 1)).ToArray()); // long ones cross 32-byte blocks
            default:
                var o = new JsonObject();
                for (int i = rnd.Next(0, 4); i > 0; i--)
                    o["k" + rnd.Next(5) + (rnd.Next(4) == 0 ? "}\"" : "")] = RandomValue(rnd, depth + 1);
                return o;
        }
    }

    /// <summary>The JSON with random whitespace between tokens (outside strings).</summary>
    private static string Whitespace(string json, Random rnd)
    {
        var sb = new StringBuilder();
        bool inString = false;
        for (int i = 0; i < json.Length; i++)
        {
            char c = json[i];
            sb.Append(c);
            if (inString)
            {
                if (c == '\\')
                    sb.Append(json[++i]);
                else if (c == '"')
                    inString = false;
            }
            else if (c == '"')
                inString = true;
            if (!inString && c is ',' or ':' or '{' or '[' && rnd.Next(3) == 0)
                sb.Append(" \n\t\r"[rnd.Next(4)]);
        }
        return (rnd.Next(2) == 0 ? " " : "") + sb;
    }
}
