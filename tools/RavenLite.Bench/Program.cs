using System.CommandLine;
using System.Globalization;
using System.Text.Json;
using RavenLite.Bench;

// dotnet run -c Release --project tools/RavenLite.Bench -- storage [--quick] [--json results.json] [--dir DIR]
// Issue 3 adds the LMDB peer in the same run, the limits suite and the ratios.
var quick = new Option<bool>("--quick") { Description = "Every workload at 1/10 scale (smoke check)." };
var json = new Option<FileInfo?>("--json") { Description = "Write the rows as a JSON array to this file." };
var dir = new Option<DirectoryInfo?>("--dir") { Description = "Working directory for the databases (default: a temp folder)." };
var storage = new Command("storage", "Classic storage workloads (fill-seq, fill-rnd, separate-tx, fill-sync, reads).") { quick, json, dir };
storage.SetAction(r =>
{
    string work = r.GetValue(dir)?.FullName ?? Path.Combine(Path.GetTempPath(), "ravenlite-bench-" + Environment.ProcessId);
    Directory.CreateDirectory(work);
    var rows = new List<BenchResult>();
    var c = CultureInfo.InvariantCulture;
    Console.WriteLine($"# storage suite{(r.GetValue(quick) ? " (quick)" : "")}, {Environment.ProcessorCount} cores, {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC, work dir {work}");
    foreach (var row in new StorageSuite(r.GetValue(quick), work).Run())
    {
        rows.Add(row);
        string extra = row.JournalBytes is { } jb && row.Transactions is { } txs && txs > 0
            ? string.Create(c, $"   journal {jb / (double)txs:N0} B/tx, raw pages {row.RawPageBytes / (double)txs:N0} B/tx ({(jb == 0 ? 0 : row.RawPageBytes!.Value / (double)jb):F1}x), data file {row.DataFileBytes / 1048576.0:N1} MB")
            : "";
        Console.WriteLine(string.Create(c, $"{row.Workload,-22} {row.Durability,-9} {row.Engine} : {row.Seconds * 1000,10:N0} ms {row.OpsPerSec,14:N0} ops/sec{extra}"));
    }
    if (r.GetValue(json) is { } file)
        File.WriteAllText(file.FullName, JsonSerializer.Serialize(rows, new JsonSerializerOptions { WriteIndented = true }));
    Directory.Delete(work, true);
    return 0;
});
return new RootCommand("RavenLite benchmarks (BENCHMARKS.md)") { storage }.Parse(args).Invoke();
