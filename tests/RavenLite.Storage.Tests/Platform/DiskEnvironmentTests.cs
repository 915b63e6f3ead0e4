using RavenLite.TestKit;

namespace RavenLite.Storage.Tests.Platform;

public class DiskEnvironmentTests
{
    [Theory]
    [InlineData(DurabilityMode.Sync)]
    [InlineData(DurabilityMode.Buffered)]
    [InlineData(DurabilityMode.None)]
    public void Real_files_survive_restart_in_every_durability_mode(DurabilityMode mode)
    {
        using var h = StorageHarness.OnDisk(durability: mode);
        var r = new Random(4);
        for (int batch = 0; batch < 20; batch++)
        {
            using var tx = h.Env.WriteTransaction();
            var t = tx.CreateTree("files");
            for (int i = 0; i < 500; i++)
                t.Put(TestData.Key(batch * 500 + i), TestData.Value(r, 200));
            tx.Commit();
        }
        var stats = h.Env.GetStats();
        Assert.Equal(20, stats.Commits);
        if (mode == DurabilityMode.None)
            Assert.Equal(0, stats.JournalBytesWritten);
        else
            Assert.True(stats.JournalBytesWritten > 0 && stats.CompressionRatio > 1.0);
        Assert.Equal(mode == DurabilityMode.Sync ? 20 : 0, stats.JournalSyncs);
        h.Restart();
        using var rtx = h.Env.ReadTransaction();
        Assert.Equal(10_000, rtx.ReadTree("files")!.Count);
    }

    [Fact]
    public void Data_file_outgrowing_its_mapping_is_remapped_while_readers_hold_old_spans()
    {
        using var h = StorageHarness.OnDisk(o => new StorageOptions
        {
            Directory = o.Directory, InitialMapSize = 1 << 20, DataFileGrowthStep = 256 * 1024, BackgroundFlush = false,
        });
        using (var tx = h.Env.WriteTransaction())
        {
            tx.CreateTree("grow").Put("first"u8, new byte[3000]);
            tx.Commit();
        }
        h.Env.Flush();
        var reader = h.Env.ReadTransaction();
        Assert.True(reader.ReadTree("grow")!.TryGet("first"u8, out var held));
        var r = new Random(8);
        for (int batch = 0; batch < 10; batch++)
        {
            using (var tx = h.Env.WriteTransaction())
            {
                var t = tx.CreateTree("grow");
                for (int i = 0; i < 100; i++)
                    t.Put(TestData.Key(batch * 100 + i), TestData.Value(r, 3000));
                tx.Commit();
            }
            h.Env.Flush();
        }
        Assert.True(h.Env.GetStats().DataFileBytes > 3 << 20);
        Assert.Equal(3000, held.Length);
        Assert.True(held.IndexOfAnyExcept((byte)0) < 0);
        reader.Dispose();
        using var rtx = h.Env.ReadTransaction();
        Assert.Equal(1001, rtx.ReadTree("grow")!.Count);
    }

    [Fact]
    public void Invalid_options_are_refused_with_the_setting_named()
    {
        var e = Assert.Throws<ArgumentException>(() => StorageEnvironment.Open(new StorageOptions { Directory = "/tmp/x", JournalFileSize = 1000 }));
        Assert.Contains("JournalFileSize", e.Message, StringComparison.Ordinal);
    }
}
