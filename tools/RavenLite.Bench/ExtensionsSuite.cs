using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Text;
using System.Text.Json;
using Npgsql;

namespace RavenLite.Bench;

/// <summary>
/// Document extensions, each against its measure in the same run:
/// <list type="bullet">
/// <item><c>counter-increment-64-clients</c>: one counter increment per request (POST /counters) from 64 clients over
///   1,000 documents' counters for a fixed time, against PostgreSQL <c>UPDATE counters SET n = n + 1 WHERE id = $1</c>
///   on 1,000 rows from 64 connections (autocommit, synchronous_commit on). Target ≥ 2× PostgreSQL, p99 ≤ 20 ms.</item>
/// <item><c>timeseries-bulk-insert</c>: 1M entries (1 value, 1 s apart, values moving slowly) through the bulk-insert
///   stream in items of 1,000 entries; entries/s (target ≥ 1M/s) and the series' storage bytes per entry (pages of the
///   TimeSeries tree × 8 KiB / entries; target ≤ 4).</item>
/// <item><c>attachment-1mb</c> and <c>attachment-100mb</c>: uploads of incompressible content (PUT /attachments, each
///   durable when answered; untimed uploads first), MB/s, against the machine's O_DIRECT sequential write limit
///   measured in the same run (target ≥ 50%), and the same uploads to <see cref="HttpSink"/> (HTTP alone, bodies
///   read and discarded; <c>http-sha256</c>: also hashed): the floors HTTP, and HTTP with the content hash, set for any
///   store behind them.</item>
/// </list>
/// </summary>
internal sealed class ExtensionsSuite(bool quick, string workDir, bool withPeer = true, string[]? only = null)
{
    private const int Clients = 64;
    private const int CounterDocuments = 1000;

    public IEnumerable<BenchResult> Run()
    {
        bool Runs(string part) => only is not { Length: > 0 } || only.Contains(part, StringComparer.OrdinalIgnoreCase);
        var unknown = only?.Where(o => o is not ("counters" or "timeseries" or "attachments")).ToArray();
        if (unknown is { Length: > 0 })
            throw new ArgumentException($"extensions --only takes counters, timeseries and attachments, not {string.Join(", ", unknown)}");
        var results = new List<BenchResult>();
        BenchResult? limit = null;
        if (Runs("attachments"))
        {
            var limits = new LimitsSuite(quick, workDir);
            limit = limits.DirectWrite();
            results.Add(limit);
            results.Add(limits.BufferedWrite());
        }
        using (var server = ServerProcess.Start(Path.Combine(workDir, "ravenlite-extensions")))
        {
            var handler = new SocketsHttpHandler { MaxConnectionsPerServer = 256, PooledConnectionLifetime = TimeSpan.FromMinutes(10) };
            using var http = new HttpClient(handler) { BaseAddress = server.Url, Timeout = TimeSpan.FromMinutes(10) };
            Check(http.PutAsync("/admin/databases?name=bench", new StringContent("")).Result, HttpStatusCode.Created);
            if (Runs("counters"))
                results.Add(Counters(http));
            if (Runs("timeseries"))
                results.AddRange(TimeSeries(http));
            if (limit != null)
            {
                using var sink = HttpSink.Start();
                using var sinkHttp = new HttpClient(new SocketsHttpHandler { MaxConnectionsPerServer = 256 }) { BaseAddress = sink.Url, Timeout = TimeSpan.FromMinutes(10) };
                foreach (var (size, count, clients) in new[] { (1 << 20, quick ? 50 : 200, 1), (1 << 20, quick ? 200 : 800, 8), (100 << 20, quick ? 2 : 5, 1) })
                {
                    results.Add(Attachments(http, size, count, clients, limit.OpsPerSec, sink: null));
                    results.Add(Attachments(sinkHttp, size, count, clients, limit.OpsPerSec, sink: "http-sink"));
                    results.Add(Attachments(sinkHttp, size, count, clients, limit.OpsPerSec, sink: "http-sha256"));
                }
            }
        }
        foreach (var r in results)
            yield return r;
        if (!withPeer || !Runs("counters"))
            yield break;
        using var pg = PostgresPeer.Start(workDir);
        using var ds = NpgsqlDataSource.Create(pg.ConnectionString);
        using (var c = ds.CreateCommand("CREATE TABLE counters(id text PRIMARY KEY, n bigint NOT NULL)"))
            c.ExecuteNonQuery();
        using (var c = ds.CreateCommand("INSERT INTO counters SELECT 'docs/' || i, 0 FROM generate_series(0, 999) i"))
            c.ExecuteNonQuery();
        var connections = Enumerable.Range(0, Clients).Select(_ => ds.OpenConnection()).ToArray();
        var (ops, seconds, p50, p99) = WritesSuite.Drive(Clients, Duration, async (client, i) =>
        {
            await using var cmd = new NpgsqlCommand("UPDATE counters SET n = n + 1 WHERE id = $1", connections[client]);
            cmd.Parameters.AddWithValue("docs/" + ((client * 7919 + i) % CounterDocuments).ToString(CultureInfo.InvariantCulture));
            await cmd.ExecuteNonQueryAsync();
        });
        long total;
        using (var c = ds.CreateCommand("SELECT sum(n) FROM counters"))
            total = (long)(decimal)c.ExecuteScalar()!;
        foreach (var c in connections)
            c.Dispose();
        if (total != ops)
            throw new InvalidOperationException($"PostgreSQL counted {total} increments for {ops} acknowledged");
        Console.WriteLine($"#   {pg.Version}: {ops} increments, sum checked");
        yield return new BenchResult("extensions", "counter-increment-64-clients", "postgres", "sync", ops, seconds, ops / seconds, null, null, null, null, ops, p50, p99, null);
    }

    private TimeSpan Duration => TimeSpan.FromSeconds(quick ? 3 : 10);

    private static void Check(HttpResponseMessage r, HttpStatusCode expected)
    {
        if (r.StatusCode != expected)
            throw new InvalidOperationException($"{r.RequestMessage?.Method} {r.RequestMessage?.RequestUri}: {(int)r.StatusCode} {r.Content.ReadAsStringAsync().Result}");
    }

    private BenchResult Counters(HttpClient http)
    {
        var create = new StringBuilder("{\"Commands\":[");
        for (int d = 0; d < CounterDocuments; d++)
            create.Append(d == 0 ? "" : ",").Append(CultureInfo.InvariantCulture, $"{{\"Id\":\"docs/{d}\",\"Type\":\"PUT\",\"Document\":{{\"@metadata\":{{\"@collection\":\"Docs\"}}}}}}");
        create.Append("]}");
        Check(http.PostAsync("/databases/bench/bulk_docs", new StringContent(create.ToString(), Encoding.UTF8, "application/json")).Result, HttpStatusCode.Created);
        var (ops, seconds, p50, p99) = WritesSuite.Drive(Clients, Duration, async (client, i) =>
        {
            string doc = "docs/" + ((client * 7919 + i) % CounterDocuments).ToString(CultureInfo.InvariantCulture);
            using var body = new StringContent($$"""{"Documents":[{"DocumentId":"{{doc}}","Operations":[{"Type":"Increment","CounterName":"Hits","Delta":1}]}]}""", Encoding.UTF8, "application/json");
            using var r = await http.PostAsync("/databases/bench/counters", body);
            if (r.StatusCode != HttpStatusCode.OK)
                throw new InvalidOperationException($"POST /counters answered {(int)r.StatusCode}");
        });
        // Every acknowledged increment is there.
        long total = 0;
        for (int d = 0; d < CounterDocuments; d++)
        {
            using var json = JsonDocument.Parse(http.GetStringAsync($"/databases/bench/counters?docId=docs/{d}&counter=Hits").Result);
            var c = json.RootElement.GetProperty("Counters");
            if (c.GetArrayLength() > 0 && c[0].ValueKind == JsonValueKind.Object)
                total += c[0].GetProperty("TotalValue").GetInt64();
        }
        if (total != ops)
            throw new InvalidOperationException($"the counters add up to {total} for {ops} acknowledged increments");
        Console.WriteLine($"#   ravenlite: {ops} increments, sum checked");
        return new BenchResult("extensions", "counter-increment-64-clients", "ravenlite", "sync", ops, seconds, ops / seconds, null, null, null, null, null, p50, p99, null);
    }

    private IEnumerable<BenchResult> TimeSeries(HttpClient http)
    {
        int entries = quick ? 100_000 : 1_000_000;
        const int perItem = 1000;
        Check(http.PutAsync("/databases/bench/docs?id=sensors/1", new StringContent("""{"@metadata":{"@collection":"Sensors"}}""")).Result, HttpStatusCode.Created);
        long unixStart = new DateTimeOffset(2026, 1, 1, 0, 0, 0, TimeSpan.Zero).ToUnixTimeMilliseconds();
        var sw = Stopwatch.StartNew();
        Check(http.PostAsync("/databases/bench/bulk_insert?id=2", new TimeSeriesContent(entries, perItem, unixStart)).Result, HttpStatusCode.Created);
        sw.Stop();
        yield return new BenchResult("extensions", "timeseries-bulk-insert", "ravenlite", "sync", entries, sw.Elapsed.TotalSeconds, entries / sw.Elapsed.TotalSeconds, null, null, null, null, null, null, null, null);
        using var layout = JsonDocument.Parse(http.GetStringAsync("/studio-api/storage?database=bench").Result);
        var tree = layout.RootElement.GetProperty("Trees").EnumerateArray().Single(t => t.GetProperty("Name").GetString() == "TimeSeries");
        long pages = tree.GetProperty("LeafPages").GetInt64() + tree.GetProperty("BranchPages").GetInt64() + tree.GetProperty("OverflowPages").GetInt64();
        using var stats = JsonDocument.Parse(http.GetStringAsync("/databases/bench/timeseries/stats?docId=sensors/1").Result);
        long stored = stats.RootElement.GetProperty("TimeSeries")[0].GetProperty("NumberOfEntries").GetInt64();
        if (stored != entries)
            throw new InvalidOperationException($"the series holds {stored} entries, {entries} were inserted");
        double bytesPerEntry = pages * 8192.0 / entries;
        Console.WriteLine($"#   time series: {entries} entries in {tree.GetProperty("Entries").GetInt64()} segments, {pages} pages = {bytesPerEntry:F2} bytes per entry");
        yield return new BenchResult("extensions", "timeseries-bytes-per-entry", "ravenlite", "sync", entries, 1, bytesPerEntry, null, null, null, pages * 8192L, null, null, null, null);
    }

    /// <summary>The bulk-insert stream of one document's series: items of <c>perItem</c> entries in the clients' compact form.</summary>
    private sealed class TimeSeriesContent(int entries, int perItem, long unixStart) : ItemStreamContent((entries + perItem - 1) / perItem, (item, buffer) =>
    {
        int start = item * perItem;
        buffer.Write("""{"Id":"sensors/1","Type":"TimeSeriesBulkInsert","TimeSeries":{"Name":"Temperature","TimeFormat":"UnixTimeInMs","Appends":["""u8);
        for (int i = start; i < Math.Min(entries, start + perItem); i++)
        {
            if (i > start)
                buffer.WriteByte((byte)',');
            double value = 20 + (i / 60 % 10) + (i % 7) * 0.5; // a temperature that moves by half degrees
            buffer.Write(Encoding.ASCII.GetBytes(string.Create(CultureInfo.InvariantCulture, $"[{unixStart + i * 1000L},1,{value}]")));
        }
        buffer.Write("]}}"u8);
    });

    private static BenchResult Attachments(HttpClient http, int size, int count, int clients, double limitMbPerSec, string? sink)
    {
        string name = (size >= 100 << 20 ? "attachment-100mb" : "attachment-1mb") + (clients > 1 ? $"-{clients}-clients" : "");
        string Url(string attachment) => sink switch
        {
            "http-sink" => "/sink",
            "http-sha256" => "/sink?sha256",
            _ => $"/databases/bench/attachments?id=files/{name}&name={attachment}",
        };
        if (sink == null)
            Check(http.PutAsync($"/databases/bench/docs?id=files/{name}", new StringContent("""{"@metadata":{"@collection":"Files"}}""")).Result, HttpStatusCode.Created);
        // Untimed uploads first (20 of 1 MB, one of 100 MB): the data file and journal grow to their working size, and
        // the code on both sides is compiled, outside the measurement.
        var warm = new byte[size];
        new Random(-size).NextBytes(warm);
        for (int w = 0; w < (size >= 100 << 20 ? 1 : 20); w++)
        {
            warm[0] = (byte)w;
            Check(http.PutAsync(Url($"warm-up-{w}"), new ByteArrayContent(warm)).Result, HttpStatusCode.Created);
        }
        var sw = Stopwatch.StartNew();
        Parallel.For(0, clients, new ParallelOptions { MaxDegreeOfParallelism = clients }, client =>
        {
            var content = new byte[size];
            new Random(size + client).NextBytes(content);
            for (int i = client; i < count; i += clients)
            {
                content[0] = (byte)i;
                content[1] = (byte)(i >> 8); // distinct contents: no upload is deduplicated away
                Check(http.PutAsync(Url($"f{i}"), new ByteArrayContent(content)).Result, HttpStatusCode.Created);
            }
        });
        sw.Stop();
        double mbPerSec = (double)size * count / 1048576 / sw.Elapsed.TotalSeconds;
        Console.WriteLine($"#   {name}{sink switch { "http-sink" => " to the HTTP sink (read and discarded)", "http-sha256" => " to the HTTP sink (SHA-256, discarded)", _ => "" }}: {count} uploads from {clients} client(s), {mbPerSec:F1} MB/s = {mbPerSec / limitMbPerSec * 100:F0}% of the O_DIRECT sequential write limit ({limitMbPerSec:F0} MB/s)");
        return new BenchResult("extensions", name, sink ?? "ravenlite", "sync", count, sw.Elapsed.TotalSeconds, mbPerSec, null, null, null, null, null, null, null, null);
    }
}
