using RavenLite.TestKit;
using RavenLite.TestKit.Faults;

namespace RavenLite.Storage.Tests.Transactions;

public class SnapshotIsolationTests
{
    /// <summary>Frequent flushes; with <paramref name="slowJournalSync"/>, a journal fsync that takes ~1 ms, so commits stay in flight while readers start.</summary>
    private static StorageHarness Fast(bool slowJournalSync = false) => StorageHarness.InMemory(o => new StorageOptions
    {
        Directory = o.Directory, InitialMapSize = o.InitialMapSize, FlushIntervalMs = 5, FlushThresholdPages = 50,
        FileSystem = !slowJournalSync ? o.FileSystem : new FaultInjectingFileSystem(o.FileSystem!)
        {
            BeforeSync = path =>
            {
                if (path.Contains("journal", StringComparison.Ordinal))
                    Thread.Sleep(1);
            },
        },
    });

    [Fact]
    public void Reader_keeps_its_snapshot_while_writer_commits_and_flusher_runs()
    {
        using var h = Fast();
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("t");
            for (int i = 0; i < 5000; i++)
                t.Put(TestData.Key(i), BitConverter.GetBytes(0L));
            tx.Commit();
        }
        var reader = h.Env.ReadTransaction();
        var tree = reader.ReadTree("t")!;
        Assert.True(tree.TryGet(TestData.Key(42), out var held));
        for (int round = 1; round <= 30; round++)
        {
            using (var tx = h.Env.WriteTransaction())
            {
                var t = tx.CreateTree("t");
                for (int i = 0; i < 5000; i += 3)
                    t.Put(TestData.Key(i), BitConverter.GetBytes((long)round));
                for (int i = 1; i < 5000; i += 97)
                    t.Delete(TestData.Key(i));
                t.Put(TestData.Key(100_000 + round), new byte[5000]);
                tx.Commit();
            }
            h.Env.Flush();
        }
        Assert.True(h.Env.GetStats().Flushes >= 30);
        // The span taken before 30 commits and flushes still reads the old value, and so does everything else.
        Assert.Equal(0L, BitConverter.ToInt64(held));
        Assert.Equal(5000, tree.Count);
        for (int i = 0; i < 5000; i++)
        {
            Assert.True(tree.TryGet(TestData.Key(i), out var v));
            Assert.Equal(0L, BitConverter.ToInt64(v));
        }
        reader.Dispose();
        using var fresh = h.Env.ReadTransaction();
        Assert.True(fresh.ReadTree("t")!.TryGet(TestData.Key(0), out var now));
        Assert.Equal(30L, BitConverter.ToInt64(now));
    }

    [Fact]
    public void Copies_freed_by_commits_leave_memory_without_a_flush_unless_a_reader_can_reach_them()
    {
        // No flush runs during the test: every page copy the updates free stays in the page table unless released at commit.
        using var h = StorageHarness.InMemory(o => new StorageOptions
        {
            Directory = o.Directory, FileSystem = o.FileSystem, InitialMapSize = o.InitialMapSize,
            FlushIntervalMs = int.MaxValue, FlushThresholdPages = int.MaxValue,
        });
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("t");
            for (int i = 0; i < 20_000; i++)
                t.Put(TestData.Key(i), BitConverter.GetBytes(0L));
            tx.Commit();
        }
        h.Env.Flush();
        var r = new Random(5);
        void Update(int round)
        {
            using var tx = h.Env.WriteTransaction();
            var t = tx.CreateTree("t");
            for (int k = 0; k < 20; k++)
                t.Put(TestData.Key(r.Next(20_000)), BitConverter.GetBytes((long)round));
            tx.Commit();
        }
        long TreePages()
        {
            var s = h.Env.GetStats();
            return s.RootTree.BranchPages + s.RootTree.LeafPages + s.Trees.Sum(x => x.BranchPages + x.LeafPages);
        }

        // The committing transaction's own snapshot is live during its commit, so the last commit's garbage waits for the next one.
        const int OneCommitsCopies = 100;
        for (int round = 1; round <= 300; round++)
            Update(round);
        // 300 commits copied thousands of pages; only copies still reachable wait for the flush.
        Assert.True(h.Env.GetStats().PagesWaitingForFlush <= TreePages() + OneCommitsCopies, $"{h.Env.GetStats().PagesWaitingForFlush} pages held for a tree of {TreePages()}");

        // A reader pins what its snapshot reaches: the copies later commits free stay, and it keeps reading them.
        var reader = h.Env.ReadTransaction();
        var pinned = reader.ReadTree("t")!;
        var expected = Enumerable.Range(0, 20_000).Select(i => { pinned.TryGet(TestData.Key(i), out var v); return BitConverter.ToInt64(v); }).ToArray();
        for (int round = 301; round <= 600; round++)
            Update(round);
        long held = h.Env.GetStats().PagesWaitingForFlush;
        Assert.True(held > TreePages() + 10 * OneCommitsCopies, $"{held} pages held while a reader predates 300 commits");
        for (int i = 0; i < 20_000; i++)
        {
            Assert.True(pinned.TryGet(TestData.Key(i), out var v));
            Assert.Equal(expected[i], BitConverter.ToInt64(v));
        }
        reader.Dispose();
        Update(601);
        Update(602);
        Assert.True(h.Env.GetStats().PagesWaitingForFlush <= TreePages() + OneCommitsCopies);

        // Nothing the data file or the journal needs went with them.
        var latest = new long[20_000];
        using (var tx = h.Env.ReadTransaction())
            for (int i = 0; i < 20_000; i++)
            {
                tx.ReadTree("t")!.TryGet(TestData.Key(i), out var v);
                latest[i] = BitConverter.ToInt64(v);
            }
        foreach (var env in new[] { h.Restart(), h.Env })
        {
            using var tx = env.ReadTransaction();
            for (int i = 0; i < 20_000; i++)
            {
                Assert.True(tx.ReadTree("t")!.TryGet(TestData.Key(i), out var v));
                Assert.Equal(latest[i], BitConverter.ToInt64(v));
            }
            env.Flush();
        }
    }

    [Fact]
    public void Uncommitted_changes_are_invisible_and_rolled_back()
    {
        using var h = Fast();
        using (var tx = h.Env.WriteTransaction())
        {
            tx.CreateTree("t").Put("a"u8, "1"u8);
            tx.Commit();
        }
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("t");
            t.Put("a"u8, "2"u8);
            t.Put("b"u8, "2"u8);
            tx.CreateTree("other").Put("x"u8, "y"u8);
            using var r = h.Env.ReadTransaction();
            Assert.True(r.ReadTree("t")!.TryGet("a"u8, out var v));
            Assert.Equal("1"u8.ToArray(), v.ToArray());
            Assert.Null(r.ReadTree("other"));
        }
        using var after = h.Env.ReadTransaction();
        Assert.Equal(1, after.ReadTree("t")!.Count);
        Assert.Null(after.ReadTree("other"));
    }

    /// <summary>docs/reliability.md R11: concurrent transfers between accounts; every snapshot read on every thread sums to the same total.</summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)] // the merger's pattern: the next writer runs while the previous commit is in flight (its snapshot is ahead of readers')
    public async Task Bank_invariant_holds_for_concurrent_readers_on_several_threads(bool pipelined)
    {
        using var h = Fast(slowJournalSync: pipelined);
        const int accounts = 2000;
        const long total = accounts * 1000L;
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("bank");
            for (int i = 0; i < accounts; i++)
                t.Put(TestData.Key(i), BitConverter.GetBytes(1000L));
            tx.Commit();
        }
        using var stop = new CancellationTokenSource();
        using var started = new CountdownEvent(4);
        long badReads = 0, reads = 0;
        // Dedicated threads: thread-pool tasks can be starved by other test classes running in parallel.
        var readers = Enumerable.Range(0, 4).Select(_ => new Thread(() =>
        {
            started.Signal();
            while (!stop.IsCancellationRequested)
            {
                using var r = h.Env.ReadTransaction();
                var c = r.ReadTree("bank")!.CreateCursor();
                long sum = 0;
                if (c.SeekToFirst())
                {
                    do
                        sum += BitConverter.ToInt64(c.Value);
                    while (c.MoveNext());
                }
                Interlocked.Increment(ref reads);
                if (sum != total)
                    Interlocked.Increment(ref badReads);
                if (pipelined)
                    Thread.Sleep(1); // hold the snapshot across commits (and leave CPU to the thread pool that runs the journal side)
            }
        })).ToArray();
        foreach (var t in readers)
            t.Start();
        Assert.True(started.Wait(TimeSpan.FromSeconds(30)), "reader threads did not start");
        var rnd = new Random(11);
        Task inFlight = Task.CompletedTask;
        for (int n = 0; n < 400 || (Interlocked.Read(ref reads) < 50 && n < 20_000); n++)
        {
            using var tx = h.Env.WriteTransaction();
            var t = tx.CreateTree("bank");
            for (int k = 0; k < 20; k++)
            {
                var a = TestData.Key(rnd.Next(accounts));
                var b = TestData.Key(rnd.Next(accounts));
                t.TryGet(a, out var av);
                long amount = rnd.Next(50);
                long aBal = BitConverter.ToInt64(av) - amount;
                t.Put(a, BitConverter.GetBytes(aBal));
                t.TryGet(b, out var bv);
                t.Put(b, BitConverter.GetBytes(BitConverter.ToInt64(bv) + amount));
            }
            if (!pipelined)
            {
                tx.Commit();
                continue;
            }
            await inFlight.WaitAsync(TimeSpan.FromSeconds(30));
            inFlight = tx.CommitAsync();
        }
        await inFlight.WaitAsync(TimeSpan.FromSeconds(30));
        stop.Cancel();
        foreach (var t in readers)
            t.Join();
        Assert.True(reads > 10, $"only {reads} reads ran (bad totals: {badReads})");
        Assert.True(badReads == 0, $"{badReads} of {reads} snapshot reads saw a wrong total");
    }

    [Fact]
    public void Steady_updates_reuse_pages_instead_of_growing_the_file()
    {
        using var h = Fast();
        var r = new Random(9);
        long[] pagesAfterRound = new long[60];
        for (int round = 0; round < 60; round++)
        {
            using (var tx = h.Env.WriteTransaction())
            {
                var t = tx.CreateTree("hot");
                for (int i = 0; i < 2000; i++)
                    t.Put(TestData.Key(i), TestData.Value(r, 100 + r.Next(200)));
                tx.Commit();
            }
            h.Env.Flush();
            pagesAfterRound[round] = h.Env.GetStats().PagesInUse;
        }
        // Past warm-up the file stops growing: the last 40 rounds stay within the size reached at round 20 plus slack.
        Assert.True(pagesAfterRound[59] <= pagesAfterRound[19] + 20,
            $"pages grew from {pagesAfterRound[19]} at round 20 to {pagesAfterRound[59]} at round 60");
    }
}
