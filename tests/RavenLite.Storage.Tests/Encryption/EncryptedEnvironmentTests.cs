using System.Security.Cryptography;
using System.Text;
using RavenLite.Storage.Encryption;
using RavenLite.TestKit;

namespace RavenLite.Storage.Tests.Encryption;

/// <summary>
/// An encrypted environment on real files (docs/format/data-file.md "Encrypted environments"): nothing written shows
/// in any file, in the data file, its seals, the journal or the undo file; it opens only with its key; a changed byte
/// anywhere is refused as corruption, never read as data.
/// </summary>
public sealed class EncryptedEnvironmentTests
{
    private static readonly byte[] Marker = Encoding.ASCII.GetBytes("MARKER-7f3a-do-not-leak");

    internal static EncryptionKey NewKey(out byte[] bytes)
    {
        bytes = RandomNumberGenerator.GetBytes(EncryptionKey.KeySize);
        return EncryptionKey.FromBytes(bytes);
    }

    private static StorageOptions Options(string dir, EncryptionKey? key, bool background = false) => new()
    {
        Directory = dir,
        EncryptionKey = key,
        BackgroundFlush = background,
        JournalFileSize = 1 << 20,
        OpenedPagesCacheBytes = 64 * StorageConstants.PageSize, // small: pages are evicted and opened again
    };

    private static byte[] Value(int i) =>
        [.. Marker, .. Encoding.ASCII.GetBytes($"#{i}#"), .. i % 7 == 0 ? Enumerable.Repeat((byte)'x', 30_000) : Enumerable.Repeat((byte)'y', 100), .. Marker];

    private static byte[] Key(int i) => [.. Marker, .. Encoding.ASCII.GetBytes($"/{i:D6}")];

    private static void Write(StorageEnvironment env, int from, int to)
    {
        for (int i = from; i < to; i++)
        {
            using var tx = env.WriteTransaction();
            tx.CreateTree("docs").Put(Key(i), Value(i));
            tx.Commit();
        }
    }

    private static void AssertNoMarker(string dir)
    {
        foreach (string file in Directory.GetFiles(dir, "*", SearchOption.AllDirectories))
        {
            var bytes = File.ReadAllBytes(file);
            Assert.True(bytes.AsSpan().IndexOf(Marker) < 0, $"'{file}' holds the marker in plain text");
            Assert.True(bytes.AsSpan().IndexOf(Marker.AsSpan(0, 12)) < 0, $"'{file}' holds part of the marker in plain text");
        }
    }

    [Fact]
    public void Nothing_written_shows_in_any_file_and_everything_reads_back_after_a_reopen()
    {
        using var dir = new TempDirectory("ravenlite-encrypted");
        using var key = NewKey(out var keyBytes);
        using (var env = StorageEnvironment.Open(Options(dir.Path, key)))
        {
            Write(env, 0, 300);
            env.Flush();
            // Updates after the flush reuse pages the flushed state holds (undo images) and stay in the journal.
            for (int i = 0; i < 300; i += 3)
            {
                using var tx = env.WriteTransaction();
                tx.CreateTree("docs").Delete(Key(i));
                tx.Commit();
            }
            env.Flush();
            Write(env, 300, 400);
            AssertNoMarker(dir.Path); // journal records not yet flushed, as well as the data file and undo file
            Assert.True(File.Exists(Path.Combine(dir.Path, "seals")));
        }
        AssertNoMarker(dir.Path);
        using (var again = EncryptionKey.FromBytes(keyBytes))
        using (var env = StorageEnvironment.Open(Options(dir.Path, again)))
        using (var r = env.ReadTransaction())
        {
            var docs = r.ReadTree("docs")!;
            for (int i = 0; i < 400; i++)
            {
                bool present = i >= 300 || i % 3 != 0;
                Assert.Equal(present, docs.TryGet(Key(i), out var v));
                if (present)
                    Assert.True(v.SequenceEqual(Value(i)), $"value {i} differs");
            }
            Assert.True(Checking.StorageChecker.Check(env).IsValid);
        }
    }

    [Fact]
    public void It_opens_only_with_its_key_and_a_plain_environment_only_without_one()
    {
        using var dir = new TempDirectory("ravenlite-encrypted");
        using var key = NewKey(out _);
        using (var env = StorageEnvironment.Open(Options(dir.Path, key)))
            Write(env, 0, 10);
        Assert.Contains("opens only with its encryption key", Assert.Throws<StorageEncryptionException>(() => StorageEnvironment.Open(Options(dir.Path, null))).Message);
        using (var other = NewKey(out _))
            Assert.Contains("not the key", Assert.Throws<StorageEncryptionException>(() => StorageEnvironment.Open(Options(dir.Path, other))).Message);
        using var plain = new TempDirectory("ravenlite-plain");
        using (var env = StorageEnvironment.Open(Options(plain.Path, null)))
            Write(env, 0, 10);
        Assert.Contains("is not encrypted", Assert.Throws<StorageEncryptionException>(() => StorageEnvironment.Open(Options(plain.Path, key))).Message);
        // Refusals changed nothing: both still open as they are.
        using (StorageEnvironment.Open(Options(dir.Path, key)))
        using (StorageEnvironment.Open(Options(plain.Path, null)))
        {
        }
    }

    [Theory]
    [InlineData("data")]
    [InlineData("seals")]
    public void A_changed_byte_in_a_sealed_page_or_its_seal_is_corruption(string file)
    {
        using var dir = new TempDirectory("ravenlite-encrypted");
        using var key = NewKey(out _);
        using (var env = StorageEnvironment.Open(Options(dir.Path, key)))
        {
            Write(env, 0, 50);
            env.Flush();
        }
        // The last page in use is a leaf of "docs" (or a page of an overflow run): flip one byte of it or of its seal.
        string path = Path.Combine(dir.Path, file);
        var bytes = File.ReadAllBytes(path);
        long page = FindLastUsedPage(Path.Combine(dir.Path, "seals"));
        long at = file == "data" ? (page * StorageConstants.PageSize) + 4000 : (page * EncryptionKey.SealSize) + 30;
        bytes[at] ^= 0x20;
        File.WriteAllBytes(path, bytes);
        var e = Record.Exception(() =>
        {
            using var env = StorageEnvironment.Open(Options(dir.Path, key));
            using var r = env.ReadTransaction();
            var docs = r.ReadTree("docs")!;
            for (int i = 0; i < 50; i++)
                docs.TryGet(Key(i), out _);
        });
        Assert.IsType<StorageCorruptionException>(e);
        Assert.Contains("does not authenticate", e.Message, StringComparison.Ordinal);
    }

    /// <summary>The highest page with a seal (pages past the file's end have none: all zero).</summary>
    private static long FindLastUsedPage(string seals)
    {
        var bytes = File.ReadAllBytes(seals);
        for (long p = (bytes.Length / EncryptionKey.SealSize) - 1; p > 0; p--)
            if (bytes.AsSpan((int)(p * EncryptionKey.SealSize), EncryptionKey.SealSize).ContainsAnyExcept((byte)0))
                return p;
        throw new InvalidOperationException("no sealed page");
    }

    [Fact]
    public void A_changed_byte_in_a_sealed_journal_record_is_never_replayed()
    {
        using var dir = new TempDirectory("ravenlite-encrypted");
        using var key = NewKey(out _);
        var env = StorageEnvironment.Open(Options(dir.Path, key));
        Write(env, 0, 20);
        // Left open, unflushed: the records are what an open would replay. Copy the files as a crash leaves them.
        using var crashed = new TempDirectory("ravenlite-encrypted-crash");
        TestData.CopyDirectory(dir.Path, crashed.Path);
        env.Dispose();
        string journal = Directory.GetFiles(Path.Combine(crashed.Path, "journal"), "*.journal").Order().First();
        var bytes = File.ReadAllBytes(journal);
        // Inside the first record's sealed payload, with the record's hash made to match again: only the seal can tell.
        var header = System.Runtime.InteropServices.MemoryMarshal.Read<RavenLite.Storage.Journal.JournalRecordHeader>(bytes);
        bytes[RavenLite.Storage.Journal.JournalRecordHeader.SizeOf + 10] ^= 1;
        header.Hash = RavenLite.Storage.Journal.JournalRecovery.ComputeHash(bytes.AsSpan(0, RavenLite.Storage.Journal.JournalRecordHeader.SizeOf),
            bytes.AsSpan(RavenLite.Storage.Journal.JournalRecordHeader.SizeOf, header.CompressedSize), (ulong)header.TxId);
        System.Runtime.InteropServices.MemoryMarshal.Write(bytes, in header);
        File.WriteAllBytes(journal, bytes);
        // The first record does not authenticate: the log would end before it, and the valid ones after it make that corruption.
        var e = Assert.Throws<StorageCorruptionException>(() => StorageEnvironment.Open(Options(crashed.Path, key)).Dispose());
        Assert.Contains("does not authenticate", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void A_large_record_sealed_in_chunks_on_every_core_replays_after_a_crash()
    {
        using var dir = new TempDirectory("ravenlite-encrypted");
        using var key = NewKey(out _);
        var values = Enumerable.Range(0, 600).Select(i => TestData.Value(new Random(i), 12_000)).ToList(); // ~7 MB, incompressible
        var env = StorageEnvironment.Open(Options(dir.Path, key));
        using (var tx = env.WriteTransaction())
        {
            var t = tx.CreateTree("big");
            for (int i = 0; i < values.Count; i++)
                t.Put(TestData.Key(i), [.. Marker, .. values[i]]);
            tx.Commit();
        }
        using var crashed = new TempDirectory("ravenlite-encrypted-crash");
        TestData.CopyDirectory(dir.Path, crashed.Path); // the record only in the journal, as a kill leaves it
        env.Dispose();
        AssertNoMarker(crashed.Path);
        using (var reopened = StorageEnvironment.Open(Options(crashed.Path, key)))
        using (var r = reopened.ReadTransaction())
        {
            Assert.True(reopened.RecoveredTransactions >= 1);
            var t = r.ReadTree("big")!;
            for (int i = 0; i < values.Count; i++)
                Assert.True(t.TryGet(TestData.Key(i), out var v) && v[Marker.Length..].SequenceEqual(values[i]), $"value {i}");
        }
    }
}
