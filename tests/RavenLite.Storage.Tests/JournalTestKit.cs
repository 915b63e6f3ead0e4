using System.Runtime.InteropServices;
using RavenLite.Storage.Journal;
using RavenLite.Storage.Platform;

namespace RavenLite.Storage.Tests;

/// <summary>Builds journals in memory and takes them apart for recovery tests.</summary>
internal static class JournalTestKit
{
    public const string Dir = "/mem";
    public const string FirstJournal = "/mem/journal/0000000000000000001.journal";

    public static StorageOptions NoFlush(IStorageFileSystem fs, long journalFileSize = 256 * 1024, DurabilityMode durability = DurabilityMode.Sync,
        RavenLite.Storage.Encryption.EncryptionKey? key = null) => new()
    {
        EncryptionKey = key,
        Directory = Dir,
        FileSystem = fs,
        Durability = durability,
        BackgroundFlush = false,
        JournalFileSize = journalFileSize,
        InitialMapSize = 1L << 30,
        DataFileGrowthStep = 64 * 1024,
    };

    public static byte[] ValueFor(long i) => TestData.Value(new Random((int)i), 40 + (int)(i % 60));

    /// <summary>Commits <paramref name="count"/> transactions (tx i+1 puts key i) and returns a copy of the files as a killed process would leave them.</summary>
    public static MemoryFileSystem BuildJournal(int count, long journalFileSize = 256 * 1024, RavenLite.Storage.Encryption.EncryptionKey? key = null)
    {
        using var mem = new MemoryFileSystem();
        using (var env = StorageEnvironment.Open(NoFlush(mem, journalFileSize, key: key)))
        {
            for (int i = 0; i < count; i++)
            {
                using var tx = env.WriteTransaction();
                tx.CreateTree("t").Put(TestData.Key(i), ValueFor(i));
                tx.Commit();
            }
            return Clone(mem);
        }
    }

    public static MemoryFileSystem Clone(MemoryFileSystem source, Func<string, byte[], byte[]?>? edit = null)
    {
        var copy = new MemoryFileSystem();
        foreach (string path in source.AllFiles)
        {
            var bytes = source.ReadAllBytes(path);
            var edited = edit == null ? bytes : edit(path, bytes);
            if (edited != null)
                copy.WriteAllBytes(path, edited);
        }
        return copy;
    }

    /// <summary>(offset, length, txId) of each record from the start of a journal file.</summary>
    public static List<(int Offset, int Length, long TxId)> Records(byte[] journal)
    {
        var list = new List<(int, int, long)>();
        int pos = 0;
        while (pos + JournalRecordHeader.SizeOf <= journal.Length)
        {
            var h = MemoryMarshal.Read<JournalRecordHeader>(journal.AsSpan(pos));
            if (h.Magic != JournalRecordHeader.MagicValue || (list.Count > 0 && h.TxId != list[^1].Item3 + 1))
                break;
            int len = JournalRecordHeader.SizeOf + h.CompressedSize;
            list.Add((pos, len, h.TxId));
            pos += len;
        }
        return list;
    }

    /// <summary>Opens the file system and asserts exactly keys [0, expected) are present with their values.</summary>
    public static void AssertPrefix(MemoryFileSystem fs, int expected, int max, RavenLite.Storage.Encryption.EncryptionKey? key = null)
    {
        using var env = StorageEnvironment.Open(NoFlush(fs, key: key));
        using (var r = env.ReadTransaction())
        {
            var t = r.ReadTree("t");
            Assert.Equal(expected, t?.Count ?? 0);
            for (int i = 0; i < max; i++)
            {
                bool found = false;
                ReadOnlySpan<byte> v = default;
                if (t != null)
                    found = t.TryGet(TestData.Key(i), out v);
                Assert.Equal(i < expected, found);
                if (found)
                    Assert.True(v.SequenceEqual(ValueFor(i)));
            }
        }
        var report = Checking.StorageChecker.Check(env);
        Assert.True(report.IsValid, report.ToString());
    }
}
