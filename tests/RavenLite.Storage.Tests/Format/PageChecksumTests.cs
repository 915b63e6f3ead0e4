using RavenLite.Storage.Checking;
using RavenLite.Storage.Paging;
using RavenLite.Storage.Platform;
using RavenLite.Storage.Trees;
using RavenLite.TestKit;

namespace RavenLite.Storage.Tests.Format;

/// <summary>
/// Page checksums: damage to a data-file page of any kind (branch, leaf, first or later page of an overflow
/// run, a torn write mixing two pages) is detected — never read as data — with an error naming the file, the page and
/// the tree; the checker reports it; a format-2 environment (no checksums) gets them at open.
/// </summary>
public sealed unsafe class PageChecksumTests
{
    private sealed record Pages(long Branch, long Leaf, long OtherLeaf, long Overflow, int OverflowCount);

    /// <summary>Tree "t": 3,000 keys (a branch over leaves); tree "o": one 20,000-byte value (an overflow run). Closed after.</summary>
    private static Pages Build(string dir)
    {
        using var env = StorageEnvironment.Open(StorageOptions.ForDirectory(dir));
        var r = new Random(11);
        using (var tx = env.WriteTransaction())
        {
            var t = tx.CreateTree("t");
            for (int i = 0; i < 3000; i++)
                t.Put(TestData.Key(i), TestData.Value(r, 100));
            tx.CreateTree("o").Put("big"u8, TestData.Value(r, 20_000));
            tx.Commit();
        }
        using var rtx = env.ReadTransaction();
        byte* root = rtx.GetPage(rtx.ReadTree("t")!.Header.RootPage);
        Assert.False(TreePage.IsLeaf(root));
        long branch = rtx.ReadTree("t")!.Header.RootPage;
        long leaf = TreePage.ChildPage(root, 0), other = TreePage.ChildPage(root, 1);
        byte* oLeaf = rtx.GetPage(rtx.ReadTree("o")!.Header.RootPage);
        var node = TreePage.Node(oLeaf, 0);
        Assert.Equal(NodeFlags.Overflow, node->Flags);
        return new Pages(branch, leaf, other, *(long*)TreePage.Payload(node), TreePage.OverflowPages(node->DataSize));
    }

    private static void FlipBit(string dir, long offset)
    {
        using var f = File.Open(Path.Combine(dir, "data"), FileMode.Open, FileAccess.ReadWrite);
        f.Position = offset;
        int b = f.ReadByte();
        f.Position = offset;
        f.WriteByte((byte)(b ^ 0x10));
    }

    public static TheoryData<string, int> TreePageDamage() => new()
    {
        { "branch", 12 },   // a header field (Lower)
        { "branch", 8100 }, // the node area
        { "leaf", 3 },      // the page number
        { "leaf", 40 },     // the node offsets
        { "leaf", 8191 },   // the last byte
    };

    [Theory]
    [MemberData(nameof(TreePageDamage))]
    public void A_flipped_bit_in_a_tree_page_stops_the_open_naming_file_page_and_tree(string kind, int at)
    {
        using var dir = new TempDirectory("ravenlite-checksum");
        var pages = Build(dir.Path);
        long page = kind == "branch" ? pages.Branch : pages.Leaf;
        FlipBit(dir.Path, page * StorageConstants.PageSize + at);
        var e = Assert.Throws<StorageCorruptionException>(() => StorageEnvironment.Open(StorageOptions.ForDirectory(dir.Path)));
        Assert.Contains($"Page {page} of data file '{Path.Combine(dir.Path, "data")}'", e.Message, StringComparison.Ordinal);
        Assert.Contains("tree 't'", e.Message, StringComparison.Ordinal);
        Assert.Contains("restore the database from a backup", e.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(0, 100)]   // the run's first page, inside the value
    [InlineData(0, 20)]    // its OverflowSize field
    [InlineData(2, 500)]   // the run's last page
    public void A_flipped_bit_in_an_overflow_run_fails_the_read_and_the_environment(int pageOfRun, int at)
    {
        using var dir = new TempDirectory("ravenlite-checksum");
        var pages = Build(dir.Path);
        Assert.Equal(3, pages.OverflowCount);
        FlipBit(dir.Path, (pages.Overflow + pageOfRun) * StorageConstants.PageSize + at);
        using var env = StorageEnvironment.Open(StorageOptions.ForDirectory(dir.Path)); // tree pages are intact
        using (var rtx = env.ReadTransaction())
        {
            Assert.True(rtx.ReadTree("t")!.TryGet(TestData.Key(5), out _)); // the rest reads
            var e = Assert.Throws<StorageCorruptionException>(() => rtx.ReadTree("o")!.TryGet("big"u8, out _));
            Assert.Contains($"Page {pages.Overflow} of data file", e.Message, StringComparison.Ordinal);
            Assert.Contains("tree 'o'", e.Message, StringComparison.Ordinal);
        }
        Assert.IsType<StorageCorruptionException>(env.Failure);
        Assert.Throws<StorageFailedException>(() =>
        {
            using var tx = env.WriteTransaction();
            tx.CreateTree("t").Put("new"u8, "v"u8);
            tx.Commit();
        });
    }

    [Fact]
    public void The_checker_reports_a_damaged_page_without_failing_the_environment()
    {
        using var dir = new TempDirectory("ravenlite-checksum");
        var pages = Build(dir.Path);
        FlipBit(dir.Path, (pages.Overflow + 1) * StorageConstants.PageSize + 7);
        using var env = StorageEnvironment.Open(StorageOptions.ForDirectory(dir.Path));
        var report = StorageChecker.Check(env);
        Assert.False(report.IsValid);
        Assert.Contains(report.Findings, f => f.Contains($"Tree 'o', overflow run at page {pages.Overflow} (3 pages): checksum mismatch", StringComparison.Ordinal));
        Assert.Null(env.Failure);
    }

    [Fact]
    public void A_torn_write_mixing_two_pages_is_detected()
    {
        using var dir = new TempDirectory("ravenlite-checksum");
        var pages = Build(dir.Path);
        // The leaf's second half replaced by another leaf's: every header field and the first half are intact.
        using (var f = File.Open(Path.Combine(dir.Path, "data"), FileMode.Open, FileAccess.ReadWrite))
        {
            var half = new byte[StorageConstants.PageSize / 2];
            f.Position = pages.OtherLeaf * StorageConstants.PageSize + half.Length;
            f.ReadExactly(half);
            f.Position = pages.Leaf * StorageConstants.PageSize + half.Length;
            f.Write(half);
        }
        var e = Assert.Throws<StorageCorruptionException>(() => StorageEnvironment.Open(StorageOptions.ForDirectory(dir.Path)));
        Assert.Contains($"Page {pages.Leaf} of data file", e.Message, StringComparison.Ordinal);
        Assert.Contains("checksum mismatch", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Pages_written_after_open_and_replayed_by_recovery_carry_checksums()
    {
        using var dir = new TempDirectory("ravenlite-checksum");
        Build(dir.Path);
        // Writes after a restart (copy-on-write pages, journal diffs), then a recovery replaying them.
        var env = StorageEnvironment.Open(new StorageOptions { Directory = dir.Path, BackgroundFlush = false });
        var r = new Random(12);
        for (int batch = 0; batch < 5; batch++)
        {
            using var tx = env.WriteTransaction();
            var t = tx.CreateTree("t");
            for (int i = 0; i < 200; i++)
                t.Put(TestData.Key(r.Next(6000)), TestData.Value(r, 150));
            tx.CreateTree("o").Put(TestData.Key(batch), TestData.Value(r, 30_000));
            tx.Commit();
        }
        // Not flushed: copy the directory as a crash would leave it (journal durable, data file behind).
        string crashed = dir.Path + "-crashed";
        TestData.CopyDirectory(dir.Path, crashed);
        env.Dispose();
        try
        {
            using var recovered = StorageEnvironment.Open(StorageOptions.ForDirectory(crashed));
            Assert.True(recovered.RecoveredTransactions >= 5);
            Assert.True(StorageChecker.Check(recovered).IsValid);
            using var rtx = recovered.ReadTransaction();
            Assert.True(rtx.ReadTree("o")!.TryGet(TestData.Key(4), out var v) && v.Length == 30_000);
        }
        finally
        {
            Directory.Delete(crashed, recursive: true);
        }
    }

    [Fact]
    public void A_format_2_environment_gets_its_checksums_at_open()
    {
        using var dir = new TempDirectory("ravenlite-checksum");
        var pages = Build(dir.Path);
        // Make it what a format-2 build wrote: every checksum zero, header version 2.
        List<(long Page, int Count)> reachable;
        using (var env = StorageEnvironment.Open(StorageOptions.ForDirectory(dir.Path)))
        using (var rtx = env.ReadTransaction())
            reachable = PageWalker.ReachablePages(rtx).ToList();
        using (var f = File.Open(Path.Combine(dir.Path, "data"), FileMode.Open, FileAccess.ReadWrite))
        {
            foreach (var (page, _) in reachable)
            {
                f.Position = page * StorageConstants.PageSize + 24;
                f.Write(new byte[8]);
            }
        }
        var fs = new DiskFileSystem();
        using (var headers = HeaderFile.Open(fs, Path.Combine(dir.Path, "headers"), out var current))
            headers.Write(current!.Value with { FormatVersion = 2, Sequence = current.Value.Sequence + 1 });

        using (var env = StorageEnvironment.Open(StorageOptions.ForDirectory(dir.Path)))
        {
            Assert.True(StorageChecker.Check(env).IsValid);
            using var rtx = env.ReadTransaction();
            Assert.Equal(3000, rtx.ReadTree("t")!.Count);
            Assert.True(rtx.ReadTree("o")!.TryGet("big"u8, out var big) && big.Length == 20_000);
        }
        using (var headers = HeaderFile.Open(fs, Path.Combine(dir.Path, "headers"), out var upgraded))
            Assert.Equal(3, upgraded!.Value.FormatVersion);
        // The checksums are real: damage is detected again.
        FlipBit(dir.Path, pages.Leaf * StorageConstants.PageSize + 5000);
        Assert.Throws<StorageCorruptionException>(() => StorageEnvironment.Open(StorageOptions.ForDirectory(dir.Path)));
    }
}
