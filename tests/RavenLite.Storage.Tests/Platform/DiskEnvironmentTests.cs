using RavenLite.Storage.Platform;
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

    [Fact]
    public void A_large_record_written_around_the_page_cache_replays_after_a_crash_with_the_records_around_it()
    {
        using var dir = new TempDirectory();
        string live = Path.Combine(dir.Path, "live"), copy = Path.Combine(dir.Path, "copy");
        var r = new Random(12);
        var values = Enumerable.Range(0, 3_002).Select(i => TestData.Value(r, i is 0 or 3_001 ? 300 : 3_000)).ToList();
        var options = new StorageOptions { Directory = live, BackgroundFlush = false };
        using (var env = StorageEnvironment.Open(options))
        {
            Commit(env, 0, 1);        // a small record: the large one starts at an offset that is not 4 KiB-aligned
            Commit(env, 1, 3_001);    // 3,000 random 3 KB values: a record of ≈ 9 MB that LZ4 cannot shrink
            Commit(env, 3_001, 3_002); // a small record right behind it, inside the large record's padded last block
            var stats = env.GetStats();
            Assert.Equal(0, stats.Flushes);
            Assert.True(stats.JournalBytesWritten > RavenLite.Storage.Journal.JournalWriter.UncachedRecordBytes, $"journal bytes {stats.JournalBytesWritten}");

            // Copied while open and never flushed: the data file holds nothing, as after a SIGKILL.
            TestData.CopyDirectory(live, copy);
        }

        var journal = File.ReadAllBytes(Directory.GetFiles(Path.Combine(copy, "journal"), "*.journal").Single());
        var records = JournalTestKit.Records(journal);
        Assert.Equal([1L, 2L, 3L], records.Select(x => x.TxId));
        Assert.NotEqual(0, records[1].Offset % 4096);
        Assert.True(records[1].Length >= RavenLite.Storage.Journal.JournalWriter.UncachedRecordBytes);
        Assert.Equal(records[1].Offset + records[1].Length, records[2].Offset);

        using var reopened = StorageEnvironment.Open(new StorageOptions { Directory = copy, BackgroundFlush = false });
        using var rtx = reopened.ReadTransaction();
        var t = rtx.ReadTree("large")!;
        Assert.Equal(3_002, t.Count);
        for (int i = 0; i < values.Count; i++)
        {
            Assert.True(t.TryGet(TestData.Key(i), out var v), $"key {i}");
            Assert.True(v.SequenceEqual(values[i]), $"value {i}");
        }

        void Commit(StorageEnvironment env, int from, int to)
        {
            using var tx = env.WriteTransaction();
            var tree = tx.CreateTree("large");
            for (int i = from; i < to; i++)
                tree.Put(TestData.Key(i), values[i]);
            tx.Commit();
        }
    }

    [Fact]
    public void An_uncached_write_keeps_the_bytes_before_it_and_zeroes_its_last_block()
    {
        using var dir = new TempDirectory();
        using var file = DiskFileSystem.Instance.OpenFile(Path.Combine(dir.Path, "f"), create: true);
        file.Allocate(64 * 4096);
        var r = new Random(3);
        var before = new byte[64 * 4096];
        r.NextBytes(before);
        file.Write(0, before);
        var data = new byte[(9 << 20) + 123]; // an unaligned head, three 4 MiB bounce-buffer chunks, a padded last block
        r.NextBytes(data);
        const int at = 5 * 4096 - 100;
        file.Allocate(IStorageFile.UncachedEnd(at, data.Length));
        file.WriteUncached(at, data);
        file.Sync();
        var back = new byte[file.Length];
        Assert.Equal(back.Length, file.Read(0, back));
        Assert.True(back.AsSpan(0, at).SequenceEqual(before.AsSpan(0, at)));
        Assert.True(back.AsSpan(at, data.Length).SequenceEqual(data));
        long end = IStorageFile.UncachedEnd(at, data.Length);
        Assert.True(end % 4096 == 0 && end > at + data.Length);
        Assert.False(back.AsSpan(at + data.Length, (int)(end - at - data.Length)).ContainsAnyExcept((byte)0));
    }
}
