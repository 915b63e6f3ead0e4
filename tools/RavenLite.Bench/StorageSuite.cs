using System.Diagnostics;
using System.Runtime.InteropServices;
using RavenLite.Storage;

namespace RavenLite.Bench;

/// <summary>
/// The classic storage workloads (docs/benchmarks.md), each run for RavenLite and for
/// LMDB in the same process on the same keys and values, a fresh directory per run. Each row is
/// run <c>repeat</c> times with the engine order alternating, and the median run per engine is reported
/// (this 2-core VM swings ±30% between identical runs).
/// </summary>
internal sealed class StorageSuite(bool quick, string workDir, int repeat, IReadOnlyCollection<string>? only = null, bool encrypted = false)
{
    /// <summary>Whether a workload (and, for writes, durability) row is selected by <c>--only</c> (every row when it is absent).</summary>
    private bool Selected(string workload, DurabilityMode? mode = null) =>
        only is not { Count: > 0 } || only.Any(o => o == workload || (mode != null && o == $"{workload}/{mode.ToString()!.ToLowerInvariant()}"));

    private readonly int _entries = quick ? 100_000 : 1_000_000;
    private readonly int _txCount = quick ? 1_000 : 10_000;

    private static readonly string[] ReadWorkloads = ["read-seq", "read-rnd", "read-parallel-1", "read-parallel-2", "read-parallel-4"];

    // With --encrypted, an encrypted RavenLite environment runs every row too, after the plain one (its floor).
    private readonly (string Name, EngineFactory Create)[] Engines = encrypted
        ? [("ravenlite", (d, m) => new RavenLiteEngine(d, m)), ("ravenlite-encrypted", (d, m) => new RavenLiteEngine(d, m, encrypted: true)), ("lmdb", (d, m) => new LmdbEngine(d, m))]
        : [("ravenlite", (d, m) => new RavenLiteEngine(d, m)), ("lmdb", (d, m) => new LmdbEngine(d, m))];

    public IEnumerable<BenchResult> Run()
    {
        if (encrypted)
            yield return CipherFloor();
        var data = new BenchData(_entries);
        var seq = Enumerable.Range(0, _entries).ToArray();
        var rnd = data.RandomOrder;
        var rndLong = Enumerable.Range(0, _txCount * 100).Select(i => rnd[i % rnd.Length]).ToArray();

        // Untimed warm-up, one full sync fill per engine: on a VM the first touch of fresh memory and
        // page cache is slow (measured: a 107 MB buffered write took 354 ms cold, 21 ms warm), and it
        // would otherwise land on whichever engine happens to run the first row.
        foreach (var _ in Fill("warm-up", DurabilityMode.Sync, data, seq, _entries, _entries))
        {
        }

        foreach (var mode in new[] { DurabilityMode.Sync, DurabilityMode.Buffered, DurabilityMode.None })
            foreach (var row in Fill("fill-seq", mode, data, seq, _entries, _entries))
                yield return row;
        foreach (var row in Fill("fill-rnd", DurabilityMode.Sync, data, rnd, _entries, _entries))
            yield return row;
        foreach (var row in Fill("fill-seq-separate-tx", DurabilityMode.Sync, data, seq, _txCount * 100, 100))
            yield return row;
        foreach (var mode in new[] { DurabilityMode.Sync, DurabilityMode.Buffered, DurabilityMode.None })
            foreach (var row in Fill("fill-rnd-separate-tx", mode, data, rndLong, _txCount * 100, 100))
                yield return row;
        foreach (var row in Fill("fill-sync", DurabilityMode.Sync, data, rnd, _txCount, 1))
            yield return row;
        foreach (var row in DeleteHalfRefill(data, rnd))
            yield return row;

        if (!ReadWorkloads.Any(w => Selected(w)))
            yield break;
        foreach (var (name, create) in Engines)
        {
            string dir = NewDir(name + "-read");
            using (var engine = create(dir, DurabilityMode.Sync))
            {
                engine.Fill(data, seq, _entries, _entries);
                (engine as RavenLiteEngine)?.Flush();
                yield return Measure("read-seq", engine.Name, _entries, repeat, () =>
                {
                    if (engine.ReadSequential() != _entries)
                        throw new InvalidOperationException("read-seq count");
                });
                yield return Measure("read-rnd", engine.Name, _entries, repeat, () => engine.ReadRandom(data, rnd, 0, _entries));
                foreach (int threads in new[] { 1, 2, 4 })
                {
                    yield return Measure($"read-parallel-{threads}", engine.Name, (long)_entries * threads, repeat, () =>
                    {
                        var ts = Enumerable.Range(0, threads).Select(t => new Thread(() => engine.ReadRandom(data, rnd, t * 7919, _entries))).ToList();
                        ts.ForEach(t => t.Start());
                        ts.ForEach(t => t.Join());
                    });
                }
            }
            Directory.Delete(dir, true);
        }
    }

    private IEnumerable<BenchResult> Fill(string workload, DurabilityMode mode, BenchData data, int[] order, int count, int perTx)
    {
        if (workload != "warm-up" && !Selected(workload, mode))
            return [];
        var runs = new List<BenchResult>();
        for (int r = 0; r < repeat; r++)
            runs.AddRange(FillOnce(workload, mode, data, order, count, perTx, reverse: r % 2 == 1));
        return Medians(runs);
    }

    /// <summary>The cipher alone, one core: 8 KiB pages sealed then opened (MB/s of pages), the floor under the encrypted rows.</summary>
    private static BenchResult CipherFloor()
    {
        using var key = Storage.Encryption.EncryptionKey.FromBytes(System.Security.Cryptography.RandomNumberGenerator.GetBytes(32));
        var page = new byte[StorageConstants.PageSize];
        var sealedPage = new byte[StorageConstants.PageSize];
        var seal = new byte[Storage.Encryption.EncryptionKey.SealSize];
        var bound = new byte[8];
        new Random(1).NextBytes(page);
        const int Pages = 100_000;
        for (int i = 0; i < 2_000; i++)
            key.Seal(page, sealedPage, seal, bound);
        var sw = Stopwatch.StartNew();
        for (int i = 0; i < Pages; i++)
        {
            key.Seal(page, sealedPage, seal, bound);
            if (!key.Open(sealedPage, seal, page, bound))
                throw new InvalidOperationException("the cipher floor's page did not open");
        }
        sw.Stop();
        double mb = 2.0 * Pages * StorageConstants.PageSize / 1e6;
        return new BenchResult("storage", "cipher-seal-open-mb", "xchacha20poly1305", "-", Pages, sw.Elapsed.TotalSeconds, mb / sw.Elapsed.TotalSeconds,
            null, null, null, null, null, null, null, Environment.WorkingSet);
    }

    private IEnumerable<BenchResult> Medians(List<BenchResult> runs) =>
        Engines.Select(e => runs.Where(x => x.Engine == e.Name).OrderBy(x => x.OpsPerSec).ToList())
            .Where(l => l.Count > 0)
            .Select(l => l[l.Count / 2] with { Repeats = l.Count });

    private IEnumerable<BenchResult> FillOnce(string workload, DurabilityMode mode, BenchData data, int[] order, int count, int perTx, bool reverse)
    {
        foreach (var (name, create) in reverse ? Engines.Reverse() : Engines)
        {
            string dir = NewDir(name + "-" + workload);
            Settle();
            GC.Collect();
            long written = ProcessIo.WriteBytes();
            var engine = create(dir, mode);
            var sw = Stopwatch.StartNew();
            engine.Fill(data, order, count, perTx);
            sw.Stop();
            long? journal = engine.JournalBytes, raw = engine.RawPageBytes;
            long? undo = (engine as RavenLiteEngine)?.UndoFileBytes;
            engine.Dispose();
            long dataFile = new FileInfo(Path.Combine(dir, name == "lmdb" ? "data.mdb" : "data")).Length;
            written = ProcessIo.WriteBytes() - written;
            Directory.Delete(dir, true);
            yield return new BenchResult("storage", workload, name, mode.ToString().ToLowerInvariant(), count, sw.Elapsed.TotalSeconds, count / sw.Elapsed.TotalSeconds,
                journal, raw, written, dataFile, (count + perTx - 1) / perTx, null, null, Environment.WorkingSet) { UndoFileBytes = undo };
        }
    }

    /// <summary>
    /// delete-half-refill (sync): an untimed load of every key in random order (1,000 per transaction, then a flush),
    /// then, timed, the even keys deleted and put back in random order, 100 per transaction. The space the deletes free
    /// must take the refill: the data file after it should be no larger than after the load.
    /// </summary>
    private IEnumerable<BenchResult> DeleteHalfRefill(BenchData data, int[] rnd)
    {
        const string Workload = "delete-half-refill";
        if (!Selected(Workload, DurabilityMode.Sync))
            yield break;
        var half = rnd.Where(k => k % 2 == 0).ToArray();
        var runs = new List<BenchResult>();
        for (int r = 0; r < repeat; r++)
        {
            foreach (var (name, create) in r % 2 == 1 ? Engines.Reverse() : Engines)
            {
                string dir = NewDir(name + "-" + Workload);
                var engine = create(dir, DurabilityMode.Sync);
                engine.Fill(data, rnd, _entries, 1000);
                (engine as RavenLiteEngine)?.Flush();
                long before = engine.DataFileBytes;
                Settle();
                GC.Collect();
                long written = ProcessIo.WriteBytes();
                long? journal0 = engine.JournalBytes, raw0 = engine.RawPageBytes;
                var sw = Stopwatch.StartNew();
                engine.Delete(data, half, 0, half.Length, 100);
                engine.Fill(data, half, half.Length, 100);
                sw.Stop();
                long? journal = engine.JournalBytes - journal0, raw = engine.RawPageBytes - raw0;
                long? undo = (engine as RavenLiteEngine)?.UndoFileBytes;
                engine.Dispose();
                long after = new FileInfo(Path.Combine(dir, name == "lmdb" ? "data.mdb" : "data")).Length;
                written = ProcessIo.WriteBytes() - written;
                Directory.Delete(dir, true);
                long ops = 2L * half.Length;
                runs.Add(new BenchResult("storage", Workload, name, "sync", ops, sw.Elapsed.TotalSeconds, ops / sw.Elapsed.TotalSeconds,
                    journal, raw, written, after, ops / 100, null, null, Environment.WorkingSet) { UndoFileBytes = undo, DataFileBeforeBytes = before });
            }
        }
        foreach (var row in Medians(runs))
            yield return row;
    }

    private static BenchResult Measure(string workload, string engine, long ops, int repeat, Action body)
    {
        var times = new List<double>();
        for (int r = 0; r < repeat; r++)
        {
            var sw = Stopwatch.StartNew();
            body();
            times.Add(sw.Elapsed.TotalSeconds);
        }
        times.Sort();
        double s = times[times.Count / 2];
        return new BenchResult("storage", workload, engine, "-", ops, s, ops / s, null, null, null, null, null, null, null, Environment.WorkingSet) { Repeats = repeat };
    }

    private string NewDir(string name)
    {
        string dir = Path.Combine(workDir, name + "-" + Guid.NewGuid().ToString("N")[..8]);
        Directory.CreateDirectory(dir);
        return dir;
    }

    /// <summary>
    /// Lets the device settle before a timed run: sync(2) the page cache, then a short pause. The previous
    /// run's cleanup (deleting hundreds of MB on a file system mounted with `discard`, the other engine's
    /// writeback) otherwise lands on whichever engine runs next.
    /// </summary>
    private static void Settle()
    {
        sync();
        Thread.Sleep(500);
    }

#pragma warning disable SYSLIB1054 // DllImport keeps this project free of unsafe code (CONVENTIONS §3)
    [DllImport("libc")]
    private static extern void sync();
#pragma warning restore SYSLIB1054
}
