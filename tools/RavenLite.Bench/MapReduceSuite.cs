using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using Npgsql;

namespace RavenLite.Bench;

/// <summary>
/// The suite `mapreduce`: the bulk-insert orders (1M, 100K with --quick) loaded first (not
/// timed), then (1) a C# map-reduce index (order count and freight per company) built from scratch, docs/s until not
/// stale, against PostgreSQL building the same aggregate as a materialized view (GROUP BY over jsonb); (2) one order
/// changed and its company's total read back through the index until it shows the change (p50/p99 of 200 changes,
/// one at a time), against PostgreSQL's UPDATE + aggregate SELECT over its expression index; (3) a JavaScript map
/// index and the same map in C# built from scratch (docs/s); (4) Roslyn compile time of a typical index (PUT of a new
/// definition, median of 5 distinct texts).
/// </summary>
internal sealed class MapReduceSuite(bool quick, string workDir, bool withPeer = true)
{
    private const string Map = "from o in docs.Orders select new { o.Company, Count = 1, Freight = o.Freight }";
    private const string Reduce = "from r in results group r by r.Company into g select new { Company = g.Key, Count = g.Sum(x => x.Count), Freight = g.Sum(x => x.Freight) }";
    private const string JsMap = "map('Orders', o => ({ Company: o.Company, Employee: o.Employee, Freight: o.Freight, Lines: o.Lines.length }))";
    private const string CsMap = "from o in docs.Orders select new { o.Company, o.Employee, o.Freight, Lines = o.Lines.Count() }";
    private const int Changes = 200;

    public IEnumerable<BenchResult> Run()
    {
        int count = quick ? 100_000 : 1_000_000;
        Console.WriteLine($"# generating {count:N0} documents");
        var docs = new OrderDocuments(count);
        foreach (var r in RavenLite(docs))
            yield return r;
        if (!withPeer)
            yield break;
        foreach (var r in Postgres(docs))
            yield return r;
    }

    private List<BenchResult> RavenLite(OrderDocuments docs)
    {
        var rows = new List<BenchResult>();
        using var server = ServerProcess.Start(Path.Combine(workDir, "ravenlite-mapreduce"));
        using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromMinutes(30) };
        IndexingSuite.Check(http.PutAsync("/admin/databases?name=bench", new StringContent("")).Result, HttpStatusCode.Created);
        IndexingSuite.Check(http.PostAsync("/databases/bench/bulk_insert?id=1", new BulkInsertSuite.BulkContent(docs)).Result, HttpStatusCode.Created);
        Console.WriteLine($"#   ravenlite: loaded {docs.Count:N0} documents (not timed)");

        var sw = Stopwatch.StartNew();
        PutIndex(http, "Orders/Totals", Map, Reduce);
        long keys = IndexingSuite.WaitForIndex(http, "Orders/Totals");
        sw.Stop();
        Console.WriteLine($"#   ravenlite: Orders/Totals reduced {docs.Count:N0} orders to {keys:N0} companies");
        rows.Add(new BenchResult("mapreduce", "map-reduce-build", "ravenlite", "-", docs.Count, sw.Elapsed.TotalSeconds, docs.Count / sw.Elapsed.TotalSeconds, null, null, null, null, null, null, null, server.PeakRssBytes()));

        // One order changes company freight; the index answers with the new total (waiting for non-stale results).
        var rnd = new Random(7);
        var latencies = new List<double>();
        var slowest = new List<(double Total, double Put)>();
        for (int i = 0; i < Changes; i++)
        {
            int n = rnd.Next(docs.Count);
            string id = OrderDocuments.Id(n);
            var doc = JsonNode.Parse(docs.Document(n).Span)!.AsObject();
            string company = doc["Company"]!.GetValue<string>();
            double freight = 100_000 + i; // unique, so the new total is recognisable
            doc["Freight"] = freight;
            var before = Total(http, company, wait: true);
            var t = Stopwatch.StartNew();
            IndexingSuite.Check(http.PutAsync("/databases/bench/docs?id=" + Uri.EscapeDataString(id), new StringContent(doc.ToJsonString(), Encoding.UTF8, "application/json")).Result, HttpStatusCode.Created);
            double put = t.Elapsed.TotalMilliseconds;
            double after;
            do
                after = Total(http, company, wait: true);
            while (Math.Abs(after - before) < 1e-9);
            latencies.Add(t.Elapsed.TotalMilliseconds);
            slowest.Add((t.Elapsed.TotalMilliseconds, put));
        }
        // Where the slowest changes spent their time: the durable PUT, or indexing and the query after it.
        Console.WriteLine("#   ravenlite: slowest changes, total (PUT) ms: " + string.Join(", ", slowest.OrderByDescending(x => x.Total).Take(5).Select(x => $"{x.Total:F1} ({x.Put:F1})")));
        latencies.Sort();
        rows.Add(new BenchResult("mapreduce", "change-visible", "ravenlite", "-", Changes, latencies.Sum() / 1000, Changes / (latencies.Sum() / 1000), null, null, null, null, null,
            latencies[Changes / 2], latencies[(int)(Changes * 0.99)], null));

        foreach (var (name, map, engine) in new[] { ("Orders/Js", JsMap, "javascript-map"), ("Orders/Cs", CsMap, "csharp-map") })
        {
            var b = Stopwatch.StartNew();
            PutIndex(http, name, map, null);
            IndexingSuite.WaitForIndex(http, name);
            b.Stop();
            rows.Add(new BenchResult("mapreduce", engine + "-build", "ravenlite", "-", docs.Count, b.Elapsed.TotalSeconds, docs.Count / b.Elapsed.TotalSeconds, null, null, null, null, null, null, null, server.PeakRssBytes()));
        }

        var compiles = new List<double>();
        for (int i = 0; i < 5; i++)
        {
            var c = Stopwatch.StartNew();
            PutIndex(http, $"Compile/{i}", $"from o in docs.Orders where o.Freight > {i} select new {{ o.Company, Total = o.Lines.Sum(l => l.Quantity * l.PricePerUnit), Month = o.OrderedAt.Substring(0, 7) }}", null);
            compiles.Add(c.Elapsed.TotalMilliseconds);
            IndexingSuite.Check(http.DeleteAsync($"/databases/bench/indexes?name=Compile/{i}").Result, HttpStatusCode.NoContent);
        }
        compiles.Sort();
        rows.Add(new BenchResult("mapreduce", "roslyn-compile", "ravenlite", "-", 5, compiles.Sum() / 1000, 5 / (compiles.Sum() / 1000), null, null, null, null, null, compiles[2], compiles[4], null));
        return rows;
    }

    private static double Total(HttpClient http, string company, bool wait)
    {
        var q = new JsonObject
        {
            ["Query"] = "from index 'Orders/Totals' where Company = $c",
            ["QueryParameters"] = new JsonObject { ["c"] = company },
            ["WaitForNonStaleResults"] = wait,
        };
        using var r = http.PostAsync("/databases/bench/queries", new StringContent(q.ToJsonString(), Encoding.UTF8, "application/json")).Result;
        IndexingSuite.Check(r, HttpStatusCode.OK);
        using var json = JsonDocument.Parse(r.Content.ReadAsStream());
        return json.RootElement.GetProperty("Results")[0].GetProperty("Freight").GetDouble();
    }

    private static void PutIndex(HttpClient http, string name, string map, string? reduce)
    {
        var definition = new JsonObject { ["Name"] = name, ["Maps"] = new JsonArray(map) };
        if (reduce != null)
            definition["Reduce"] = reduce;
        IndexingSuite.Check(http.PutAsync("/databases/bench/admin/indexes", new StringContent(new JsonObject { ["Indexes"] = new JsonArray(definition) }.ToJsonString(), Encoding.UTF8, "application/json")).Result, HttpStatusCode.Created);
    }

    private List<BenchResult> Postgres(OrderDocuments docs)
    {
        var rows = new List<BenchResult>();
        using var pg = PostgresPeer.Start(workDir);
        using var ds = NpgsqlDataSource.Create(pg.ConnectionString);
        IndexingSuite.Exec(ds, "CREATE TABLE docs(id text PRIMARY KEY, body jsonb NOT NULL)");
        PostgresPeer.CopyOrders(ds, docs);
        IndexingSuite.Exec(ds, "VACUUM ANALYZE docs");
        var sw = Stopwatch.StartNew();
        IndexingSuite.Exec(ds, "CREATE MATERIALIZED VIEW totals AS SELECT body->>'Company' AS company, count(*) AS count, sum((body->>'Freight')::numeric) AS freight FROM docs GROUP BY 1");
        sw.Stop();
        rows.Add(new BenchResult("mapreduce", "map-reduce-build", "postgres", "-", docs.Count, sw.Elapsed.TotalSeconds, docs.Count / sw.Elapsed.TotalSeconds, null, null, null, null, null, null, null, null));

        // The incremental equivalent: an UPDATE, then the company's aggregate over the expression index.
        IndexingSuite.Exec(ds, "CREATE INDEX docs_company ON docs ((body->>'Company'))");
        var rnd = new Random(7);
        var latencies = new List<double>();
        var slowest = new List<(double Total, double Put)>();
        for (int i = 0; i < Changes; i++)
        {
            int n = rnd.Next(docs.Count);
            var t = Stopwatch.StartNew();
            using (var update = ds.CreateCommand("UPDATE docs SET body = jsonb_set(body, '{Freight}', to_jsonb($2::numeric)) WHERE id = $1"))
            {
                update.Parameters.AddWithValue(OrderDocuments.Id(n));
                update.Parameters.AddWithValue(100_000m + i);
                update.ExecuteNonQuery();
            }
            using (var select = ds.CreateCommand("SELECT count(*), sum((body->>'Freight')::numeric) FROM docs WHERE body->>'Company' = (SELECT body->>'Company' FROM docs WHERE id = $1)"))
            {
                select.Parameters.AddWithValue(OrderDocuments.Id(n));
                using var reader = select.ExecuteReader();
                reader.Read();
            }
            latencies.Add(t.Elapsed.TotalMilliseconds);
        }
        latencies.Sort();
        rows.Add(new BenchResult("mapreduce", "change-visible", "postgres", "-", Changes, latencies.Sum() / 1000, Changes / (latencies.Sum() / 1000), null, null, null, null, null,
            latencies[Changes / 2], latencies[(int)(Changes * 0.99)], null));
        Console.WriteLine($"#   {pg.Version}: materialized view and UPDATE + aggregate done");
        return rows;
    }

}
