using System.Text;
using RavenLite.TestKit;
using Xunit.Abstractions;

namespace RavenLite.Storage.Tests.Transactions;

/// <summary>docs/reliability.md R10: random puts, deletes, scans and rollbacks against SortedDictionary models, reopening every so often.</summary>
public class ModelBasedTests(ITestOutputHelper output)
{
    private sealed class OrdinalBytes : IComparer<byte[]>
    {
        public int Compare(byte[]? x, byte[]? y) => x.AsSpan().SequenceCompareTo(y);
    }

    public static TheoryData<bool> Storage => new() { false, true };

    [Theory]
    [MemberData(nameof(Storage))]
    public void Random_operations_match_the_model_across_transactions_and_reopens(bool onDisk)
    {
        foreach (int seed in TestSeed.For(1234))
        {
            output.WriteLine($"seed {seed} (set RAVENLITE_TEST_SEED={seed} to replay), onDisk={onDisk}");
            Run(seed, onDisk);
        }
    }

    private static void Run(int seed, bool onDisk)
    {
        var r = new Random(seed);
        string[] trees = ["alpha", "beta", "gamma"];
        var model = trees.ToDictionary(t => t, _ => new SortedDictionary<byte[], byte[]>(new OrdinalBytes()));
        using var h = onDisk
            ? StorageHarness.OnDisk(o => WithSmallJournal(o))
            : StorageHarness.InMemory(o => WithSmallJournal(o));
        int transactions = onDisk ? 200 : 800;
        for (int txNo = 0; txNo < transactions; txNo++)
        {
            bool rollback = r.Next(10) == 0;
            var staged = model.ToDictionary(kv => kv.Key, kv => new SortedDictionary<byte[], byte[]>(kv.Value, new OrdinalBytes()));
            using (var tx = h.Env.WriteTransaction())
            {
                int ops = r.Next(1, 200);
                for (int op = 0; op < ops; op++)
                {
                    string name = trees[r.Next(trees.Length)];
                    var t = tx.CreateTree(name);
                    var m = staged[name];
                    byte[] key = RandomKey(r);
                    int kind = r.Next(100);
                    if (kind < 55)
                    {
                        int size = r.Next(20) == 0 ? r.Next(3_000, 40_000) : r.Next(0, 300);
                        var value = TestData.Value(r, size);
                        t.Put(key, value);
                        m[key] = value;
                    }
                    else if (kind < 85)
                    {
                        byte[] victim = m.Count > 0 && r.Next(3) > 0 ? m.Keys.ElementAt(r.Next(m.Count)) : key;
                        Assert.Equal(m.Remove(victim), t.Delete(victim));
                    }
                    else if (kind < 95)
                    {
                        Assert.Equal(m.TryGetValue(key, out var expected), t.TryGet(key, out var actual));
                        if (expected != null)
                            Assert.True(actual.SequenceEqual(expected));
                    }
                    else
                    {
                        CompareScan(t, m, r);
                    }
                    Assert.Equal(m.Count, t.Count);
                    var walked = t.CountPages();
                    Assert.Equal((t.State.BranchPages, t.State.LeafPages, t.State.OverflowPages), walked);
                }
                if (!rollback)
                {
                    tx.Commit();
                    model = staged;
                }
            }
            if (r.Next(25) == 0)
                h.Env.Flush();
            if (r.Next(40) == 0)
            {
                var before = string.Join(";", h.Env.GetStats().Trees);
                h.Restart();
                Assert.Equal(before, string.Join(";", h.Env.GetStats().Trees));
                StorageHarness.AssertConsistent(h.Env);
            }
            if (txNo % 50 == 0)
                VerifyAll(h.Env, model);
        }
        VerifyAll(h.Env, model);
        h.Restart();
        VerifyAll(h.Env, model);
    }

    private static StorageOptions WithSmallJournal(StorageOptions o) => new()
    {
        Directory = o.Directory,
        FileSystem = o.FileSystem,
        Durability = o.Durability,
        InitialMapSize = o.InitialMapSize,
        JournalFileSize = 256 * 1024,
        FlushThresholdPages = 300,
        FlushIntervalMs = 50,
    };

    private static byte[] RandomKey(Random r)
    {
        int kind = r.Next(10);
        if (kind < 6)
            return Encoding.ASCII.GetBytes($"k{r.Next(2000):D5}");
        if (kind < 9)
            return TestData.Value(r, r.Next(1, 40));
        var big = TestData.Value(r, r.Next(500, StorageConstants.MaxKeySize + 1));
        big[0] = (byte)'z';
        return big;
    }

    private static void CompareScan(RavenLite.Storage.Trees.Tree t, SortedDictionary<byte[], byte[]> m, Random r)
    {
        var c = t.CreateCursor();
        bool forward = r.Next(2) == 0;
        byte[] from = RandomKey(r);
        var expected = forward
            ? m.Where(kv => kv.Key.AsSpan().SequenceCompareTo(from) >= 0).Take(50).ToList()
            : m.Where(kv => kv.Key.AsSpan().SequenceCompareTo(from) < 0).Reverse().Take(50).ToList();
        bool ok = forward ? c.Seek(from) : c.SeekBefore(from);
        foreach (var kv in expected)
        {
            Assert.True(ok);
            Assert.True(c.Key.SequenceEqual(kv.Key));
            Assert.True(c.Value.SequenceEqual(kv.Value));
            ok = forward ? c.MoveNext() : c.MovePrevious();
        }
        if (expected.Count < 50)
            Assert.False(ok);
    }

    private static void VerifyAll(StorageEnvironment env, Dictionary<string, SortedDictionary<byte[], byte[]>> model)
    {
        using var rtx = env.ReadTransaction();
        foreach (var (name, m) in model)
        {
            var t = rtx.ReadTree(name);
            if (t == null)
            {
                Assert.Empty(m);
                continue;
            }
            Assert.Equal(m.Count, t.Count);
            var c = t.CreateCursor();
            bool ok = c.SeekToFirst();
            foreach (var kv in m)
            {
                Assert.True(ok);
                Assert.True(c.Key.SequenceEqual(kv.Key));
                Assert.True(c.Value.SequenceEqual(kv.Value));
                ok = c.MoveNext();
            }
            Assert.False(ok);
        }
    }
}
