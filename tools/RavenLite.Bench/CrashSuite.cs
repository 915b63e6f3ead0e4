using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Text;
using System.Text.Json;

namespace RavenLite.Bench;

/// <summary>
/// docs/reliability.md R1 at length: <c>cycles</c> times, start the server on the same data directory, time
/// until the database answers (its journal recovery runs on that first request), audit, then write — four clients
/// PUTting single documents, one posting <c>bulk_docs</c> batches of 50, one streaming bulk inserts of 500 — while a
/// static index builds over them, and SIGKILL the server at a random moment after its first acknowledgement.
/// Every write carries a value from one increasing sequence, over a bounded set of ids (so the run can be long):
/// the audit demands each acknowledged id hold its acknowledged value or a later one, with its exact padding
/// (else "corrupted"). It reads every id acknowledged in the last cycle plus 1,000 others, and all of them every
/// 50 cycles and at the end; every 10 cycles it also checks that the index holds exactly one entry per document
/// (no missed, no duplicated entry). After the last kill the storage checker runs on the database. The CI runs the
/// short variant (ServerCrashTests).
/// </summary>
internal sealed class CrashSuite(bool quick, string workDir, int cycles, int seed)
{
    private const string Db = "crash";
    private const int PutIds = 250, BatchIds = 5_000, BulkIds = 20_000;
    private static readonly string PutPad = new('p', 200), BatchPad = new('q', 250), BulkPad = new('b', 300);
    private readonly ConcurrentDictionary<string, long> _acked = new();
    private readonly ConcurrentDictionary<string, byte> _ackedThisCycle = new();
    private long _sequence;
    private long _lost, _corrupted, _audited, _indexChecks, _indexMismatches;

    public IEnumerable<BenchResult> Run()
    {
        int total = quick ? Math.Min(cycles, 20) : cycles;
        string dataDir = Path.Combine(workDir, "crash");
        var rnd = new Random(seed);
        var restarts = new List<double>();
        var recoveries = new List<double>();
        var sw = Stopwatch.StartNew();
        Console.WriteLine($"#   {total} cycles, seed {seed}; data dir {dataDir}");
        for (int cycle = 0; cycle <= total; cycle++)
        {
            var spawn = Stopwatch.StartNew();
            using var server = ServerProcess.Start(dataDir);
            using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(60) };
            if (cycle == 0)
            {
                Check(http.PutAsync($"/admin/databases?name={Db}", new StringContent("")).Result, HttpStatusCode.Created, "create the database");
                Check(http.PutAsync($"/databases/{Db}/admin/indexes", new StringContent("""{"Indexes":[{"Name":"Crash/All","Maps":["from d in docs.Bulk select new { d.V }","from d in docs.Batch select new { d.V }","from d in docs.Puts select new { d.V }"]}]}""")).Result, HttpStatusCode.Created, "create the index");
            }
            else
            {
                var open = Stopwatch.StartNew();
                Check(http.GetAsync($"/databases/{Db}/stats").Result, HttpStatusCode.OK, "open the database");
                recoveries.Add(open.Elapsed.TotalMilliseconds);
                restarts.Add(spawn.Elapsed.TotalMilliseconds);
                bool full = cycle % 50 == 0 || cycle == total;
                Audit(http, full, rnd);
                if (cycle % 10 == 0 || cycle == total)
                    CheckIndex(http);
            }
            if (cycle == total)
            {
                server.Kill();
                break;
            }
            _ackedThisCycle.Clear();
            using var stop = new CancellationTokenSource();
            var workers = new List<Task>();
            for (int w = 0; w < 4; w++)
            {
                int worker = w;
                workers.Add(Task.Run(() => PutLoop(http, worker, stop.Token)));
            }
            workers.Add(Task.Run(() => BatchLoop(http, cycle, bulkInsert: false, stop.Token)));
            workers.Add(Task.Run(() => BatchLoop(http, cycle, bulkInsert: true, stop.Token)));
            var flowing = Stopwatch.StartNew();
            while (_ackedThisCycle.IsEmpty && flowing.Elapsed < TimeSpan.FromSeconds(30))
                Thread.Sleep(5);
            Thread.Sleep(rnd.Next(100, 800));
            server.Kill();
            stop.Cancel();
            Task.WaitAll(workers);
            if ((cycle + 1) % 25 == 0)
                Console.WriteLine($"#   cycle {cycle + 1}: acknowledged writes {_sequence:N0} so far, audited {_audited:N0}, lost {_lost}, corrupted {_corrupted}, index mismatches {_indexMismatches}/{_indexChecks}, restart p50 {P(restarts, 0.5):F0} ms p99 {P(restarts, 0.99):F0} ms, {sw.Elapsed.TotalMinutes:F1} min");
        }
        // The second oracle (docs/reliability.md): the storage consistency checker on the database the last kill left.
        string checkReport;
        using (var env = Storage.StorageEnvironment.Open(Storage.StorageOptions.ForDirectory(Path.Combine(dataDir, "Databases", Db, "storage"))))
        {
            var report = Storage.Checking.StorageChecker.Check(env);
            checkReport = report.ToString();
            if (!report.IsValid)
                _checkFailures++;
        }
        Console.WriteLine($"#   storage check after the last kill: {checkReport}");
        Console.WriteLine($"#   summary: {total} SIGKILL cycles in {sw.Elapsed.TotalMinutes:F1} min; writes acknowledged {_acknowledged:N0} ({_acked.Count:N0} distinct ids); " +
            $"audited {_audited:N0} reads: lost {_lost}, corrupted {_corrupted}; index checks {_indexChecks}, mismatches {_indexMismatches}; " +
            $"restart (spawn to database answering) p50 {P(restarts, 0.5):F0} ms p99 {P(restarts, 0.99):F0} ms; of which opening the database (recovery) p50 {P(recoveries, 0.5):F0} ms p99 {P(recoveries, 0.99):F0} ms");
        yield return new BenchResult("crash", "sigkill-cycles", "ravenlite", "sync", total, sw.Elapsed.TotalSeconds, total / sw.Elapsed.TotalSeconds,
            null, null, null, null, _acknowledged, P(restarts, 0.5), P(restarts, 0.99), null);
        if (_lost > 0 || _corrupted > 0 || _indexMismatches > 0 || _checkFailures > 0)
            throw new InvalidOperationException($"crash run failed: lost {_lost}, corrupted {_corrupted}, index mismatches {_indexMismatches}, storage check failures {_checkFailures}");
    }

    private long _acknowledged, _checkFailures;

    private static double P(List<double> values, double q)
    {
        if (values.Count == 0)
            return 0;
        var sorted = values.Order().ToList();
        return sorted[Math.Min(sorted.Count - 1, (int)(q * sorted.Count))];
    }

    private static void Check(HttpResponseMessage r, HttpStatusCode expected, string what)
    {
        if (r.StatusCode != expected)
            throw new InvalidOperationException($"{what}: {(int)r.StatusCode} {r.Content.ReadAsStringAsync().Result}");
    }

    private void Ack(string id, long value)
    {
        _acked.AddOrUpdate(id, value, (_, old) => Math.Max(old, value));
        _ackedThisCycle[id] = 0;
        Interlocked.Increment(ref _acknowledged);
    }

    private static StringContent Doc(string collection, long value, string pad) =>
        new($$$"""{"V":{{{value}}},"Pad":"{{{pad}}}","@metadata":{"@collection":"{{{collection}}}"}}""");

    private async Task PutLoop(HttpClient http, int worker, CancellationToken stop)
    {
        for (int i = 0; !stop.IsCancellationRequested; i++)
        {
            string id = $"puts/{worker}-{i % PutIds}";
            long value = Interlocked.Increment(ref _sequence);
            try
            {
                var r = await http.PutAsync($"/databases/{Db}/docs?id={id}", Doc("Puts", value, PutPad), stop);
                if (r.StatusCode == HttpStatusCode.Created)
                    Ack(id, value);
            }
            catch (Exception e) when (e is HttpRequestException or OperationCanceledException or IOException)
            {
                return; // the server is gone
            }
        }
    }

    /// <summary>
    /// Writes batches of <paramref name="size"/> documents (ids <paramref name="prefix"/>0.. modulo <paramref name="ids"/>,
    /// from a rolling start) until stopped: <c>bulk_docs</c> when <paramref name="bulkInsert"/> is false, else one bulk
    /// insert stream per batch. Every document of an acknowledged batch is acknowledged.
    /// </summary>
    private async Task BatchLoop(HttpClient http, int cycle, bool bulkInsert, CancellationToken stop)
    {
        (string collection, string prefix, string pad, int size, int ids, long stride) = bulkInsert
            ? ("Bulk", "bulk/", BulkPad, 500, BulkIds, 104729L)
            : ("Batch", "batch/", BatchPad, 50, BatchIds, 7919L);
        for (int op = 0; !stop.IsCancellationRequested; op++)
        {
            int start = (int)((cycle * stride + op * (long)size) % ids);
            var batch = new List<(string Id, long Value)>();
            var sb = new StringBuilder(bulkInsert ? "[" : """{"Commands":[""");
            for (int k = 0; k < size; k++)
            {
                string id = prefix + ((start + k) % ids);
                long value = Interlocked.Increment(ref _sequence);
                batch.Add((id, value));
                sb.Append(k == 0 ? "" : ",").Append($$$$"""{"Id":"{{{{id}}}}","Type":"PUT","Document":{"V":{{{{value}}}},"Pad":"{{{{pad}}}}","@metadata":{"@collection":"{{{{collection}}}}"}}}""");
            }
            sb.Append(bulkInsert ? "]" : "]}");
            try
            {
                var r = await http.PostAsync(bulkInsert ? $"/databases/{Db}/bulk_insert?id={(cycle * 100_000L) + op + 1}" : $"/databases/{Db}/bulk_docs", new StringContent(sb.ToString()), stop);
                if (r.StatusCode == HttpStatusCode.Created)
                    foreach (var (id, value) in batch)
                        Ack(id, value);
            }
            catch (Exception e) when (e is HttpRequestException or OperationCanceledException or IOException)
            {
                return; // the server is gone
            }
        }
    }

    /// <summary>Reads back the ids acknowledged in the last cycle and 1,000 others (all of them when <paramref name="full"/>).</summary>
    private void Audit(HttpClient http, bool full, Random rnd)
    {
        var ids = full ? _acked.Keys.ToList() : _ackedThisCycle.Keys.Concat(_acked.Keys.OrderBy(_ => rnd.Next()).Take(1000)).Distinct().ToList();
        foreach (var chunk in ids.Chunk(500))
        {
            var r = http.PostAsync($"/databases/{Db}/docs", new StringContent(JsonSerializer.Serialize(new { Ids = chunk }))).Result;
            Check(r, HttpStatusCode.OK, "read back");
            using var json = JsonDocument.Parse(r.Content.ReadAsStringAsync().Result);
            var results = json.RootElement.GetProperty("Results");
            for (int i = 0; i < chunk.Length; i++)
            {
                _audited++;
                var d = results[i];
                string id = chunk[i];
                if (d.ValueKind == JsonValueKind.Null)
                {
                    _lost++;
                    Console.WriteLine($"#   LOST {id} (acknowledged value {_acked[id]})");
                    continue;
                }
                string pad = id.StartsWith("puts/", StringComparison.Ordinal) ? PutPad : id.StartsWith("batch/", StringComparison.Ordinal) ? BatchPad : BulkPad;
                long value = 0;
                bool intact = d.TryGetProperty("V", out var v) && v.TryGetInt64(out value) && d.TryGetProperty("Pad", out var p) && p.GetString() == pad;
                if (!intact)
                {
                    _corrupted++;
                    Console.WriteLine($"#   CORRUPTED {id}: {d}");
                }
                else if (value < _acked[id])
                {
                    _lost++;
                    Console.WriteLine($"#   LOST UPDATE {id}: holds {value}, acknowledged {_acked[id]}");
                }
            }
        }
    }

    /// <summary>The index, caught up, holds exactly one entry per document of its three collections.</summary>
    private void CheckIndex(HttpClient http)
    {
        _indexChecks++;
        var q = http.PostAsync($"/databases/{Db}/queries", new StringContent("""{"Query":"from index 'Crash/All'","PageSize":0,"WaitForNonStaleResults":true,"WaitForNonStaleResultsTimeout":"00:05:00"}""")).Result;
        Check(q, HttpStatusCode.OK, "query the index");
        using var result = JsonDocument.Parse(q.Content.ReadAsStringAsync().Result);
        long entries = result.RootElement.GetProperty("TotalResults").GetInt64();
        using var stats = JsonDocument.Parse(http.GetStringAsync($"/databases/{Db}/collections/stats").Result);
        long docs = 0;
        foreach (var c in stats.RootElement.GetProperty("Collections").EnumerateObject())
            if (c.Name is "Bulk" or "Batch" or "Puts")
                docs += c.Value.GetInt64();
        if (entries != docs)
        {
            _indexMismatches++;
            Console.WriteLine($"#   INDEX MISMATCH: {entries} entries for {docs} documents");
        }
    }
}
