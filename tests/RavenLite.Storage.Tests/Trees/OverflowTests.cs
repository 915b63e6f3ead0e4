using RavenLite.TestKit;

namespace RavenLite.Storage.Tests.Trees;

public class OverflowTests
{
    [Theory]
    [InlineData(2_100)]
    [InlineData(1 << 20)]
    [InlineData(16 << 20)]
    public void Large_values_round_trip_through_commit_flush_and_restart(int size)
    {
        using var h = StorageHarness.InMemory();
        var value = TestData.Value(new Random(size), size);
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("blobs");
            t.Put("small"u8, "s"u8);
            t.Put("big"u8, value);
            tx.Commit();
        }
        using (var rtx = h.Env.ReadTransaction())
        {
            Assert.True(rtx.ReadTree("blobs")!.TryGet("big"u8, out var v));
            Assert.True(v.SequenceEqual(value));
        }
        h.Env.Flush();
        h.Restart();
        using (var rtx = h.Env.ReadTransaction())
        {
            var t = rtx.ReadTree("blobs")!;
            Assert.True(t.TryGet("big"u8, out var v));
            Assert.True(v.SequenceEqual(value));
            Assert.Equal(Math.Max(0, (32 + size + 8191) / 8192), size > StorageConstants.MaxNodeSize ? t.State.OverflowPages : 0);
        }
    }

    [Fact]
    public void Replacing_and_deleting_large_values_frees_their_pages()
    {
        using var h = StorageHarness.InMemory(o => new StorageOptions { Directory = o.Directory, FileSystem = o.FileSystem, BackgroundFlush = false, InitialMapSize = o.InitialMapSize });
        var r = new Random(5);
        for (int round = 0; round < 20; round++)
        {
            using (var tx = h.Env.WriteTransaction())
            {
                var t = tx.CreateTree("blobs");
                t.Put("a"u8, TestData.Value(r, 100_000));
                t.Put("b"u8, TestData.Value(r, 300_000));
                tx.Commit();
            }
            h.Env.Flush();
        }
        long pages = h.Env.GetStats().PagesInUse;
        Assert.True(pages < 4 * (400_000 / 8192 + 10), $"20 rounds of replacing 400 KB of values grew the file to {pages} pages");
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("blobs");
            Assert.True(t.Delete("a"u8));
            Assert.True(t.Delete("b"u8));
            Assert.Equal(0, t.State.OverflowPages);
            tx.Commit();
        }
    }
}
