using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Text;
using System.Text.Json;
using Npgsql;

namespace RavenLite.Bench;

/// <summary>
/// docs/benchmarks.md `etl`: a server process and a PostgreSQL (<see cref="PostgresPeer"/>) on loopback.
/// (1) 1M orders (100k with --quick) are bulk-inserted, then a SQL ETL task loads them — one <c>Orders</c> row per
/// order and one <c>OrderLines</c> row per line, the task's defaults (deletes by document id before the inserts) — timed
/// from the task's creation until it has processed the last etag; the floor is a plain <c>COPY</c> of the same rows,
/// made by the same transform in C# before the clock starts, from this process into identical tables in one
/// transaction. The two table pairs are then compared (row count and a hash over every row's text), so the rate is
/// of the same rows.
/// (2) With the task running, 64 clients PUT orders for a fixed time; one more client writes a probe order every
/// 20 ms and polls PostgreSQL until its row is there: commit-to-visible lag p50/p99.
/// </summary>
internal sealed class EtlSuite(bool quick, string workDir)
{
    private const int Clients = 64;
    private static readonly string[] OrdersCollection = ["Orders"];

    private const string Tables = """
        CREATE TABLE "Orders" ("Id" text NOT NULL, "Company" text, "Employee" text, "OrderedAt" timestamptz, "Freight" double precision, "Status" text, "City" text, "Total" double precision);
        CREATE INDEX ON "Orders" ("Id");
        CREATE TABLE "OrderLines" ("OrderId" text NOT NULL, "Product" text, "ProductName" text, "PricePerUnit" double precision, "Quantity" int, "Discount" double precision);
        CREATE INDEX ON "OrderLines" ("OrderId");
        """;

    // The columns in the order both the script's objects and the floor's rows give them.
    private const string Script = """
        var total = 0;
        for (var i = 0; i < this.Lines.length; i++) {
            var l = this.Lines[i];
            total += l.PricePerUnit * l.Quantity * (1 - l.Discount);
            loadToOrderLines({ Product: l.Product, ProductName: l.ProductName, PricePerUnit: l.PricePerUnit, Quantity: l.Quantity, Discount: l.Discount });
        }
        loadToOrders({ Company: this.Company, Employee: this.Employee, OrderedAt: this.OrderedAt, Freight: this.Freight, Status: this.Status, City: this.ShipTo.City, Total: total });
        """;

    public IEnumerable<BenchResult> Run()
    {
        int count = quick ? 100_000 : 1_000_000;
        var orders = new OrderDocuments(count);
        using var pg = PostgresPeer.Start(workDir);
        using (var admin = new NpgsqlConnection(pg.ConnectionString))
        {
            admin.Open();
            foreach (string db in new[] { "floor", "etl" })
                using (var c = new NpgsqlCommand($"CREATE DATABASE {db}", admin))
                    c.ExecuteNonQuery();
        }
        string floorCs = Database(pg.ConnectionString, "floor"), etlCs = Database(pg.ConnectionString, "etl");
        Execute(floorCs, Tables);
        Execute(etlCs, Tables);

        // The floor: the rows made up front, then one COPY per table in one transaction.
        var (orderRows, lineRows) = Rows(orders);
        var sw = Stopwatch.StartNew();
        using (var conn = new NpgsqlConnection(floorCs))
        {
            conn.Open();
            using var tx = conn.BeginTransaction();
            Copy(conn, "COPY \"OrderLines\" (\"OrderId\", \"Product\", \"ProductName\", \"PricePerUnit\", \"Quantity\", \"Discount\") FROM STDIN", lineRows);
            Copy(conn, "COPY \"Orders\" (\"Id\", \"Company\", \"Employee\", \"OrderedAt\", \"Freight\", \"Status\", \"City\", \"Total\") FROM STDIN", orderRows);
            tx.Commit();
        }
        double floor = sw.Elapsed.TotalSeconds;
        orderRows.Clear();
        lineRows.Clear();
        Console.WriteLine($"#   plain COPY of {count:N0} orders ({count * 6:N0} rows): {floor:N1} s");

        using var server = ServerProcess.Start(Path.Combine(workDir, "server"));
        var handler = new SocketsHttpHandler { MaxConnectionsPerServer = 256, PooledConnectionLifetime = TimeSpan.FromMinutes(10) };
        using var http = new HttpClient(handler) { BaseAddress = server.Url, Timeout = TimeSpan.FromMinutes(30) };
        Check(http.PutAsync("/admin/databases?name=shop", new StringContent("")).Result, HttpStatusCode.Created);
        Check(http.PostAsync("/databases/shop/bulk_insert?id=1", new BulkInsertSuite.BulkContent(orders)).Result, HttpStatusCode.Created);
        long lastEtag = LastEtag(http);
        var cs = JsonSerializer.Serialize(new { Name = "pg", Type = "Sql", FactoryName = "Npgsql", ConnectionString = etlCs });
        Check(http.PutAsync("/databases/shop/admin/connection-strings", new StringContent(cs)).Result, HttpStatusCode.OK);
        var configuration = JsonSerializer.Serialize(new
        {
            Name = "orders-to-pg",
            EtlType = "Sql",
            ConnectionStringName = "pg",
            SqlTables = new[] { new { TableName = "Orders", DocumentIdColumn = "Id" }, new { TableName = "OrderLines", DocumentIdColumn = "OrderId" } },
            Transforms = new[] { new { Name = "orders", Collections = OrdersCollection, Script } },
        });
        var before = Process(http);
        double cpuBefore = server.CpuSeconds();
        sw.Restart();
        using var created = http.PutAsync("/databases/shop/admin/etl", new StringContent(configuration)).Result;
        Check(created, HttpStatusCode.OK);
        long taskId = JsonDocument.Parse(created.Content.ReadAsStringAsync().Result).RootElement.GetProperty("TaskId").GetInt64();
        WaitProcessed(http, taskId, lastEtag);
        double etl = sw.Elapsed.TotalSeconds;
        var after = Process(http);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"#   server during the ETL: {(after.Allocated - before.Allocated) >> 20} MB allocated, GCs gen0 {after.Gen0 - before.Gen0} gen1 {after.Gen1 - before.Gen1} gen2 {after.Gen2 - before.Gen2}, paused {after.PauseMs - before.PauseMs:F0} ms, CPU {server.CpuSeconds() - cpuBefore:F1} s"));
        Console.WriteLine($"#   SQL ETL of the same orders: {etl:N1} s; peak RSS {server.PeakRssBytes() >> 20} MB");
        foreach (string table in new[] { "Orders", "OrderLines" })
        {
            string floorSum = Digest(floorCs, table), etlSum = Digest(etlCs, table);
            Console.WriteLine($"#   \"{table}\": floor {floorSum}, etl {etlSum}");
            if (floorSum != etlSum)
                throw new InvalidOperationException($"the ETL's \"{table}\" differs from the floor's: {etlSum} vs {floorSum}");
        }
        yield return new BenchResult("etl", "sql-etl-1m-orders", "ravenlite", "sync", count, etl, count / etl, null, null, null, null, null, null, null, server.PeakRssBytes());
        yield return new BenchResult("etl", "sql-etl-1m-orders", "postgres", "sync", count, floor, count / floor, null, null, null, null, null, null, null, null);

        var lags = new List<double>();
        var writes = Writes(http, etlCs, orders, TimeSpan.FromSeconds(quick ? 3 : 15), lags);
        var sorted = lags.Order().ToArray();
        double P(double q) => sorted.Length == 0 ? double.NaN : sorted[Math.Min(sorted.Length - 1, (int)(q * sorted.Length))];
        Console.WriteLine($"#   64 writers: {writes.Ops / writes.Seconds:N0} PUT/s; commit-to-row lag: {sorted.Length} probes, p50 {P(0.5):F1} ms, p99 {P(0.99):F1} ms, max {P(1):F1} ms");
        yield return new BenchResult("etl", "lag-under-64-clients", "ravenlite", "sync", sorted.Length, writes.Seconds, writes.Ops / writes.Seconds, null, null, null, null, null, P(0.5), P(0.99), server.PeakRssBytes());
    }

    /// <summary>64 clients PUT orders for <paramref name="duration"/>; a probe order every 20 ms is timed until its row is in PostgreSQL.</summary>
    private static (long Ops, double Seconds) Writes(HttpClient http, string etlCs, OrderDocuments docs, TimeSpan duration, List<double> lags)
    {
        using var stop = new CancellationTokenSource();
        var probes = Task.Run(async () =>
        {
            await using var conn = new NpgsqlConnection(etlCs);
            await conn.OpenAsync();
            for (int n = 0; !stop.IsCancellationRequested; n++)
            {
                string id = $"probes/{n}";
                using (var put = await http.PutAsync($"/databases/shop/docs?id={id}", new ReadOnlyMemoryContent(docs.Document(n % docs.Count))))
                    Check(put, HttpStatusCode.Created);
                var committed = Stopwatch.GetTimestamp();
                await using var query = new NpgsqlCommand("SELECT count(*) FROM \"Orders\" WHERE \"Id\" = $1", conn) { Parameters = { new() { Value = id } } };
                while ((long)(await query.ExecuteScalarAsync())! == 0)
                    await Task.Delay(1);
                lags.Add(Stopwatch.GetElapsedTime(committed).TotalMilliseconds);
                await Task.Delay(20);
            }
        });
        var result = WritesSuite.Drive(Clients, duration, async (client, i) =>
        {
            using var r = await http.PutAsync($"/databases/shop/docs?id=orders/w{client}-{i}", new ReadOnlyMemoryContent(docs.Document((client * 7919 + i) % docs.Count)));
            if (r.StatusCode != HttpStatusCode.Created)
                throw new InvalidOperationException($"PUT answered {(int)r.StatusCode}");
        });
        stop.Cancel();
        probes.Wait();
        return (result.Ops, result.Seconds);
    }

    /// <summary>The COPY text of every order's row and of its lines' rows, as the script makes them (same arithmetic, same number format).</summary>
    private static (List<char[]> Orders, List<char[]> Lines) Rows(OrderDocuments docs)
    {
        var orders = new List<char[]>();
        var lines = new List<char[]>();
        var o = new StringBuilder(1 << 20);
        var l = new StringBuilder(1 << 20);
        for (int i = 0; i < docs.Count; i++)
        {
            using var doc = JsonDocument.Parse(docs.Document(i));
            var root = doc.RootElement;
            string id = OrderDocuments.Id(i);
            double total = 0;
            foreach (var line in root.GetProperty("Lines").EnumerateArray())
            {
                double price = line.GetProperty("PricePerUnit").GetDouble(), quantity = line.GetProperty("Quantity").GetDouble(), discount = line.GetProperty("Discount").GetDouble();
                total += price * quantity * (1 - discount);
                l.Append(id).Append('\t').Append(line.GetProperty("Product").GetString()).Append('\t').Append(line.GetProperty("ProductName").GetString())
                    .Append('\t').Append(Number(price)).Append('\t').Append(Number(quantity)).Append('\t').Append(Number(discount)).Append('\n');
            }
            o.Append(id).Append('\t').Append(root.GetProperty("Company").GetString()).Append('\t').Append(root.GetProperty("Employee").GetString())
                .Append('\t').Append(root.GetProperty("OrderedAt").GetString()).Append('\t').Append(Number(root.GetProperty("Freight").GetDouble()))
                .Append('\t').Append(root.GetProperty("Status").GetString()).Append('\t').Append(root.GetProperty("ShipTo").GetProperty("City").GetString())
                .Append('\t').Append(Number(total)).Append('\n');
            Flush(o, orders);
            Flush(l, lines);
        }
        Flush(o, orders, force: true);
        Flush(l, lines, force: true);
        return (orders, lines);
    }

    private static void Flush(StringBuilder sb, List<char[]> chunks, bool force = false)
    {
        if (sb.Length < (1 << 20) && !(force && sb.Length > 0))
            return;
        var chunk = new char[sb.Length];
        sb.CopyTo(0, chunk, sb.Length);
        chunks.Add(chunk);
        sb.Clear();
    }

    /// <summary>As the ETL writes a number: an integral one as an integer, any other round-trip.</summary>
    private static string Number(double d) =>
        d == Math.Floor(d) && Math.Abs(d) < 1e15 ? ((long)d).ToString(CultureInfo.InvariantCulture) : d.ToString("R", CultureInfo.InvariantCulture);

    private static void Copy(NpgsqlConnection conn, string command, List<char[]> chunks)
    {
        using var writer = conn.BeginTextImport(command);
        foreach (var chunk in chunks)
            writer.Write(chunk);
    }

    /// <summary>Row count and a hash over every row's text, order-independent: equal for two tables holding the same rows.</summary>
    private static string Digest(string cs, string table)
    {
        using var conn = new NpgsqlConnection(cs);
        conn.Open();
        using var c = new NpgsqlCommand($"SELECT count(*), sum(hashtextextended(t::text, 0)) FROM \"{table}\" t", conn) { CommandTimeout = 600 };
        using var r = c.ExecuteReader();
        r.Read();
        return string.Create(CultureInfo.InvariantCulture, $"{r.GetInt64(0)} rows, hash {r.GetDecimal(1)}");
    }

    private static void WaitProcessed(HttpClient http, long taskId, long etag)
    {
        var deadline = DateTime.UtcNow.AddMinutes(60);
        while (true)
        {
            using var task = JsonDocument.Parse(http.GetStringAsync($"/databases/shop/task?key={taskId}&type=SqlEtl").Result);
            var t = task.RootElement.GetProperty("Transformations")[0];
            if (t.TryGetProperty("Error", out var error) && error.ValueKind == JsonValueKind.String)
                throw new InvalidOperationException("the ETL failed: " + error.GetString());
            if (t.TryGetProperty("LastProcessedEtag", out var last) && last.GetInt64() >= etag)
                return;
            if (DateTime.UtcNow > deadline)
                throw new TimeoutException("the ETL did not finish: " + t);
            Thread.Sleep(20);
        }
    }

    /// <summary>The server process's allocation and GC counters (GET stats, Process).</summary>
    private static (long Allocated, long Gen0, long Gen1, long Gen2, double PauseMs) Process(HttpClient http)
    {
        using var stats = JsonDocument.Parse(http.GetStringAsync("/databases/shop/stats").Result);
        var p = stats.RootElement.GetProperty("Process");
        return (p.GetProperty("AllocatedBytes").GetInt64(), p.GetProperty("GcGen0Collections").GetInt64(), p.GetProperty("GcGen1Collections").GetInt64(),
            p.GetProperty("GcGen2Collections").GetInt64(), p.GetProperty("GcTotalPauseMs").GetDouble());
    }

    private static long LastEtag(HttpClient http)
    {
        using var stats = JsonDocument.Parse(http.GetStringAsync("/databases/shop/stats").Result);
        return stats.RootElement.GetProperty("LastDocEtag").GetInt64();
    }

    private static string Database(string connectionString, string database) =>
        new NpgsqlConnectionStringBuilder(connectionString) { Database = database }.ConnectionString;

    private static void Execute(string cs, string sql)
    {
        using var conn = new NpgsqlConnection(cs);
        conn.Open();
        using var c = new NpgsqlCommand(sql, conn);
        c.ExecuteNonQuery();
    }

    private static void Check(HttpResponseMessage r, HttpStatusCode expected)
    {
        if (r.StatusCode != expected)
            throw new InvalidOperationException($"{r.RequestMessage?.Method} {r.RequestMessage?.RequestUri} answered {(int)r.StatusCode}: {r.Content.ReadAsStringAsync().Result}");
    }
}
