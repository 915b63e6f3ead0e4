using System.Diagnostics;
using System.Globalization;
using RavenLite.Storage;

namespace RavenLite.Bench;

/// <summary>
/// The classic storage workloads (BENCHMARKS.md "Storage suite") for RavenLite. Keys are
/// 16-digit zero-padded decimals, values 100 random bytes from a fixed seed, a fresh directory per row.
/// </summary>
internal sealed class StorageSuite(bool quick, string workDir)
{
    private readonly int _entries = quick ? 100_000 : 1_000_000;
    private readonly int _txCount = quick ? 1_000 : 10_000;
    private readonly int _syncTx = quick ? 1_000 : 10_000;

    private static byte[] Key(long i) => System.Text.Encoding.ASCII.GetBytes(i.ToString("0000000000000000", CultureInfo.InvariantCulture));

    public IEnumerable<BenchResult> Run()
    {
        var values = new byte[_entries][];
        var rnd = new Random(42);
        for (int i = 0; i < _entries; i++)
        {
            values[i] = new byte[100];
            rnd.NextBytes(values[i]);
        }
        var randomOrder = Enumerable.Range(0, _entries).ToArray();
        new Random(7).Shuffle(randomOrder);

        foreach (var mode in new[] { DurabilityMode.Sync, DurabilityMode.Buffered, DurabilityMode.None })
            yield return Fill("fill-seq", mode, _entries, _entries, i => i, values);
        yield return Fill("fill-rnd", DurabilityMode.Sync, _entries, _entries, i => randomOrder[i], values);
        yield return Fill("fill-seq-separate-tx", DurabilityMode.Sync, _txCount * 100, 100, i => i, values);
        foreach (var mode in new[] { DurabilityMode.Sync, DurabilityMode.Buffered, DurabilityMode.None })
            yield return Fill("fill-rnd-separate-tx", mode, _txCount * 100, 100, i => randomOrder[i % _entries], values);
        yield return Fill("fill-sync", DurabilityMode.Sync, _syncTx, 1, i => randomOrder[i % _entries], values);

        // Read workloads share one database filled sequentially.
        string dir = NewDir("read");
        using var env = StorageEnvironment.Open(new StorageOptions { Directory = dir, Durability = DurabilityMode.None });
        using (var tx = env.WriteTransaction())
        {
            var t = tx.CreateTree("bench");
            for (int i = 0; i < _entries; i++)
                t.Put(Key(i), values[i]);
            tx.Commit();
        }
        env.Flush();
        var keys = Enumerable.Range(0, _entries).Select(i => Key(randomOrder[i])).ToArray();
        yield return Measure("read-seq", "none", _entries, null, () =>
        {
            using var tx = env.ReadTransaction();
            var c = tx.ReadTree("bench")!.CreateCursor();
            long n = 0, sum = 0;
            if (c.SeekToFirst())
            {
                do
                {
                    sum += c.Value[0];
                    n++;
                }
                while (c.MoveNext());
            }
            if (n != _entries)
                throw new InvalidOperationException($"read-seq saw {n} entries");
            GC.KeepAlive(sum);
        });
        yield return Measure("read-rnd", "none", _entries, null, () => ReadRandom(env, keys, 0, keys.Length));
        foreach (int threads in new[] { 1, 2, 4 })
        {
            yield return Measure($"read-parallel-{threads}", "none", (long)_entries * threads, null, () =>
            {
                var ts = Enumerable.Range(0, threads).Select(t => new Thread(() => ReadRandom(env, keys, t * 7919 % keys.Length, keys.Length))).ToList();
                ts.ForEach(t => t.Start());
                ts.ForEach(t => t.Join());
            });
        }
    }

    private static void ReadRandom(StorageEnvironment env, byte[][] keys, int start, int count)
    {
        using var tx = env.ReadTransaction();
        var tree = tx.ReadTree("bench")!;
        for (int i = 0; i < count; i++)
        {
            if (!tree.TryGet(keys[(start + i) % keys.Length], out _))
                throw new InvalidOperationException("missing key");
        }
    }

    private BenchResult Fill(string name, DurabilityMode mode, int ops, int perTx, Func<int, int> keyOf, byte[][] values)
    {
        string dir = NewDir(name);
        var env = StorageEnvironment.Open(new StorageOptions { Directory = dir, Durability = mode });
        long txs = 0;
        var sw = Stopwatch.StartNew();
        for (int done = 0; done < ops; done += perTx)
        {
            using var tx = env.WriteTransaction();
            var t = tx.CreateTree("bench");
            for (int i = done; i < Math.Min(ops, done + perTx); i++)
            {
                int k = keyOf(i);
                t.Put(Key(k), values[k % values.Length]);
            }
            tx.Commit();
            txs++;
        }
        sw.Stop();
        var stats = env.GetStats();
        env.Dispose();
        long fileBytes = new FileInfo(Path.Combine(dir, "data")).Length;
        Directory.Delete(dir, true);
        return new BenchResult("storage", name, "ravenlite", mode.ToString().ToLowerInvariant(), ops, sw.Elapsed.TotalSeconds, ops / sw.Elapsed.TotalSeconds,
            stats.JournalBytesWritten, stats.UncompressedBytes, fileBytes, txs, null, null, Environment.WorkingSet);
    }

    private static BenchResult Measure(string name, string mode, long ops, long? journal, Action body)
    {
        var sw = Stopwatch.StartNew();
        body();
        sw.Stop();
        return new BenchResult("storage", name, "ravenlite", mode, ops, sw.Elapsed.TotalSeconds, ops / sw.Elapsed.TotalSeconds, journal, null, null, null, null, null, Environment.WorkingSet);
    }

    private string NewDir(string name)
    {
        string dir = Path.Combine(workDir, name + "-" + Guid.NewGuid().ToString("N")[..8]);
        Directory.CreateDirectory(dir);
        return dir;
    }
}
