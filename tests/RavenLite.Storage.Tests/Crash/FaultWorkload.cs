using System.Buffers.Binary;
using RavenLite.Storage.Platform;

namespace RavenLite.Storage.Tests.Crash;

/// <summary>
/// A deterministic workload for crash and fault tests: transaction i puts key i (every 9th value
/// is 20 KB, in overflow pages), every 5th deletes key i-3, and records i under "last" in tree
/// "meta"; the environment is flushed every 10 transactions. The state after any transaction can
/// be recomputed, so an audit can demand exact equality.
/// </summary>
internal static class FaultWorkload
{
    /// <summary>
    /// The workload's options; with <paramref name="flushIntervalMs"/> the background flusher runs at that interval (else
    /// only explicit flushes); with <paramref name="key"/> an encrypted environment.
    /// </summary>
    public static StorageOptions Options(IStorageFileSystem fs, DurabilityMode durability = DurabilityMode.Sync, int? flushIntervalMs = null,
        RavenLite.Storage.Encryption.EncryptionKey? key = null) => new()
    {
        EncryptionKey = key,
        Directory = "/mem",
        FileSystem = fs,
        Durability = durability,
        BackgroundFlush = flushIntervalMs != null,
        FlushIntervalMs = flushIntervalMs ?? 5000,
        JournalFileSize = 64 * 1024,
        DataFileGrowthStep = 64 * 1024,
        InitialMapSize = 1L << 30,
    };

    public static byte[] Value(int i) => TestData.Value(new Random(i), i % 9 == 0 ? 20_000 : 30 + i % 70);

    /// <summary><see cref="RunAsync"/> when <paramref name="asyncCommit"/>, else <see cref="Run(StorageEnvironment, int, int, ref int)"/>.</summary>
    public static void Run(StorageEnvironment env, int first, int count, ref int acked, bool asyncCommit)
    {
        if (asyncCommit)
            RunAsync(env, first, count, ref acked);
        else
            Run(env, first, count, ref acked);
    }

    /// <summary>Runs transactions until <paramref name="count"/> or an exception; <paramref name="acked"/> is the last transaction whose Commit returned.</summary>
    public static void Run(StorageEnvironment env, int first, int count, ref int acked)
    {
        for (int i = first; i < first + count; i++)
        {
            using (var tx = env.WriteTransaction())
            {
                Write(tx, i);
                tx.Commit();
            }
            acked = i;
            if (i % 10 == 9)
                env.Flush();
        }
    }

    /// <summary>
    /// The same transactions with async commit, pipelined as the transaction merger does: transaction
    /// i+1 is built while i's journal write is in flight, and i's commit is awaited (acknowledged)
    /// before i+1's is queued — so at most one unacknowledged commit can be durable.
    /// </summary>
    public static void RunAsync(StorageEnvironment env, int first, int count, ref int acked)
    {
        Task? inFlight = null;
        for (int i = first; i < first + count; i++)
        {
            using var tx = env.WriteTransaction();
            Write(tx, i);
            if (inFlight != null)
            {
                inFlight.GetAwaiter().GetResult();
                acked = i - 1;
                if (acked % 10 == 9)
                    env.Flush();
            }
            inFlight = tx.CommitAsync();
        }
        inFlight?.GetAwaiter().GetResult();
        acked = first + count - 1;
    }

    /// <summary>The changes of transaction i.</summary>
    public static void Write(RavenLite.Storage.Transactions.WriteTransaction tx, int i)
    {
        var t = tx.CreateTree("t");
        t.Put(TestData.Key(i), Value(i));
        if (i % 5 == 4)
            t.Delete(TestData.Key(i - 3));
        var last = new byte[4];
        BinaryPrimitives.WriteInt32LittleEndian(last, i);
        tx.CreateTree("meta").Put("last"u8, last);
    }

    /// <summary>
    /// Opens <paramref name="fs"/> and demands the exact state after transaction L, where L is the
    /// last acknowledged transaction or the one after it (committed to the journal but not
    /// acknowledged before the fault) — or, given <paramref name="atLeast"/> (no journal: a flushed state comes back),
    /// any L from it to that. Runs the checker. Returns L.
    /// </summary>
    public static int Audit(IStorageFileSystem fs, int acked, int? atLeast = null, RavenLite.Storage.Encryption.EncryptionKey? key = null)
    {
        using var env = StorageEnvironment.Open(Options(fs, key: key));
        int last;
        using (var r = env.ReadTransaction())
        {
            var meta = r.ReadTree("meta");
            last = meta != null && meta.TryGet("last"u8, out var v) ? BinaryPrimitives.ReadInt32LittleEndian(v) : -1;
            if (atLeast is { } min)
                Assert.True(last >= min && last <= acked + 1, $"recovered up to transaction {last}, flushed {min}, acknowledged {acked}");
            else
                Assert.True(last == acked || last == acked + 1, $"recovered up to transaction {last}, acknowledged {acked}");
            var t = r.ReadTree("t");
            int expectedCount = 0;
            for (int j = 0; j <= last + 3; j++)
            {
                bool deleted = j + 3 <= last && (j + 3) % 5 == 4;
                bool present = j <= last && !deleted;
                bool found = false;
                ReadOnlySpan<byte> value = default;
                if (t != null)
                    found = t.TryGet(TestData.Key(j), out value);
                Assert.True(present == found, $"key {j}: expected {(present ? "present" : "absent")} after transaction {last}");
                if (present)
                {
                    expectedCount++;
                    Assert.True(value.SequenceEqual(Value(j)), $"key {j} has the wrong value");
                }
            }
            Assert.Equal(expectedCount, t?.Count ?? 0);
        }
        var report = Checking.StorageChecker.Check(env);
        Assert.True(report.IsValid, report.ToString());
        return last;
    }

    public static bool IsExpectedFailure(Exception e) => e is IOException or StorageFailedException;
}
