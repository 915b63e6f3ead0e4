using System.CommandLine;
using System.Globalization;
using System.Text.Json;
using RavenLite.Bench;

// dotnet run -c Release --project tools/RavenLite.Bench -- storage|limits|embedded|bulk-insert|writes|indexing|mapreduce|extensions|live|etl|replication|cluster|tls|slowloris|crash|soak [--quick] [--json results.json] [--dir DIR]
var quick = new Option<bool>("--quick") { Description = "Every workload at 1/10 scale (smoke check)." };
var json = new Option<FileInfo?>("--json") { Description = "Write the rows as a JSON array to this file." };
var dir = new Option<DirectoryInfo?>("--dir") { Description = "Working directory for the databases (default: a temp folder)." };
var noPeer = new Option<bool>("--no-peer") { Description = "bulk-insert/writes: run RavenLite only (for iterating on our side; the ratios need the peer)." };
var only = new Option<string[]>("--only") { Description = "storage: run only these workloads (e.g. fill-sync, or fill-rnd-separate-tx/sync for one durability); the reads run as one group. extensions: counters, timeseries, attachments. live: changes, backups.", AllowMultipleArgumentsPerToken = true };
var encryptedOption = new Option<bool>("--encrypted") { Description = "storage: also run every row on an encrypted environment, beside the plain one (ratios encrypted/plain), and the cipher's own speed." };
var clients = new Option<int[]>("--clients") { Description = "writes: run only these client counts (default 1 16 64).", AllowMultipleArgumentsPerToken = true };
var repeat = new Option<int?>("--repeat") { Description = "Runs per row; the median is reported (default 3, or 1 with --quick)." };
var cyclesOption = new Option<int>("--cycles") { Description = "crash: SIGKILL cycles (default 2000; --quick runs 20).", DefaultValueFactory = _ => 2000 };
var seedOption = new Option<int?>("--seed") { Description = "crash: random seed (kill moments, audit samples)." };
var baselineOption = new Option<DirectoryInfo?>("--baseline") { Description = "cluster: instead of the cluster rows, a single server of this build against one of the build in this folder (RavenLite.Server.dll), alternating rounds (--repeat, default 3)." };
var minutesOption = new Option<double>("--minutes") { Description = "soak: length of the run (default 30; --quick runs 2).", DefaultValueFactory = _ => 30 };

int RunSuite(string suite, System.CommandLine.ParseResult r)
{
    string work = r.GetValue(dir)?.FullName ?? Path.Combine(Path.GetTempPath(), "ravenlite-bench-" + Environment.ProcessId);
    Directory.CreateDirectory(work);
    bool isQuick = r.GetValue(quick);
    if (suite == "storage" && !LmdbEngine.IsAvailable(out string why))
    {
        Console.Error.WriteLine(why);
        return 3;
    }
    bool withPeer = !r.GetValue(noPeer);
    if ((suite == "etl" || (suite is "bulk-insert" or "writes" or "indexing" or "mapreduce" or "extensions" or "live" && withPeer)) && !PostgresPeer.IsAvailable(out _, out string pgWhy))
    {
        Console.Error.WriteLine(pgWhy);
        return 3;
    }
    Console.WriteLine($"# {suite} suite{(isQuick ? " (quick)" : "")}{(suite == "storage" ? $", median of {r.GetValue(repeat) ?? (isQuick ? 1 : 3)} runs per row" : "")}, {Environment.ProcessorCount} cores, {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC, .NET {Environment.Version}, work dir {work}");
    var rows = new List<BenchResult>();
    int repeats = r.GetValue(repeat) ?? (isQuick ? 1 : 3);
    IEnumerable<BenchResult> source = suite switch
    {
        "storage" => new StorageSuite(isQuick, work, repeats, r.GetValue(only), r.GetValue(encryptedOption)).Run(),
        "encryption" => new EncryptionSuite(isQuick, work).Run(),
        "bulk-insert" => new BulkInsertSuite(isQuick, work, withPeer).Run(),
        "writes" => new WritesSuite(isQuick, work, withPeer, r.GetValue(clients) is { Length: > 0 } c ? c : null).Run(),
        "indexing" => new IndexingSuite(isQuick, work, withPeer).Run(),
        "mapreduce" => new MapReduceSuite(isQuick, work, withPeer).Run(),
        "extensions" => new ExtensionsSuite(isQuick, work, withPeer, r.GetValue(only)).Run(),
        "live" => new LiveSuite(isQuick, work, withPeer, r.GetValue(only)).Run(),
        "etl" => new EtlSuite(isQuick, work).Run(),
        "tls" => new TlsSuite(isQuick, work, repeats).Run(),
        "replication" => new ReplicationSuite(isQuick, work, repeats).Run(),
        "cluster" => r.GetValue(baselineOption) is { } baseline
            ? new SingleNodeComparison(isQuick, work, baseline.FullName, repeats).Run()
            : new ClusterSuite(isQuick, work).Run(),
        "slowloris" => new SlowlorisSuite(isQuick, work).Run(),
        "soak" => new SoakSuite(isQuick, work, r.GetValue(minutesOption)).Run(),
        "embedded" => new EmbeddedSuite(isQuick, work).Run(),
        "crash" => new CrashSuite(isQuick, work, r.GetValue(cyclesOption), r.GetValue(seedOption) ?? Environment.TickCount).Run(),
        _ => new LimitsSuite(isQuick, work).Run(),
    };
    foreach (var row in source)
    {
        rows.Add(row);
        Console.WriteLine(ConsoleTable.Format(row, rows));
    }
    if (r.GetValue(json) is { } file)
        File.WriteAllText(file.FullName, JsonSerializer.Serialize(rows, new JsonSerializerOptions { WriteIndented = true }));
    Directory.Delete(work, true);
    return 0;
}

var storage = new Command("storage", "Classic storage workloads, RavenLite and LMDB in the same run.") { quick, json, dir, repeat, only, encryptedOption };
storage.SetAction(r => RunSuite("storage", r));
var limits = new Command("limits", "The machine's own ceilings: O_DIRECT sequential write, fdatasync'ed 4 KB appends, memory copy.") { quick, json, dir };
limits.SetAction(r => RunSuite("limits", r));
var bulkInsert = new Command("bulk-insert", "1M ≈1 KB documents through the bulk-insert endpoint, against PostgreSQL COPY, same run.") { quick, json, dir, noPeer };
bulkInsert.SetAction(r => RunSuite("bulk-insert", r));
var writes = new Command("writes", "Single-document PUTs from 1, 16 and 64 clients, against PostgreSQL INSERTs, same run.") { quick, json, dir, noPeer, clients };
writes.SetAction(r => RunSuite("writes", r));
var indexing = new Command("indexing", "Simple-map and full-text index builds (docs/s) and query latency from 1 and 16 clients, against PostgreSQL expression/GIN indexes, same run.") { quick, json, dir, noPeer };
indexing.SetAction(r => RunSuite("indexing", r));
var mapReduce = new Command("mapreduce", "Map-reduce build and change-to-visible latency against a PostgreSQL materialized view / UPDATE + aggregate; JavaScript and C# map builds; Roslyn compile time.") { quick, json, dir, noPeer };
mapReduce.SetAction(r => RunSuite("mapreduce", r));
var extensions = new Command("extensions", "Counter increments from 64 clients against PostgreSQL UPDATE n = n + 1; time-series entries through bulk insert and bytes per entry; attachment uploads (1 MB, 100 MB) against the machine's sequential write limit (--only counters, timeseries or attachments runs just those).") { quick, json, dir, noPeer, only };
extensions.SetAction(r => RunSuite("extensions", r));
var live = new Command("live", "A data subscription worker reading 1M orders against PostgreSQL keyset paging; export/import; 64-client writes with and without 100 changes-API subscribers; snapshot backups (--only changes or backups runs just those).") { quick, json, dir, noPeer, only };
live.SetAction(r => RunSuite("live", r));
var etl = new Command("etl", "SQL ETL of 1M orders (a row per order and per line) into PostgreSQL against a plain COPY of the same rows, same run; then commit-to-row lag under 64-client writes.") { quick, json, dir };
etl.SetAction(r => RunSuite("etl", r));
var replication = new Command("replication", "64-client PUTs into a database replicating to a second server process against the source alone (alternating runs), commit-to-visible lag on the destination, and a new destination catching up 1M orders against importing them from a .ravendbdump, same run.") { quick, json, dir, repeat };
replication.SetAction(r => RunSuite("replication", r));
var cluster = new Command("cluster", "Three server processes form a cluster; compare-exchange puts from 16 clients through Raft against the same puts on a single server, then the time from the leader's SIGKILL to the first successful put through a survivor; with --baseline, single-node compare-exchange and document puts of this build against another's.") { quick, json, dir, repeat, baselineOption };
cluster.SetAction(r => RunSuite("cluster", r));
var tls = new Command("tls", "64-client PUTs against a secured server (HTTPS + client certificates, kept alive) and the same server over plain HTTP, alternating runs, same run.") { quick, json, dir, repeat };
tls.SetAction(r => RunSuite("tls", r));
var slowloris = new Command("slowloris", "A normal client's PUT/GET latency alone and while 500 connections trickle their headers.") { quick, json, dir };
slowloris.SetAction(r => RunSuite("slowloris", r));
var crash = new Command("crash", "docs/reliability.md R1 at length: SIGKILL the server during single PUTs, bulk_docs, bulk inserts and an index build, restart, audit (lost, corrupted, index entries, restart time); 2,000 cycles by default.") { quick, json, dir, cyclesOption, seedOption };
crash.SetAction(r => RunSuite("crash", r));
var soak = new Command("soak", "64 clients PUT and 8 GET for 30 minutes: the server's RSS after warm-up may grow at most 5% and each minute's p99 stay within 2x of the first minute's.") { quick, json, dir, minutesOption };
soak.SetAction(r => RunSuite("soak", r));
var sinkCertificate = new Option<string?>("--certificate") { Description = "http-sink: serve HTTPS with this PFX (no password)." };
var sinkInline = new Option<bool>("--inline-scheduling") { Description = "http-sink: run requests on the thread that read them, as the server does." };
var httpSink = new Command("http-sink", "Internal: the HTTP floor's child process for the attachment, changes and TLS rows.") { Hidden = true, Options = { sinkCertificate, sinkInline } };
httpSink.SetAction(r => HttpSink.Serve(r.GetValue(sinkCertificate), r.GetValue(sinkInline)));
var embedded = new Command("embedded", "The embedded server's start in a new process, to its first answered query: on a fresh data directory and on one holding 100,000 documents, beside the process's own start.") { quick, json, dir };
embedded.SetAction(r => RunSuite("embedded", r));
var embeddedChild = new Command("embedded-child", "Internal: the embedded suite's child process.") { Hidden = true, TreatUnmatchedTokensAsErrors = false };
embeddedChild.SetAction((r, _) => EmbeddedSuite.ChildAsync([.. r.UnmatchedTokens]));
var encryption = new Command("encryption", "1M orders bulk-inserted and indexed into an encrypted database and a plain one on the same secured server.") { quick, json, dir };
encryption.SetAction(r => RunSuite("encryption", r));
return new RootCommand("RavenLite benchmarks (docs/benchmarks.md)") { storage, encryption, embedded, embeddedChild, limits, bulkInsert, writes, indexing, mapReduce, extensions, live, etl, replication, cluster, tls, slowloris, crash, soak, httpSink }.Parse(args).Invoke();

internal static class ConsoleTable
{
    /// <summary>`fill seq sync      ravenlite :   1,234 ms   810,372 ops/sec   (1.35x lmdb)` plus byte counts.</summary>
    public static string Format(BenchResult row, List<BenchResult> earlier)
    {
        var c = CultureInfo.InvariantCulture;
        string ratio = "";
        if (row.Engine == "ravenlite-encrypted" && earlier.LastOrDefault(x => x.Engine == "ravenlite" && x.Workload == row.Workload && x.Durability == row.Durability) is { } plain)
            ratio = string.Create(c, $"   => encrypted {row.OpsPerSec / plain.OpsPerSec:F2}x plain");
        if (row.Engine is "lmdb" or "postgres" or "process-start" or "lucene.net-floor" or "plain-http" or "http-sink" or "http-sha256" or "push-floor" or "source-alone" or "dump-import")
        {
            var ours = earlier.LastOrDefault(x => x.Engine == "ravenlite" && x.Workload == row.Workload && x.Durability == row.Durability);
            if (ours != null)
                ratio = string.Create(c, $"   => ravenlite {ours.OpsPerSec / row.OpsPerSec:F2}x {row.Engine}")
                    + (row.P99Ms is { } pp && ours.P99Ms is { } op ? string.Create(c, $", p99 {op:F2} vs {pp:F2} ms") : "");
        }
        if (row.Engine == "kestrel-http" && earlier.LastOrDefault(x => x.Engine == "kestrel-https" && x.Workload == row.Workload) is { } secured)
            ratio = string.Create(c, $"   => kestrel-https {secured.OpsPerSec / row.OpsPerSec:F2}x kestrel-http (the no-work server)");
        if (row.P50Ms is { } p50)
            ratio = string.Create(c, $"   p50 {p50:F2} ms p99 {row.P99Ms:F2} ms") + ratio;
        if (row.RssBytes is { } rss && row.Suite is "bulk-insert" or "indexing" or "mapreduce")
            ratio = string.Create(c, $"   peak RSS {rss >> 20} MB") + ratio;
        string bytes = "";
        if (row.Suite == "storage" && row.Transactions is { } txs && txs > 0)
        {
            bytes = string.Create(c, $"   written {row.ProcessWriteBytes / (double)txs:N0} B/tx");
            if (row.JournalBytes is { } jb)
                bytes += string.Create(c, $", journal {jb / (double)txs:N0} B/tx of {row.RawPageBytes / (double)txs:N0} raw ({(jb == 0 ? 0 : row.RawPageBytes!.Value / (double)jb):F1}x)");
            bytes += row.DataFileBeforeBytes is { } before
                ? string.Create(c, $", data file {before / 1048576.0:N1} MB after the load, {row.DataFileBytes / 1048576.0:N1} MB after the refill")
                : string.Create(c, $", data file {row.DataFileBytes / 1048576.0:N1} MB");
            if (row.UndoFileBytes is { } undo)
                bytes += string.Create(c, $", undo {undo / 1048576.0:N1} MB");
        }
        string unit = row.Workload switch
        {
            "seq-write-direct-mb" or "seq-write-buffered-mb" or "cipher-seal-open-mb" or "attachment-1mb" or "attachment-1mb-8-clients" or "attachment-100mb" => "MB/sec",
            "memcpy-gb" => "GB/sec",
            "timeseries-bytes-per-entry" => "bytes/entry",
            "timeseries-bulk-insert" => "entries/sec",
            _ => "ops/sec",
        };
        return string.Create(c, $"{row.Workload,-22} {row.Durability,-9} {row.Engine,-9} : {row.Seconds * 1000,9:N0} ms {row.OpsPerSec,13:N0} {unit}{bytes}{ratio}");
    }
}
