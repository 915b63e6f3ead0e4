using RavenLite.Storage.Paging;
using RavenLite.TestKit;

namespace RavenLite.Storage.Tests.Format;

/// <summary>
/// The headers file takes both slots' space when it is opened, so that writing a header never grows it: a disk that
/// filled up after the environment was created could otherwise refuse the first write of the second slot, fail the
/// flush and with it the environment (seen in the server's disk-full test once flushes came 5 s apart).
/// </summary>
public sealed class HeaderFileTests
{
    [Fact]
    public void A_new_environment_s_header_file_holds_both_slots_before_its_first_flush()
    {
        using var dir = new TempDirectory();
        using var env = StorageEnvironment.Open(new StorageOptions { Directory = dir.Path, BackgroundFlush = false });
        Assert.Equal(HeaderFile.SlotSize * 2, new FileInfo(Path.Combine(dir.Path, "headers")).Length);
        Assert.Equal(0, env.GetStats().Flushes);
    }

    [Fact]
    public void A_shorter_header_file_is_extended_at_open_and_keeps_its_header()
    {
        using var dir = new TempDirectory();
        var options = new StorageOptions { Directory = dir.Path };
        using (var env = StorageEnvironment.Open(options))
        {
            using var tx = env.WriteTransaction();
            tx.CreateTree("t").Put(TestData.Key(1), [1, 2, 3]);
            tx.Commit();
        }
        string path = Path.Combine(dir.Path, "headers");
        var bytes = File.ReadAllBytes(path);
        // As a build before this one left it when only the first slot had been written: the file ends after that slot's header.
        int newest = BitConverter.ToInt64(bytes, 16) > BitConverter.ToInt64(bytes, HeaderFile.SlotSize + 16) ? 0 : 1; // Sequence is at offset 16
        var slot = bytes.AsSpan(newest * HeaderFile.SlotSize, HeaderFile.SlotSize).ToArray();
        File.WriteAllBytes(path, slot.AsSpan(0, 128).ToArray());
        using (var env = StorageEnvironment.Open(options))
        {
            Assert.Equal(HeaderFile.SlotSize * 2, new FileInfo(path).Length);
            using var tx = env.ReadTransaction();
            Assert.True(tx.ReadTree("t")!.TryGet(TestData.Key(1), out var value));
            Assert.Equal(new byte[] { 1, 2, 3 }, value.ToArray());
        }
    }
}
