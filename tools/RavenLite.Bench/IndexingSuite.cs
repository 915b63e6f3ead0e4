using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using Npgsql;

namespace RavenLite.Bench;

/// <summary>
/// docs/benchmarks.md `indexing`: the bulk-insert orders (1M, 100K with --quick) loaded first (not timed),
/// then a simple map index (Company, Employee, Freight, City) and a full-text index (ship-to street
/// and city, analyzed) built from scratch, each timed until it is no longer stale (docs/s). Then
/// query latency with page size 25 from 1 and 16 clients: equality (Company), range + order by
/// (Freight between x and x+1 order by Freight), full-text (a house number), a phrase (house number and
/// street), a prefix wildcard (house numbers starting with two digits), and facets over every order
/// (three field facets and ten Freight ranges; 1 client). Peer: PostgreSQL with the same rows as jsonb,
/// btree expression indexes and a GIN tsvector index, the same queries (facets as GROUP BY counts and a
/// CASE range count).
/// </summary>
internal sealed class IndexingSuite(bool quick, string workDir, bool withPeer = true)
{
    internal const string SimpleMap = "from o in docs.Orders select new { o.Company, o.Employee, o.Freight, City = o.ShipTo.City }";
    private const string SearchMap = "from o in docs.Orders select new { Address = o.ShipTo.Line1 + \" \" + o.ShipTo.City }";
    private static readonly int[] Clients = [1, 16];

    private readonly TimeSpan _duration = TimeSpan.FromSeconds(quick ? 2 : 5);

    public IEnumerable<BenchResult> Run()
    {
        int count = quick ? 100_000 : 1_000_000;
        Console.WriteLine($"# generating {count:N0} documents");
        var docs = new OrderDocuments(count);
        foreach (var r in RavenLite(docs))
            yield return r;
        foreach (var r in LuceneFloor.Run(docs, workDir))
            yield return r;
        if (!withPeer)
            yield break;
        foreach (var r in Postgres(docs))
            yield return r;
    }

    private List<BenchResult> RavenLite(OrderDocuments docs)
    {
        var rows = new List<BenchResult>();
        using var server = ServerProcess.Start(Path.Combine(workDir, "ravenlite-indexing"));
        var handler = new SocketsHttpHandler { MaxConnectionsPerServer = 64 };
        using var http = new HttpClient(handler) { BaseAddress = server.Url, Timeout = TimeSpan.FromMinutes(30) };
        Check(http.PutAsync("/admin/databases?name=bench", new StringContent("")).Result, HttpStatusCode.Created);
        var load = Stopwatch.StartNew();
        Check(http.PostAsync("/databases/bench/bulk_insert?id=1", new BulkInsertSuite.BulkContent(docs)).Result, HttpStatusCode.Created);
        Console.WriteLine($"#   ravenlite: loaded {docs.Count:N0} documents in {load.Elapsed.TotalSeconds:N1} s (not timed)");
        foreach (var (name, map, fields) in new[] { ("Orders/Simple", SimpleMap, "{}"), ("Orders/Search", SearchMap, "{\"Address\":{\"Indexing\":\"Search\"}}") })
        {
            var sw = Stopwatch.StartNew();
            string body = $"{{\"Indexes\":[{{\"Name\":\"{name}\",\"Maps\":[{JsonSerializer.Serialize(map)}],\"Fields\":{fields}}}]}}";
            Check(http.PutAsync("/databases/bench/admin/indexes", new StringContent(body, Encoding.UTF8, "application/json")).Result, HttpStatusCode.Created);
            long entries = WaitForIndex(http, name);
            sw.Stop();
            if (entries != docs.Count)
                throw new InvalidOperationException($"{name}: {entries} entries for {docs.Count} documents");
            Console.WriteLine($"#   ravenlite: {name} built, {entries:N0} entries");
            rows.Add(new BenchResult("indexing", name == "Orders/Simple" ? "index-simple-map" : "index-full-text", "ravenlite", "-", docs.Count, sw.Elapsed.TotalSeconds, docs.Count / sw.Elapsed.TotalSeconds,
                null, null, null, null, null, null, null, server.PeakRssBytes()));
        }
        foreach (var (workload, rql) in Queries())
        {
            foreach (int clients in workload == "query-facets" ? [1] : Clients)
            {
                double serverCpu = server.CpuSeconds(), benchCpu = Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds;
                var (ops, seconds, p50, p99) = Drive(clients, async (rnd) =>
                {
                    var (text, parameters) = rql(rnd);
                    var q = new JsonObject { ["Query"] = text, ["QueryParameters"] = parameters };
                    using var r = await http.PostAsync("/databases/bench/queries", new StringContent(q.ToJsonString(), Encoding.UTF8, "application/json"));
                    if (r.StatusCode != HttpStatusCode.OK)
                        throw new InvalidOperationException($"{text}: {(int)r.StatusCode} {await r.Content.ReadAsStringAsync()}");
                    using var json = JsonDocument.Parse(await r.Content.ReadAsStreamAsync());
                    if (json.RootElement.GetProperty("IsStale").GetBoolean())
                        throw new InvalidOperationException("stale answer");
                    if (workload == "query-facets")
                    {
                        // Every order falls in exactly one Freight range: the counts must add up to all of them.
                        long ranged = json.RootElement.GetProperty("Results").EnumerateArray().Single(f => f.GetProperty("Name").GetString() == "Freight")
                            .GetProperty("Values").EnumerateArray().Sum(v => v.GetProperty("Count").GetInt64());
                        if (ranged != docs.Count)
                            throw new InvalidOperationException($"facets counted {ranged} orders in the Freight ranges, not {docs.Count}");
                    }
                    return json.RootElement.GetProperty("Results").GetArrayLength();
                });
                Console.WriteLine($"#   ravenlite: {workload}, {clients} client(s): CPU per query, server {(server.CpuSeconds() - serverCpu) / ops * 1e6:N0} µs, " +
                    $"bench {(Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds - benchCpu) / ops * 1e6:N0} µs");
                rows.Add(new BenchResult("indexing", $"{workload}-{clients}-clients", "ravenlite", "-", ops, seconds, ops / seconds, null, null, null, null, null, p50, p99, null));
            }
        }
        return rows;
    }

    /// <summary>The three query shapes: RQL with parameters from a random source.</summary>
    private static IEnumerable<(string Workload, Func<Random, (string, JsonObject)> Rql)> Queries()
    {
        yield return ("query-equality", rnd => ("from index 'Orders/Simple' where Company = $c limit 25", new JsonObject { ["c"] = $"companies/{rnd.Next(1, 5000)}-A" }));
        yield return ("query-range-order", rnd =>
        {
            int lo = rnd.Next(1, 999);
            return ("from index 'Orders/Simple' where Freight between $lo and $hi order by Freight as double limit 25", new JsonObject { ["lo"] = lo, ["hi"] = lo + 1 });
        });
        yield return ("query-full-text", rnd => ("from index 'Orders/Search' where search(Address, $t) limit 25", new JsonObject { ["t"] = rnd.Next(1, 999).ToString(CultureInfo.InvariantCulture) }));
        yield return ("query-phrase", rnd => ("from index 'Orders/Search' where search(Address, $t) limit 25", new JsonObject { ["t"] = $"\"{rnd.Next(1, 999)} main\"" }));
        yield return ("query-wildcard", rnd => ("from index 'Orders/Search' where search(Address, $t) limit 25", new JsonObject { ["t"] = $"{rnd.Next(10, 99)}*" }));
        yield return ("query-facets", _ => ($"from index 'Orders/Simple' select facet(Company), facet(Employee), facet(City), facet({FreightRanges("Freight")}) as Freight", new JsonObject()));
    }

    /// <summary>Ten Freight ranges covering every order (Freight is 1.00 .. 999.99): below 100, 100 wide, 900 and above.</summary>
    private static string FreightRanges(string field) =>
        string.Join(", ", Enumerable.Range(0, 10).Select(i => i == 0 ? $"{field} < 100" : i == 9 ? $"{field} >= 900" : $"{field} >= {i * 100} and {field} < {(i + 1) * 100}"));

    internal static long WaitForIndex(HttpClient http, string name)
    {
        while (true)
        {
            using var json = JsonDocument.Parse(http.GetStringAsync("/databases/bench/indexes/stats?name=" + Uri.EscapeDataString(name)).Result);
            var s = json.RootElement.GetProperty("Results")[0];
            if (!s.GetProperty("IsStale").GetBoolean())
                return s.GetProperty("EntriesCount").GetInt64();
            Thread.Sleep(20);
        }
    }

    private List<BenchResult> Postgres(OrderDocuments docs)
    {
        var rows = new List<BenchResult>();
        using var pg = PostgresPeer.Start(workDir);
        using var ds = NpgsqlDataSource.Create(pg.ConnectionString);
        Exec(ds, "CREATE TABLE docs(id text PRIMARY KEY, body jsonb NOT NULL)");
        PostgresPeer.CopyOrders(ds, docs);
        Exec(ds, "VACUUM ANALYZE docs");
        var simple = Stopwatch.StartNew();
        Exec(ds, "CREATE INDEX docs_company ON docs ((body->>'Company'))");
        Exec(ds, "CREATE INDEX docs_employee ON docs ((body->>'Employee'))");
        Exec(ds, "CREATE INDEX docs_freight ON docs (((body->>'Freight')::numeric))");
        Exec(ds, "CREATE INDEX docs_city ON docs ((body->'ShipTo'->>'City'))");
        simple.Stop();
        rows.Add(new BenchResult("indexing", "index-simple-map", "postgres", "-", docs.Count, simple.Elapsed.TotalSeconds, docs.Count / simple.Elapsed.TotalSeconds, null, null, null, null, null, null, null, null));
        var fts = Stopwatch.StartNew();
        Exec(ds, $"CREATE INDEX docs_address ON docs USING gin ({Tsv})");
        fts.Stop();
        rows.Add(new BenchResult("indexing", "index-full-text", "postgres", "-", docs.Count, fts.Elapsed.TotalSeconds, docs.Count / fts.Elapsed.TotalSeconds, null, null, null, null, null, null, null, null));
        Exec(ds, "ANALYZE docs");
        Console.WriteLine($"#   {pg.Version}: btree expression indexes and a GIN tsvector index built");
        var sql = new Dictionary<string, Func<Random, (string, object[])>>
        {
            ["query-equality"] = rnd => ("SELECT id, body FROM docs WHERE body->>'Company' = $1 LIMIT 25", [$"companies/{rnd.Next(1, 5000)}-A"]),
            ["query-range-order"] = rnd =>
            {
                int lo = rnd.Next(1, 999);
                return ("SELECT id, body FROM docs WHERE (body->>'Freight')::numeric BETWEEN $1 AND $2 ORDER BY (body->>'Freight')::numeric LIMIT 25", [(decimal)lo, (decimal)(lo + 1)]);
            },
            ["query-full-text"] = rnd => ($"SELECT id, body FROM docs WHERE {Tsv} @@ plainto_tsquery('simple', $1) LIMIT 25", [rnd.Next(1, 999).ToString(CultureInfo.InvariantCulture)]),
            ["query-phrase"] = rnd => ($"SELECT id, body FROM docs WHERE {Tsv} @@ phraseto_tsquery('simple', $1) LIMIT 25", [$"{rnd.Next(1, 999)} main"]),
            ["query-wildcard"] = rnd => ($"SELECT id, body FROM docs WHERE {Tsv} @@ to_tsquery('simple', $1) LIMIT 25", [$"{rnd.Next(10, 99)}:*"]),
            ["query-facets"] = _ => ("SELECT 'c', body->>'Company', count(*) FROM docs GROUP BY 2 UNION ALL SELECT 'e', body->>'Employee', count(*) FROM docs GROUP BY 2 "
                + "UNION ALL SELECT 'y', body->'ShipTo'->>'City', count(*) FROM docs GROUP BY 2 "
                + "UNION ALL SELECT 'f', b::text, count(*) FROM (SELECT CASE WHEN (body->>'Freight')::numeric < 100 THEN 0 WHEN (body->>'Freight')::numeric >= 900 THEN 9 "
                + "ELSE floor((body->>'Freight')::numeric / 100)::int END AS b FROM docs) r GROUP BY b", []),
        };
        foreach (var (workload, make) in sql)
        {
            foreach (int clients in workload == "query-facets" ? [1] : Clients)
            {
                var (ops, seconds, p50, p99) = Drive(clients, async rnd =>
                {
                    var (text, args) = make(rnd);
                    await using var cmd = ds.CreateCommand(text);
                    foreach (var a in args)
                        cmd.Parameters.AddWithValue(a);
                    int n = 0;
                    await using var reader = await cmd.ExecuteReaderAsync();
                    while (await reader.ReadAsync())
                    {
                        _ = reader.IsDBNull(1) ? null : reader.GetString(1); // the document text (or facet value), as the client would receive it
                        n++;
                    }
                    return n;
                });
                rows.Add(new BenchResult("indexing", $"{workload}-{clients}-clients", "postgres", "-", ops, seconds, ops / seconds, null, null, null, null, null, p50, p99, null));
            }
        }
        Console.WriteLine($"#   {pg.Version}: queries done");
        return rows;
    }

    private const string Tsv = "to_tsvector('simple', (body->'ShipTo'->>'Line1') || ' ' || (body->'ShipTo'->>'City'))";

    internal static void Exec(NpgsqlDataSource ds, string sql)
    {
        using var c = ds.CreateCommand(sql);
        c.CommandTimeout = 3600;
        c.ExecuteNonQuery();
    }

    /// <summary>Runs <paramref name="clients"/> loops of <paramref name="op"/> for the suite's duration; ops, seconds, p50, p99 (ms).</summary>
    private (long Ops, double Seconds, double P50, double P99) Drive(int clients, Func<Random, Task<int>> op)
    {
        var latencies = new List<double>[clients];
        long results = 0;
        var sw = Stopwatch.StartNew();
        var tasks = Enumerable.Range(0, clients).Select(client => Task.Run(async () =>
        {
            var rnd = new Random(1000 + client);
            var mine = latencies[client] = new List<double>(100_000);
            while (sw.Elapsed < _duration)
            {
                long t0 = Stopwatch.GetTimestamp();
                Interlocked.Add(ref results, await op(rnd));
                mine.Add(Stopwatch.GetElapsedTime(t0).TotalMilliseconds);
            }
        })).ToArray();
        Task.WaitAll(tasks);
        sw.Stop();
        var all = latencies.SelectMany(l => l).Order().ToArray();
        if (results == 0)
            throw new InvalidOperationException("the queries returned nothing: the workload does not measure what it claims");
        double P(double q) => all.Length == 0 ? 0 : all[Math.Min(all.Length - 1, (int)(q * all.Length))];
        return (all.Length, sw.Elapsed.TotalSeconds, P(0.50), P(0.99));
    }

    internal static void Check(HttpResponseMessage r, HttpStatusCode expected)
    {
        if (r.StatusCode != expected)
            throw new InvalidOperationException($"{r.RequestMessage?.Method} {r.RequestMessage?.RequestUri}: {(int)r.StatusCode} {r.Content.ReadAsStringAsync().Result}");
    }
}
