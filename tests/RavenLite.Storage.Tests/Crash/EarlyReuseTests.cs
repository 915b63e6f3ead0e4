using RavenLite.Storage.Checking;
using RavenLite.Storage.Platform;
using RavenLite.TestKit.Faults;

namespace RavenLite.Storage.Tests.Crash;

/// <summary>
/// Freed page numbers are reused as soon as no reader needs them, before any flush (FreeSpaceManager invariant 2):
/// recovery must still find every diff base it needs, which the undo file's before-images guarantee.
/// </summary>
public class EarlyReuseTests
{
    private static StorageOptions Options(IStorageFileSystem fs) => new()
    {
        Directory = "/mem",
        FileSystem = fs,
        BackgroundFlush = false,
        InitialMapSize = 1L << 30,
    };

    private static byte[] Val(string s) => System.Text.Encoding.ASCII.GetBytes(s.PadRight(100, '.'));

    [Fact]
    public void A_page_the_synced_header_references_is_reused_and_a_crash_mid_flush_writes_its_before_image_back()
    {
        using var mem = new MemoryFileSystem();
        var fault = new FaultInjectingFileSystem(mem);
        var env = StorageEnvironment.Open(Options(fault));
        void Put(string tree, int from, int count, string value)
        {
            using var tx = env.WriteTransaction();
            var t = tx.CreateTree(tree);
            for (int i = from; i < from + count; i++)
                t.Put(TestData.Key(i), Val(value + i));
            tx.Commit();
        }

        Put("t", 0, 2000, "base");
        env.Flush();
        Put("t", 7, 1, "A");   // copies the path to key 7
        env.Flush();           // the header now references those copies, the data file holds them, memory does not
        Put("t", 7, 1, "F");   // copies them again (journaled as diffs against them) and frees them
        Put("v", 0, 1, "x");   // F's own snapshot ended: this commit releases F's garbage
        long before = env.FreeSpace.NextPage;
        Put("u", 0, 1000, "G"); // allocates many pages: it takes the ones just freed, which the synced header still reaches
        Assert.True(env.FreeSpace.NextPage - before < 1000 * 100 / 8192 + 10, "the freed pages were not reused");
        bool armed = true;
        fault.BeforeSync = path =>
        {
            // Power fails as the next header is synced: the data file already holds G's pages, the header is still A's.
            if (armed && path.EndsWith("headers", StringComparison.Ordinal))
            {
                armed = false;
                fault.CrashAtOperation = fault.OperationCount + 1;
            }
        };
        Assert.ThrowsAny<Exception>(() => env.Flush());
        Assert.True(fault.Crashed);
        try
        {
            env.Dispose();
        }
        catch (Exception e) when (e is IOException or StorageFailedException)
        {
        }

        using var rebooted = fault.SimulatePowerLoss(PowerLossMode.DropUnsynced, new Random(1));
        using var reopened = StorageEnvironment.Open(Options(rebooted));
        Assert.True(reopened.UndoPagesRestored > 0, "the flush overwrote pages of the synced state without before-images");
        Assert.True(reopened.RecoveredTransactions >= 2, $"recovery replayed {reopened.RecoveredTransactions} transactions");
        using (var r = reopened.ReadTransaction())
        {
            var t = r.ReadTree("t")!;
            var u = r.ReadTree("u")!;
            for (int i = 0; i < 2000; i++)
            {
                Assert.True(t.TryGet(TestData.Key(i), out var v), $"t/{i} missing");
                Assert.True(v.SequenceEqual(Val((i == 7 ? "F" : "base") + i)), $"t/{i} has the wrong value");
            }
            for (int i = 0; i < 1000; i++)
            {
                Assert.True(u.TryGet(TestData.Key(i), out var v), $"u/{i} missing");
                Assert.True(v.SequenceEqual(Val("G" + i)), $"u/{i} has the wrong value");
            }
        }
        var report = StorageChecker.Check(reopened);
        Assert.True(report.IsValid, report.ToString());
    }

    [Fact]
    public void Random_updates_between_flushes_reuse_their_own_copies_and_recover_intact()
    {
        using var mem = new MemoryFileSystem();
        var fault = new FaultInjectingFileSystem(mem);
        var env = StorageEnvironment.Open(new StorageOptions
        {
            Directory = "/mem", FileSystem = fault, BackgroundFlush = false, InitialMapSize = 1L << 30,
            FlushThresholdPages = int.MaxValue, FlushIntervalMs = int.MaxValue,
        });
        using (var tx = env.WriteTransaction())
        {
            var t = tx.CreateTree("t");
            for (int i = 0; i < 5000; i++)
                t.Put(TestData.Key(i), Val("0/" + i));
            tx.Commit();
        }
        env.Flush();
        var expected = Enumerable.Range(0, 5000).Select(i => "0/" + i).ToArray();
        var r = new Random(3);
        for (int round = 1; round <= 300; round++)
        {
            using var tx = env.WriteTransaction();
            var t = tx.CreateTree("t");
            for (int k = 0; k < 20; k++)
            {
                int i = r.Next(5000);
                expected[i] = round + "/" + i;
                t.Put(TestData.Key(i), Val(expected[i]));
            }
            tx.Commit();
        }
        // 300 commits copied thousands of pages and no flush ran: the copies' numbers were reused, so the
        // logical data file stayed within a few commits' worth of pages of the loaded tree.
        var check = StorageChecker.Check(env);
        Assert.True(check.IsValid, check.ToString());
        long nextPage = env.FreeSpace.NextPage;
        long treePages = env.GetStats().Trees.Sum(x => x.BranchPages + x.LeafPages) + env.GetStats().RootTree.BranchPages + env.GetStats().RootTree.LeafPages;
        Assert.True(nextPage < treePages + 300, $"{nextPage} pages in use or free for a tree of {treePages}");

        // Power fails with nothing flushed since the load: every update is replayed from the journal.
        using var rebooted = fault.SimulatePowerLoss(PowerLossMode.DropUnsynced, new Random(1));
        env.Dispose();
        using var reopened = StorageEnvironment.Open(Options(rebooted));
        Assert.Equal(300, reopened.RecoveredTransactions);
        using (var rt = reopened.ReadTransaction())
        {
            var t = rt.ReadTree("t")!;
            for (int i = 0; i < 5000; i++)
            {
                Assert.True(t.TryGet(TestData.Key(i), out var v), $"t/{i} missing");
                Assert.True(v.SequenceEqual(Val(expected[i])), $"t/{i} has the wrong value");
            }
        }
        var report = StorageChecker.Check(reopened);
        Assert.True(report.IsValid, report.ToString());
    }

    [Fact]
    public void Stats_count_used_free_and_pending_pages_and_a_clean_close_deletes_the_undo_file()
    {
        using var mem = new MemoryFileSystem();
        var env = StorageEnvironment.Open(Options(mem));
        void Put(int from, int count, string value)
        {
            using var tx = env.WriteTransaction();
            var t = tx.CreateTree("t");
            for (int i = from; i < from + count; i++)
                t.Put(TestData.Key(i), Val(value + i));
            tx.Commit();
        }
        Put(0, 3000, "a");
        env.Flush();
        using (var reader = env.ReadTransaction())
        {
            Put(0, 3000, "b"); // rewrites every leaf: the old ones wait for the reader
            var held = env.GetStats();
            Assert.True(held.ReusePendingPages > 30, $"{held.ReusePendingPages} pages pending reuse while a reader holds the old tree");
            Assert.Equal(held.PagesInUse, held.UsedPages + held.FreePages + held.ReusePendingPages);
        }
        Put(0, 1, "c"); // the reader is gone: the next write transaction takes the pending pages back
        var after = env.GetStats();
        Assert.True(after.ReusePendingPages <= 5, $"{after.ReusePendingPages} pages still pending: only what the last commit freed should be"); // its own freed path
        Assert.True(after.FreePages > 30, $"{after.FreePages} free pages");
        env.Flush(); // overwrites pages of the synced state: before-images first
        Assert.True(env.GetStats().UndoFileBytes > 0);
        Assert.True(mem.FileExists("/mem/undo"));
        env.Dispose();
        Assert.False(mem.FileExists("/mem/undo"), "a clean close leaves no undo file");
        using var reopened = StorageEnvironment.Open(Options(mem));
        Assert.Equal(0, reopened.UndoPagesRestored);
        Assert.True(Checking.StorageChecker.Check(reopened).IsValid);
    }
}
