using RavenLite.TestKit;

namespace RavenLite.Storage.Tests.Trees;

public class TreeShapeTests
{
    private const int Million = 1_000_000;

    [Fact]
    public void Sequential_fill_of_1M_keeps_leaves_dense()
    {
        using var h = StorageHarness.InMemory(durability: DurabilityMode.None);
        var r = new Random(1);
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("seq");
            for (long i = 0; i < Million; i++)
                t.Put(TestData.Key(i), TestData.Value(r, 100));
            tx.Commit();
        }
        using var rtx = h.Env.ReadTransaction();
        var s = rtx.ReadTree("seq")!.State;
        Assert.Equal(Million, s.EntryCount);
        // 16-byte key + 100-byte value + 8-byte node header + 2-byte slot = 126 bytes; 8160 usable bytes hold 64.
        long perLeaf = s.EntryCount / s.LeafPages;
        Assert.True(perLeaf >= 62, $"sequential fill left {perLeaf} entries per leaf (expected ~64)");
        Assert.InRange(s.Depth, 3, 4);
    }

    [Fact]
    public void Hilo_ids_in_increasing_order_fill_leaves_instead_of_halving_them()
    {
        // "orders/1234-A" style ids: each new id lands right after the previous one, in the middle of the
        // tree (after "orders/123-A" and before "orders/124-A"), not at its end.
        using var h = StorageHarness.InMemory(durability: DurabilityMode.None);
        var value = new byte[1000];
        new Random(3).NextBytes(value);
        const int count = 50_000;
        for (int start = 0; start < count; start += 3000)
        {
            using var tx = h.Env.WriteTransaction();
            var t = tx.CreateTree("docs");
            for (int i = start; i < Math.Min(count, start + 3000); i++)
                t.Put(TestData.Bytes($"orders/{i}-a"), value);
            tx.Commit();
        }
        using var rtx = h.Env.ReadTransaction();
        var tree = rtx.ReadTree("docs")!;
        var s = tree.State;
        Assert.Equal(count, s.EntryCount);
        // 7 entries of ≈1,020 bytes fit in a leaf. Splitting every full leaf in half leaves ≈4.5 per leaf
        // (measured before the run-aware split); splitting after the run's newest entry ≈5.6.
        double perLeaf = s.EntryCount / (double)s.LeafPages;
        Assert.True(perLeaf >= 5.3, $"{perLeaf:F2} entries per leaf");
        var c = tree.CreateCursor();
        Assert.True(c.SeekToFirst());
        int n = 1;
        var prev = c.Key.ToArray();
        while (c.MoveNext())
        {
            Assert.True(c.Key.SequenceCompareTo(prev) > 0);
            prev = c.Key.ToArray();
            n++;
        }
        Assert.Equal(count, n);
        for (int i = 0; i < count; i += 101)
            Assert.True(tree.TryGet(TestData.Bytes($"orders/{i}-a"), out var v) && v.SequenceEqual(value));
    }

    [Fact]
    public void Random_fill_of_1M_then_read_back_every_key()
    {
        using var h = StorageHarness.InMemory(durability: DurabilityMode.None);
        var order = Enumerable.Range(0, Million).ToArray();
        new Random(2).Shuffle(order);
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("rnd");
            foreach (int i in order)
                t.Put(TestData.Key(i), BitConverter.GetBytes(i * 7L));
            tx.Commit();
        }
        using var rtx = h.Env.ReadTransaction();
        var tree = rtx.ReadTree("rnd")!;
        Assert.Equal(Million, tree.Count);
        for (int i = 0; i < Million; i += 997)
        {
            Assert.True(tree.TryGet(TestData.Key(i), out var v));
            Assert.Equal(i * 7L, BitConverter.ToInt64(v));
        }
        var c = tree.CreateCursor();
        Assert.True(c.SeekToFirst());
        long n = 1;
        var prev = c.Key.ToArray();
        while (c.MoveNext())
        {
            Assert.True(c.Key.SequenceCompareTo(prev) > 0);
            prev = c.Key.ToArray();
            n++;
        }
        Assert.Equal(Million, n);
    }

    [Fact]
    public void Deletes_merge_pages_and_emptying_a_tree_frees_everything()
    {
        using var h = StorageHarness.InMemory();
        var r = new Random(3);
        const int n = 50_000;
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("d");
            for (int i = 0; i < n; i++)
                t.Put(TestData.Key(i), TestData.Value(r, 100));
            tx.Commit();
        }
        long leavesBefore;
        using (var rtx = h.Env.ReadTransaction())
            leavesBefore = rtx.ReadTree("d")!.State.LeafPages;
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("d");
            for (int i = 0; i < n; i++)
                if (i % 10 != 0)
                    Assert.True(t.Delete(TestData.Key(i)));
            tx.Commit();
        }
        StorageHarness.AssertConsistent(h.Env);
        using (var rtx = h.Env.ReadTransaction())
        {
            var s = rtx.ReadTree("d")!.State;
            Assert.Equal(n / 10, s.EntryCount);
            Assert.True(s.LeafPages < leavesBefore / 3, $"after deleting 90% the tree still has {s.LeafPages} of {leavesBefore} leaves: no merging");
        }
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("d");
            for (int i = 0; i < n; i += 10)
                Assert.True(t.Delete(TestData.Key(i)));
            Assert.False(t.Delete(TestData.Key(5)));
            Assert.Equal(0, t.Count);
            Assert.Equal(0, t.Depth);
            tx.Commit();
        }
        using (var rtx = h.Env.ReadTransaction())
        {
            var s = rtx.ReadTree("d")!.State;
            Assert.Equal(0, s.LeafPages + s.BranchPages + s.OverflowPages);
        }
    }

    [Fact]
    public void Reverse_and_interleaved_inserts_split_correctly()
    {
        using var h = StorageHarness.InMemory();
        using var tx = h.Env.WriteTransaction();
        var t = tx.CreateTree("rev");
        for (int i = 20_000; i > 0; i--)
            t.Put(TestData.Key(i * 2), TestData.Bytes(new string('x', i % 300)));
        for (int i = 1; i <= 20_000; i++)
            t.Put(TestData.Key(i * 2 + 1), TestData.Bytes(new string('y', i % 500)));
        Assert.Equal(40_000, t.Count);
        tx.Commit();
    }

    [Fact]
    public void Large_keys_at_the_limit_split_and_merge()
    {
        using var h = StorageHarness.InMemory();
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("big-keys");
            for (int i = 0; i < 500; i++)
            {
                var key = new byte[StorageConstants.MaxKeySize];
                TestData.Key(i).CopyTo(key, 0);
                t.Put(key, new byte[900]);
            }
            tx.Commit();
        }
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("big-keys");
            for (int i = 0; i < 500; i += 2)
            {
                var key = new byte[StorageConstants.MaxKeySize];
                TestData.Key(i).CopyTo(key, 0);
                Assert.True(t.Delete(key));
            }
            tx.Commit();
        }
    }

    [Fact]
    public void Key_and_value_limits_give_clear_errors()
    {
        using var h = StorageHarness.InMemory();
        using var tx = h.Env.WriteTransaction();
        var t = tx.CreateTree("limits");
        var e1 = Assert.Throws<StorageLimitException>(() => t.Put(ReadOnlySpan<byte>.Empty, "v"u8));
        Assert.Contains("at least one byte", e1.Message, StringComparison.Ordinal);
        var e2 = Assert.Throws<StorageLimitException>(() => t.Put(new byte[StorageConstants.MaxKeySize + 1], "v"u8));
        Assert.Contains("1025 bytes exceeds the maximum key size of 1024", e2.Message, StringComparison.Ordinal);
        var huge = new byte[StorageConstants.MaxValueSize + 1];
        var e3 = Assert.Throws<StorageLimitException>(() => t.Put("k"u8, huge));
        Assert.Contains("exceeds the maximum value size", e3.Message, StringComparison.Ordinal);
        Assert.Throws<StorageLimitException>(() => tx.CreateTree(""));
        t.Put(new byte[StorageConstants.MaxKeySize], "ok"u8);
        tx.Commit();
    }
}
