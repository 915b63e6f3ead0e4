using RavenLite.Storage.Backup;
using RavenLite.TestKit;

namespace RavenLite.Storage.Tests.Backup;

/// <summary>
/// Storage-level hot backups: a full page stream taken under a read transaction while a writer keeps committing,
/// incremental streams holding only changed pages, and restores of the chain that open as the environment exactly as
/// of each stream's transaction (checked against a model of every tree, and by the consistency checker).
/// </summary>
public sealed class StorageSnapshotTests
{
    private static readonly string[] Trees = ["a", "b", "big"];

    private static Dictionary<string, Dictionary<string, byte[]>> Model(StorageEnvironment env)
    {
        using var tx = env.ReadTransaction();
        return Model(tx);
    }

    private static Dictionary<string, Dictionary<string, byte[]>> Model(RavenLite.Storage.Transactions.Transaction tx)
    {
        var model = new Dictionary<string, Dictionary<string, byte[]>>();
        foreach (string name in Trees)
        {
            var entries = new Dictionary<string, byte[]>();
            var tree = tx.ReadTree(name);
            if (tree != null)
            {
                var c = tree.CreateCursor();
                if (c.SeekToFirst())
                    do entries[System.Text.Encoding.ASCII.GetString(c.Key)] = c.Value.ToArray();
                    while (c.MoveNext());
            }
            model[name] = entries;
        }
        return model;
    }

    private static void Mutate(StorageEnvironment env, Random random, int transactions)
    {
        for (int t = 0; t < transactions; t++)
        {
            using var tx = env.WriteTransaction();
            for (int i = 0; i < 20; i++)
            {
                string tree = Trees[random.Next(Trees.Length)];
                var key = TestData.Key(random.Next(2_000));
                var target = tx.CreateTree(tree);
                if (random.Next(5) == 0)
                    target.Delete(key);
                else
                    target.Put(key, TestData.Value(random, tree == "big" ? 9_000 + random.Next(30_000) : 50 + random.Next(200)));
            }
            tx.Commit();
        }
    }

    private static void AssertSame(Dictionary<string, Dictionary<string, byte[]>> expected, StorageEnvironment env)
    {
        var actual = Model(env);
        foreach (string tree in Trees)
        {
            Assert.Equal(expected[tree].Count, actual[tree].Count);
            foreach (var (key, value) in expected[tree])
                Assert.True(actual[tree].TryGetValue(key, out var got) && got.AsSpan().SequenceEqual(value), $"tree {tree} key {key} differs");
        }
    }

    /// <summary>A page stream of the environment's current state (full when <paramref name="previous"/> is null).</summary>
    private static (byte[] Stream, SnapshotResult Result) Take(StorageEnvironment env, PageHashes? previous)
    {
        using var tx = env.ReadTransaction();
        using var buffer = new MemoryStream();
        var result = StorageSnapshot.Write(tx, buffer, previous);
        return (buffer.ToArray(), result);
    }

    private static StorageEnvironment Restore(string dir, params byte[][] streams)
    {
        using (var restorer = new SnapshotRestorer(dir))
        {
            for (int i = 0; i < streams.Length; i++)
                restorer.Apply(new MemoryStream(streams[i]), $"stream {i}");
            restorer.Complete();
        }
        return StorageEnvironment.Open(StorageOptions.ForDirectory(dir));
    }

    [Fact]
    public async Task A_full_stream_taken_while_a_writer_commits_restores_the_reader_s_snapshot_and_incrementals_carry_only_changes()
    {
        foreach (int seed in TestSeed.For(4242))
        {
            var random = new Random(seed);
            using var harness = StorageHarness.OnDisk();
            var env = harness.Env;
            Mutate(env, random, 200);

            byte[] full;
            Dictionary<string, Dictionary<string, byte[]>> atFull;
            SnapshotResult fullResult;
            using (var tx = env.ReadTransaction())
            {
                atFull = Model(tx);
                var writer = Task.Run(() => Mutate(env, new Random(seed + 1), 150));
                using var buffer = new MemoryStream();
                fullResult = StorageSnapshot.Write(tx, buffer, null);
                full = buffer.ToArray();
                await writer;
            }
            Assert.Equal(fullResult.ReachablePages, fullResult.WrittenPages);

            // What the writer did during the full stream, as a first incremental; then a few changes: the second
            // incremental holds far fewer pages than there are.
            var (catchUp, catchUpResult) = Take(env, fullResult.Hashes);
            Mutate(env, random, 5);
            var atIncrement = Model(env);
            var (increment, incrementResult) = Take(env, catchUpResult.Hashes);
            Assert.True(incrementResult.WrittenPages < incrementResult.ReachablePages / 2,
                $"seed {seed}: incremental wrote {incrementResult.WrittenPages} of {incrementResult.ReachablePages} pages");

            // The hashes survive their own serialization.
            using var hashBytes = new MemoryStream();
            incrementResult.Hashes.WriteTo(hashBytes);
            hashBytes.Position = 0;
            var reread = PageHashes.ReadFrom(hashBytes);
            Assert.Equal(incrementResult.Hashes.Count, reread.Count);
            Assert.Equal(incrementResult.TxId, reread.TxId);

            using var dirFull = new TempDirectory("ravenlite-restore");
            using (var restored = Restore(dirFull.Path, full))
            {
                AssertSame(atFull, restored);
                StorageHarness.AssertConsistent(restored);
            }
            using var dirChain = new TempDirectory("ravenlite-restore");
            var restoredChain = Restore(dirChain.Path, full, catchUp, increment);
            AssertSame(atIncrement, restoredChain);
            StorageHarness.AssertConsistent(restoredChain);
            // The restored environment takes writes and recovers them.
            Mutate(restoredChain, random, 20);
            var after = Model(restoredChain);
            restoredChain.Dispose();
            using (var reopened = StorageEnvironment.Open(StorageOptions.ForDirectory(dirChain.Path)))
            {
                AssertSame(after, reopened);
                StorageHarness.AssertConsistent(reopened);
            }
        }
    }

    [Fact]
    public void Damaged_truncated_or_out_of_order_streams_are_refused_with_the_reason()
    {
        using var harness = StorageHarness.OnDisk();
        Mutate(harness.Env, new Random(7), 50);
        var (full, first) = Take(harness.Env, null);
        Mutate(harness.Env, new Random(8), 5);
        var (increment, _) = Take(harness.Env, first.Hashes);

        string Refusal(params byte[][] streams)
        {
            using var dir = new TempDirectory("ravenlite-restore");
            using var restorer = new SnapshotRestorer(dir.Path);
            var e = Assert.Throws<InvalidDataException>(() =>
            {
                for (int i = 0; i < streams.Length; i++)
                    restorer.Apply(new MemoryStream(streams[i]), $"s{i}");
            });
            return e.Message;
        }

        var flipped = (byte[])full.Clone();
        flipped[full.Length / 2] ^= 0x40;
        Assert.Contains("checksum", Refusal(flipped), StringComparison.Ordinal);
        Assert.Contains("truncated", Refusal(full[..(full.Length - 100)]), StringComparison.Ordinal);
        Assert.Contains("starts with a full one", Refusal(increment), StringComparison.Ordinal);
        Assert.Contains("follows transaction", Refusal(full, increment, increment), StringComparison.Ordinal);
        Assert.Contains("magic", Refusal(new byte[200]), StringComparison.Ordinal);
    }
}
