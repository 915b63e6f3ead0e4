using System.Diagnostics;
using System.Net;
using System.Net.WebSockets;
using System.Text;
using Npgsql;
using RavenLite.Client;
using RavenLite.Client.Subscriptions;

namespace RavenLite.Bench;

/// <summary>
/// Live data, each against its measure in the same run:
/// <list type="bullet">
/// <item><c>subscription-delivery</c>: 1M orders of ≈1 KB (100K with --quick) bulk-inserted, then one data subscription
///   worker (the .NET client over the TCP port, batches of 4,096, CloseWhenNoDocsLeft) receives and acknowledges every
///   one; docs/s (target ≥ 100K). Peer: PostgreSQL reading the same rows in keyset pages of 4,096 from one connection
///   (what a polling consumer does).</item>
/// <item><c>changes-100-subscribers</c>: PUTs from 64 clients for a fixed time, alternately with no changes connection
///   and with 100 WebSocket connections subscribed to every document (each must receive every change), three rounds;
///   writes/s of both and notifications/s delivered. Target: writes slowed ≤ 10%. Each round also runs the floor
///   (engine <c>push-floor</c>): the same writes while the 100 connections receive, from <see cref="HttpSink"/> in its
///   own process, copies of a real notification at 90% of that round's unwatched rate in 20 ms frames — the
///   transport's cost alone, with no server work for the notifications.</item>
/// </list>
/// </summary>
internal sealed class LiveSuite(bool quick, string workDir, bool withPeer = true, string[]? only = null)
{
    private const int Clients = 64;
    private const int Subscribers = 100;

    private TimeSpan Duration => TimeSpan.FromSeconds(quick ? 3 : 10);

    public IEnumerable<BenchResult> Run()
    {
        int count = quick ? 100_000 : 1_000_000;
        var docs = new OrderDocuments(count);
        var results = new List<BenchResult>();
        using (var server = ServerProcess.Start(Path.Combine(workDir, "ravenlite-live")))
        {
            var handler = new SocketsHttpHandler { MaxConnectionsPerServer = 256, PooledConnectionLifetime = TimeSpan.FromMinutes(10) };
            using var http = new HttpClient(handler) { BaseAddress = server.Url, Timeout = TimeSpan.FromMinutes(30) };
            Check(http.PutAsync("/admin/databases?name=bench", new StringContent("")).Result, HttpStatusCode.Created);
            Check(http.PostAsync("/databases/bench/bulk_insert?id=1", new BulkInsertSuite.BulkContent(docs)).Result, HttpStatusCode.Created);
            bool all = only is not { Length: > 0 };
            if (all)
            {
                results.Add(Subscription(server, http, count));
                results.AddRange(ExportImport(server, http, count));
            }
            if (all || only!.Contains("changes"))
                results.AddRange(Changes(server, http, docs));
            if (all || only!.Contains("backups"))
                results.AddRange(Backups(server, http, docs));
        }
        foreach (var r in results)
            yield return r;
        if (withPeer && only is not { Length: > 0 })
        {
            foreach (var r in Postgres(docs))
                yield return r;
        }
    }

    private static BenchResult Subscription(ServerProcess server, HttpClient http, int count)
    {
        Check(http.PutAsync("/databases/bench/subscriptions", new StringContent("""{"Name":"all","Query":"from Orders"}""")).Result, HttpStatusCode.Created);
        using var store = new DocumentStore { Urls = [server.Url.ToString()], Database = "bench" };
        store.Initialize();
        long received = 0, batches = 0;
        var worker = store.Subscriptions.GetSubscriptionWorker<Order>(new SubscriptionWorkerOptions("all") { CloseWhenNoDocsLeft = true });
        double serverCpu0 = server.CpuSeconds(), clientCpu0 = Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds;
        var sw = Stopwatch.StartNew();
        double freight = 0;
        worker.Run(batch =>
        {
            foreach (var item in batch.Items)
                freight += item.Result.Freight + item.Result.Lines.Count; // the worker reads every order it gets
            received += batch.Items.Count;
            batches++;
        }).Wait();
        if (freight <= 0)
            throw new InvalidOperationException("the worker's orders were empty");
        sw.Stop();
        worker.DisposeAsync().AsTask().Wait();
        if (received != count)
            throw new InvalidOperationException($"the worker received {received} documents of {count}");
        double serverCpu = server.CpuSeconds() - serverCpu0, clientCpu = Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds - clientCpu0;
        Console.WriteLine($"#   ravenlite: {received:N0} documents in {batches:N0} batches, acknowledged; server CPU {serverCpu * 1e6 / received:N1} µs/doc, worker CPU {clientCpu * 1e6 / received:N1} µs/doc; peak RSS {server.PeakRssBytes() >> 20} MB");
        return new BenchResult("live", "subscription-delivery", "ravenlite", "sync", received, sw.Elapsed.TotalSeconds, received / sw.Elapsed.TotalSeconds,
            null, null, null, null, batches, null, null, server.PeakRssBytes());
    }

    /// <summary>The 1M orders exported to a .ravendbdump file, then imported into a new database; docs/s of each.</summary>
    private List<BenchResult> ExportImport(ServerProcess server, HttpClient http, int count)
    {
        string file = Path.Combine(workDir, "export.ravendbdump");
        var sw = Stopwatch.StartNew();
        using (var r = http.SendAsync(new HttpRequestMessage(HttpMethod.Post, "/databases/bench/smuggler/export?operationId=1001") { Content = new StringContent("{}") }, HttpCompletionOption.ResponseHeadersRead).Result)
        {
            Check(r, HttpStatusCode.OK);
            using var output = File.Create(file);
            r.Content.ReadAsStream().CopyTo(output);
        }
        sw.Stop();
        double exportSeconds = sw.Elapsed.TotalSeconds;
        long bytes = new FileInfo(file).Length;
        Check(http.PutAsync("/admin/databases?name=imported", new StringContent("")).Result, HttpStatusCode.Created);
        sw.Restart();
        using (var input = File.OpenRead(file))
        {
            var r = http.PostAsync("/databases/imported/smuggler/import?operationId=1002", new StreamContent(input)).Result;
            Check(r, HttpStatusCode.OK);
        }
        sw.Stop();
        double importSeconds = sw.Elapsed.TotalSeconds;
        long imported;
        using (var stats = System.Text.Json.JsonDocument.Parse(http.GetStringAsync("/databases/imported/stats").Result))
            imported = stats.RootElement.GetProperty("CountOfDocuments").GetInt64();
        if (imported != count)
            Console.WriteLine($"#   note: the imported database has {imported:N0} documents");
        Console.WriteLine($"#   ravenlite: export {bytes / 1048576.0:N0} MB ({bytes / (double)count:N0} B/doc gzip) in {exportSeconds:N1} s; import in {importSeconds:N1} s; peak RSS {server.PeakRssBytes() >> 20} MB");
        File.Delete(file);
        return
        [
            new BenchResult("live", "export-1kb", "ravenlite", "sync", count, exportSeconds, count / exportSeconds, null, null, null, bytes, null, null, null, server.PeakRssBytes()),
            new BenchResult("live", "import-1kb", "ravenlite", "sync", count, importSeconds, count / importSeconds, null, null, null, null, null, null, null, server.PeakRssBytes()),
        ];
    }

    /// <summary>
    /// Rounds of 64-client PUTs alternating without and with 100 connections subscribed to every document (the
    /// connections opened before and closed after each watched phase), so that the machine's drift between phases
    /// shows as round-to-round spread rather than as the ratio; the row's rates are the totals over the rounds.
    /// </summary>
    private List<BenchResult> Changes(ServerProcess server, HttpClient http, OrderDocuments docs)
    {
        int rounds = quick ? 1 : 3;
        long quietOps = 0, watchedOps = 0, delivered = 0;
        double quietSeconds = 0, watchedSeconds = 0, deliverySeconds = 0;
        var quietLatencies = new List<(double P50, double P99)>();
        var watchedLatencies = new List<(double P50, double P99)>();
        var ratios = new List<double>();
        long floorOps = 0, floorDelivered = 0;
        double floorSeconds = 0;
        var floorLatencies = new List<(double P50, double P99)>();
        var floorRatios = new List<double>();
        using var sink = HttpSink.Start();
        byte[] watchDocs = Encoding.UTF8.GetBytes("""{"CommandId":1,"Command":"watch-docs"}""");
        for (int round = 1; round <= rounds; round++)
        {
            var cpu0 = (Server: server.CpuSeconds(), Bench: Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds);
            var (ops0, seconds0, p50a, p99a) = Writes(http, docs, $"quiet{round}");
            var cpu1 = (Server: server.CpuSeconds(), Bench: Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds);
            var (ops1, seconds1, p50b, p99b, got, delivery) = WatchedWrites(http, docs, $"watched{round}", new Uri($"ws://{server.Url.Authority}/databases/bench/changes"), watchDocs, everyChange: true);
            var cpu2 = (Server: server.CpuSeconds(), Bench: Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds);
            // The floor: the same writes while each of 100 connections gets notifications from the sink process at 90%
            // of the unwatched write rate (what the target allows), in 20 ms frames, with no server work for them.
            double pushRate = 0.9 * ops0 / seconds0;
            var (ops2, seconds2, p50c, p99c, pushed, _) = WatchedWrites(http, docs, $"floor{round}",
                new Uri(string.Create(System.Globalization.CultureInfo.InvariantCulture, $"ws://{sink.Url.Authority}/push?rate={pushRate:F0}")),
                _notification ?? throw new InvalidOperationException("no notification was captured"), everyChange: false);
            floorOps += ops2;
            floorSeconds += seconds2;
            floorDelivered += pushed;
            floorLatencies.Add((p50c, p99c));
            floorRatios.Add(ops2 / seconds2 / (ops0 / seconds0));
            Console.WriteLine($"#   floor round {round}: {ops2 / seconds2:N0} writes/s while the sink pushed {pushed / seconds2:N0} notifications/s to {Subscribers} connections ({pushRate:N0}/s each) = {floorRatios[^1]:P0} of the unwatched rate");
            quietOps += ops0;
            quietSeconds += seconds0;
            watchedOps += ops1;
            watchedSeconds += seconds1;
            delivered += got;
            deliverySeconds += delivery;
            quietLatencies.Add((p50a, p99a));
            watchedLatencies.Add((p50b, p99b));
            ratios.Add(ops1 / seconds1 / (ops0 / seconds0));
            Console.WriteLine($"#   ravenlite round {round}: {ops0 / seconds0:N0} writes/s unwatched, {ops1 / seconds1:N0} watched by {Subscribers} connections " +
                $"({got:N0} notifications in {delivery:N1} s) = {ratios[^1]:P0}; CPU per write, server {(cpu1.Server - cpu0.Server) / ops0 * 1e6:N0} / {(cpu2.Server - cpu1.Server) / ops1 * 1e6:N0} µs, " +
                $"bench {(cpu1.Bench - cpu0.Bench) / ops0 * 1e6:N0} / {(cpu2.Bench - cpu1.Bench) / ops1 * 1e6:N0} µs");
        }
        double overall = watchedOps / watchedSeconds / (quietOps / quietSeconds);
        Console.WriteLine($"#   ravenlite: watched writes at {overall:P0} of the unwatched rate over {rounds} round(s); median round {ratios.Order().ElementAt(ratios.Count / 2):P0}");
        Console.WriteLine($"#   floor: writes at {floorOps / floorSeconds / (quietOps / quietSeconds):P0} of the unwatched rate while only the transport ran, {floorDelivered / floorSeconds:N0} notifications/s pushed (median round {floorRatios.Order().ElementAt(floorRatios.Count / 2):P0})");
        return
        [
            new BenchResult("live", "writes-64-clients-no-subscribers", "ravenlite", "sync", quietOps, quietSeconds, quietOps / quietSeconds, null, null, null, null, null,
                quietLatencies.Max(l => l.P50), quietLatencies.Max(l => l.P99), null),
            new BenchResult("live", "writes-64-clients-100-subscribers", "ravenlite", "sync", watchedOps, watchedSeconds, watchedOps / watchedSeconds, null, null, null, null, null,
                watchedLatencies.Max(l => l.P50), watchedLatencies.Max(l => l.P99), null),
            new BenchResult("live", "writes-64-clients-100-subscribers", "push-floor", "sync", floorOps, floorSeconds, floorOps / floorSeconds, null, null, null, null, null,
                floorLatencies.Max(l => l.P50), floorLatencies.Max(l => l.P99), null),
            new BenchResult("live", "changes-notifications-100-subscribers", "ravenlite", "sync", delivered, deliverySeconds, delivered / deliverySeconds, null, null, null, null, null, null, null, server.PeakRssBytes()),
        ];
    }

    /// <summary>One notification as the server sent it (the first one received), for the transport floor's frames.</summary>
    private byte[]? _notification;

    /// <summary>
    /// One watched phase: subscribers connect to <paramref name="url"/> and send <paramref name="first"/>, 64 clients
    /// write; with <paramref name="everyChange"/> (the server's changes API) every subscriber must receive every change.
    /// </summary>
    private (long Ops, double Seconds, double P50, double P99, long Delivered, double DeliverySeconds) WatchedWrites(HttpClient http, OrderDocuments docs, string tag,
        Uri url, byte[] first, bool everyChange)
    {
        var sockets = new List<ClientWebSocket>();
        long delivered = 0;
        using var stop = new CancellationTokenSource();
        var readers = new List<Task>();
        for (int i = 0; i < Subscribers; i++)
        {
            var ws = new ClientWebSocket();
            ws.ConnectAsync(url, CancellationToken.None).Wait();
            ws.SendAsync(first, WebSocketMessageType.Text, true, CancellationToken.None).Wait();
            sockets.Add(ws);
            readers.Add(Task.Run(async () =>
            {
                var buffer = new byte[256 * 1024];
                bool messageStart = true; // the next receive begins a message (a whole frame in one receive is parsed for the floor's notification)
                try
                {
                    while (!stop.IsCancellationRequested)
                    {
                        var r = await ws.ReceiveAsync(buffer, stop.Token);
                        if (r.MessageType == WebSocketMessageType.Close)
                            throw new InvalidOperationException("a subscriber was closed: " + ws.CloseStatusDescription);
                        // Count notifications: each is one DocumentChange object in the frame's array.
                        Interlocked.Add(ref delivered, Count(buffer.AsSpan(0, r.Count), "\"DocumentChange\""u8));
                        if (everyChange && _notification == null && messageStart && r.EndOfMessage && r.Count > 2 && buffer[0] == (byte)'[')
                        {
                            using var frame = System.Text.Json.JsonDocument.Parse(buffer.AsMemory(0, r.Count));
                            foreach (var n in frame.RootElement.EnumerateArray())
                                if (n.TryGetProperty("Type", out var type) && type.ValueEquals("DocumentChange"))
                                    _notification ??= Encoding.UTF8.GetBytes(n.GetRawText());
                        }
                        messageStart = r.EndOfMessage;
                    }
                }
                catch (OperationCanceledException)
                {
                }
            }));
        }
        Thread.Sleep(500); // every subscription confirmed
        long before = Interlocked.Read(ref delivered);
        var (ops, seconds, p50, p99) = Writes(http, docs, tag);
        // Every subscriber receives every change: wait for the last ones.
        long expected = before + ops * Subscribers;
        var wait = Stopwatch.StartNew();
        while (everyChange && Interlocked.Read(ref delivered) < expected && wait.Elapsed < TimeSpan.FromSeconds(60))
            Thread.Sleep(50);
        double deliverySeconds = seconds + wait.Elapsed.TotalSeconds;
        long got = Interlocked.Read(ref delivered) - before;
        stop.Cancel();
        foreach (var ws in sockets)
            ws.Abort();
        Task.WaitAll(readers.Select(r => r.ContinueWith(_ => { })).ToArray());
        foreach (var ws in sockets)
            ws.Dispose();
        if (everyChange && got < ops * Subscribers)
            throw new InvalidOperationException($"subscribers received {got:N0} notifications of {ops * Subscribers:N0}");
        return (ops, seconds, p50, p99, got, deliverySeconds);
    }

    /// <summary>
    /// Snapshot backups of the bench database (1M orders plus the writes before): a full one while idle (MB/s of the
    /// pages read and of the file written), full ones back to back while 64 clients write (their writes/s against the
    /// rate of the same writes measured just before, without backups), an incremental one after those writes, and a
    /// restore of the full one.
    /// </summary>
    private List<BenchResult> Backups(ServerProcess server, HttpClient http, OrderDocuments docs)
    {
        string folder = Path.Combine(workDir, "backups");
        Directory.CreateDirectory(folder);
        string config = System.Text.Json.JsonSerializer.Serialize(new { Name = "bench", BackupType = "Snapshot", LocalSettings = new { FolderPath = folder }, FullBackupFrequency = "0 3 * * *", IncrementalBackupFrequency = "0 * * * *" });
        long taskId;
        using (var put = System.Text.Json.JsonDocument.Parse(Post(http, "/databases/bench/admin/periodic-backup", config)))
            taskId = put.RootElement.GetProperty("TaskId").GetInt64();
        var rows = new List<BenchResult>();

        var (full, fullSeconds) = RunBackup(http, taskId, isFull: true);
        long pagesBytes = full.GetProperty("PagesWritten").GetInt64() * 8192, fileBytes = full.GetProperty("SizeInBytes").GetInt64();
        Console.WriteLine($"#   ravenlite: full snapshot of {pagesBytes / 1048576.0:N0} MB of pages into a {fileBytes / 1048576.0:N0} MB file in {fullSeconds:N1} s ({pagesBytes / 1048576.0 / fullSeconds:N0} MB/s of pages)");
        rows.Add(new BenchResult("live", "backup-full-snapshot-mb", "ravenlite", "sync", pagesBytes >> 20, fullSeconds, (pagesBytes >> 20) / fullSeconds, null, fileBytes, null, null, null, null, null, server.PeakRssBytes()));
        string fullFolder = full.GetProperty("LocalBackup").GetProperty("BackupDirectory").GetString()!;
        string fullFile = full.GetProperty("LocalBackup").GetProperty("FileName").GetString()!;

        var (quietOps, quietSeconds, _, _) = Writes(http, docs, "before-backup");
        double quietWrites = quietOps / quietSeconds;
        int during = 0;
        using (var stop = new CancellationTokenSource())
        {
            var backups = Task.Run(() =>
            {
                Thread.Sleep(500);
                while (!stop.IsCancellationRequested)
                {
                    RunBackup(http, taskId, isFull: true);
                    during++;
                }
            });
            var (ops, seconds, p50, p99) = Writes(http, docs, "backup");
            stop.Cancel();
            backups.Wait();
            Console.WriteLine($"#   ravenlite: {during} full snapshots while 64 clients wrote {ops / seconds:N0}/s (p99 {p99:N2} ms): {ops / seconds / quietWrites:P0} of the rate without backups ({quietWrites:N0}/s)");
            rows.Add(new BenchResult("live", "writes-64-clients-during-backups", "ravenlite", "sync", ops, seconds, ops / seconds, null, null, null, null, null, p50, p99, null));
        }

        var (incremental, incrementalSeconds) = RunBackup(http, taskId, isFull: false);
        long incrementalPages = incremental.GetProperty("PagesWritten").GetInt64(), reachable = incremental.GetProperty("PagesReachable").GetInt64();
        Console.WriteLine($"#   ravenlite: incremental snapshot after those writes: {incrementalPages:N0} of {reachable:N0} pages ({incremental.GetProperty("SizeInBytes").GetInt64() / 1048576.0:N1} MB) in {incrementalSeconds:N2} s");
        rows.Add(new BenchResult("live", "backup-incremental-snapshot-mb", "ravenlite", "sync", incrementalPages * 8192 >> 20, incrementalSeconds, (incrementalPages * 8192 >> 20) / incrementalSeconds, null, incremental.GetProperty("SizeInBytes").GetInt64(), null, null, null, null, null, null));

        // Restore the first full snapshot alone (the folder of the back-to-back ones holds only itself).
        string body = System.Text.Json.JsonSerializer.Serialize(new { DatabaseName = "restored", BackupLocation = fullFolder, LastFileNameToRestore = fullFile });
        var sw = Stopwatch.StartNew();
        long op;
        using (var answer = System.Text.Json.JsonDocument.Parse(Post(http, "/admin/restore/database", body)))
            op = answer.RootElement.GetProperty("OperationId").GetInt64();
        WaitForOperation(http, $"/operations/state?id={op}");
        sw.Stop();
        long restoredDocs;
        using (var stats = System.Text.Json.JsonDocument.Parse(http.GetStringAsync("/databases/restored/stats").Result))
            restoredDocs = stats.RootElement.GetProperty("CountOfDocuments").GetInt64();
        Console.WriteLine($"#   ravenlite: restore of the full snapshot: {restoredDocs:N0} documents in {sw.Elapsed.TotalSeconds:N1} s ({pagesBytes / 1048576.0 / sw.Elapsed.TotalSeconds:N0} MB/s)");
        rows.Add(new BenchResult("live", "restore-full-snapshot-mb", "ravenlite", "sync", pagesBytes >> 20, sw.Elapsed.TotalSeconds, (pagesBytes >> 20) / sw.Elapsed.TotalSeconds, null, null, null, null, null, null, null, null));
        Directory.Delete(folder, recursive: true);
        return rows;
    }

    private static (System.Text.Json.JsonElement Result, double Seconds) RunBackup(HttpClient http, long taskId, bool isFull)
    {
        var sw = Stopwatch.StartNew();
        long op;
        using (var answer = System.Text.Json.JsonDocument.Parse(Post(http, $"/databases/bench/admin/backup/database?isFullBackup={(isFull ? "true" : "false")}&taskId={taskId}", null)))
            op = answer.RootElement.GetProperty("OperationId").GetInt64();
        var result = WaitForOperation(http, $"/databases/bench/operations/state?id={op}");
        return (result, sw.Elapsed.TotalSeconds);
    }

    private static System.Text.Json.JsonElement WaitForOperation(HttpClient http, string url)
    {
        while (true)
        {
            using var state = System.Text.Json.JsonDocument.Parse(http.GetStringAsync(url).Result);
            string status = state.RootElement.GetProperty("Status").GetString()!;
            if (status == "Completed")
                return state.RootElement.GetProperty("Result").Clone();
            if (status != "InProgress")
                throw new InvalidOperationException($"{url}: {state.RootElement}");
            Thread.Sleep(20);
        }
    }

    private static string Post(HttpClient http, string url, string? body)
    {
        using var r = http.PostAsync(url, body == null ? null : new StringContent(body)).Result;
        string text = r.Content.ReadAsStringAsync().Result;
        if (r.StatusCode != HttpStatusCode.OK)
            throw new InvalidOperationException($"{url} answered {(int)r.StatusCode}: {text}");
        return text;
    }

    private static int Count(ReadOnlySpan<byte> text, ReadOnlySpan<byte> what)
    {
        int n = 0;
        for (int i = text.IndexOf(what); i >= 0; i = text.IndexOf(what))
        {
            n++;
            text = text[(i + what.Length)..];
        }
        return n;
    }

    private (long, double, double, double) Writes(HttpClient http, OrderDocuments docs, string tag) =>
        WritesSuite.Drive(Clients, Duration, async (client, i) =>
        {
            using var r = await http.PutAsync($"/databases/bench/docs?id=live/{tag}/{client}/{i}", new ReadOnlyMemoryContent(docs.Document((client * 7919 + i) % docs.Count)));
            if (r.StatusCode != HttpStatusCode.Created)
                throw new InvalidOperationException($"PUT answered {(int)r.StatusCode}");
        });

    private IEnumerable<BenchResult> Postgres(OrderDocuments docs)
    {
        using var pg = PostgresPeer.Start(workDir);
        using var ds = NpgsqlDataSource.Create(pg.ConnectionString);
        using (var c = ds.CreateCommand("CREATE TABLE docs(id text PRIMARY KEY, body jsonb NOT NULL)"))
            c.ExecuteNonQuery();
        var copyIn = Stopwatch.StartNew();
        PostgresPeer.CopyOrders(ds, docs);
        copyIn.Stop();
        yield return new BenchResult("live", "import-1kb", "postgres", "sync", docs.Count, copyIn.Elapsed.TotalSeconds, docs.Count / copyIn.Elapsed.TotalSeconds, null, null, null, null, null, null, null, null);
        var copyOut = Stopwatch.StartNew();
        long bytesOut = 0;
        using (var conn = ds.OpenConnection())
        using (var reader = conn.BeginTextExport("COPY docs TO STDOUT"))
        {
            var buffer = new char[64 << 10];
            int n;
            while ((n = reader.Read(buffer, 0, buffer.Length)) > 0)
                bytesOut += n;
        }
        copyOut.Stop();
        Console.WriteLine($"#   {pg.Version}: COPY FROM {copyIn.Elapsed.TotalSeconds:N1} s, COPY TO {copyOut.Elapsed.TotalSeconds:N1} s ({bytesOut / 1048576.0:N0} MB of text)");
        yield return new BenchResult("live", "export-1kb", "postgres", "sync", docs.Count, copyOut.Elapsed.TotalSeconds, docs.Count / copyOut.Elapsed.TotalSeconds, null, null, null, null, null, null, null, null);
        yield return PostgresPolling(ds, docs);
        var dump = Stopwatch.StartNew();
        string dumpFile = pg.Dump();
        dump.Stop();
        long tableBytes;
        using (var c = ds.CreateCommand("SELECT pg_total_relation_size('docs')"))
            tableBytes = (long)c.ExecuteScalar()!;
        Console.WriteLine($"#   {pg.Version}: pg_dump -Fc -Z1 of the {tableBytes / 1048576.0:N0} MB table in {dump.Elapsed.TotalSeconds:N1} s ({new FileInfo(dumpFile).Length / 1048576.0:N0} MB file)");
        yield return new BenchResult("live", "backup-full-snapshot-mb", "postgres", "sync", tableBytes >> 20, dump.Elapsed.TotalSeconds, (tableBytes >> 20) / dump.Elapsed.TotalSeconds, null, new FileInfo(dumpFile).Length, null, null, null, null, null, null);
    }

    private static BenchResult PostgresPolling(NpgsqlDataSource ds, OrderDocuments docs)
    {
        using var conn = ds.OpenConnection();
        long read = 0;
        string last = "";
        var sw = Stopwatch.StartNew();
        while (true)
        {
            using var cmd = new NpgsqlCommand("SELECT id, body::text FROM docs WHERE id > $1 ORDER BY id LIMIT 4096", conn);
            cmd.Parameters.AddWithValue(last);
            using var reader = cmd.ExecuteReader();
            int n = 0;
            while (reader.Read())
            {
                last = reader.GetString(0);
                _ = reader.GetString(1);
                n++;
            }
            read += n;
            if (n < 4096)
                break;
        }
        sw.Stop();
        Console.WriteLine($"#   postgres: {read:N0} rows read in keyset pages of 4,096");
        return new BenchResult("live", "subscription-delivery", "postgres", "sync", read, sw.Elapsed.TotalSeconds, read / sw.Elapsed.TotalSeconds, null, null, null, null, null, null, null, null);
    }

    /// <summary>What a worker reads of an order (its other fields are skipped by the deserializer).</summary>
    private sealed class Order
    {
        public string Company { get; set; } = "";
        public double Freight { get; set; }
        public string Status { get; set; } = "";
        public List<OrderLine> Lines { get; set; } = [];
    }

    private sealed class OrderLine
    {
        public string Product { get; set; } = "";
        public double PricePerUnit { get; set; }
        public int Quantity { get; set; }
    }

    private static void Check(HttpResponseMessage r, HttpStatusCode expected)
    {
        if (r.StatusCode != expected)
            throw new InvalidOperationException($"{r.RequestMessage?.Method} {r.RequestMessage?.RequestUri}: {(int)r.StatusCode} {r.Content.ReadAsStringAsync().Result}");
    }
}
