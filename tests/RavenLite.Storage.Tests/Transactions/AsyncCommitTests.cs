using RavenLite.Storage.Platform;
using RavenLite.TestKit.Faults;

namespace RavenLite.Storage.Tests.Transactions;

/// <summary>
/// WriteTransaction.CommitAsync: the next write transaction builds on a commit whose journal write is
/// still in flight; readers see it only once durable; queued commits share one fdatasync; a failed
/// journal write fails the in-flight commit and every later one.
/// </summary>
public sealed class AsyncCommitTests : IDisposable
{
    private readonly MemoryFileSystem _mem = new();
    private readonly FaultInjectingFileSystem _fault;
    private readonly ManualResetEventSlim _syncGate = new(true);
    private readonly ManualResetEventSlim _syncWaiting = new(false);

    public AsyncCommitTests()
    {
        _fault = new FaultInjectingFileSystem(_mem)
        {
            BeforeSync = path =>
            {
                if (!path.Contains("journal", StringComparison.Ordinal) || _syncGate.IsSet)
                    return;
                _syncWaiting.Set();
                Assert.True(_syncGate.Wait(TimeSpan.FromSeconds(30)), "the test never released the journal fsync");
            },
        };
    }

    private StorageOptions Options(IStorageFileSystem? fs = null) => new()
    {
        Directory = "/mem",
        FileSystem = fs ?? _fault,
        BackgroundFlush = false,
        InitialMapSize = 1L << 28,
    };

    private static Task PutAndCommitAsync(StorageEnvironment env, string key, string value)
    {
        using var tx = env.WriteTransaction();
        tx.CreateTree("t").Put(System.Text.Encoding.UTF8.GetBytes(key), System.Text.Encoding.UTF8.GetBytes(value));
        return tx.CommitAsync();
    }

    private static string? Read(StorageEnvironment env, string key)
    {
        using var r = env.ReadTransaction();
        var t = r.ReadTree("t");
        return t != null && t.TryGet(System.Text.Encoding.UTF8.GetBytes(key), out var v) ? System.Text.Encoding.UTF8.GetString(v) : null;
    }

    /// <summary>Holds the next journal fsync until <see cref="_syncGate"/> is set again; waits until a commit is blocked in it.</summary>
    private void HoldJournalSync() => _syncGate.Reset();

    private void WaitUntilSyncHeld() => Assert.True(_syncWaiting.Wait(TimeSpan.FromSeconds(30)), "no journal fsync started");

    [Fact]
    public async Task A_reader_that_starts_after_the_next_writer_keeps_the_copies_its_older_snapshot_reaches()
    {
        using var env = StorageEnvironment.Open(Options());
        await PutAndCommitAsync(env, "a", "0"); // its pages wait in memory (no background flush)
        HoldJournalSync();
        var first = PutAndCommitAsync(env, "a", "1"); // copies the page holding "a" and frees the copy above
        WaitUntilSyncHeld();

        // The next writer registers with the in-flight state; a reader that starts after it gets the older, durable one.
        using var writer = env.WriteTransaction();
        using var reader = env.ReadTransaction();
        var tree = reader.ReadTree("t")!;
        _syncGate.Set();
        // Publishing "1" releases copies freed up to the oldest snapshot: the reader's, not the writer's.
        await first.WaitAsync(TimeSpan.FromSeconds(30));

        // Bounded: a page read from a released copy's stale place can send the search round in circles.
        string? value = await Task.Run(() => tree.TryGet("a"u8, out var v) ? System.Text.Encoding.UTF8.GetString(v) : null)
            .WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal("0", value);
        writer.CreateTree("t").Put("b"u8, "2"u8);
        await writer.CommitAsync();
        Assert.Equal("1", Read(env, "a"));
    }

    [Fact]
    public async Task In_flight_commit_is_the_next_writers_base_and_invisible_to_readers_until_durable()
    {
        using (var env = StorageEnvironment.Open(Options()))
        {
            await PutAndCommitAsync(env, "a", "0");
            HoldJournalSync();
            var first = PutAndCommitAsync(env, "a", "1");
            WaitUntilSyncHeld();
            Assert.False(first.IsCompleted);
            Assert.Equal("0", Read(env, "a"));
            long visible = env.LastCommittedTxId;

            Task second;
            using (var tx = env.WriteTransaction())
            {
                var t = tx.CreateTree("t");
                Assert.True(t.TryGet("a"u8, out var v)); // the writer sees the in-flight commit
                Assert.Equal("1", System.Text.Encoding.UTF8.GetString(v));
                t.Put("b"u8, "2"u8);
                second = tx.CommitAsync();
            }
            Assert.False(second.IsCompleted);
            Assert.Equal(visible, env.LastCommittedTxId);
            Assert.Null(Read(env, "b"));

            _syncGate.Set();
            await Task.WhenAll(first, second).WaitAsync(TimeSpan.FromSeconds(30));
            Assert.Equal("1", Read(env, "a"));
            Assert.Equal("2", Read(env, "b"));
            Assert.Equal(visible + 2, env.LastCommittedTxId);
        }
        // Recovery (no flush happened: BackgroundFlush off, Dispose flushes — reopen from the journal too).
        using var again = StorageEnvironment.Open(Options());
        Assert.Equal("1", Read(again, "a"));
        Assert.Equal("2", Read(again, "b"));
    }

    [Fact]
    public async Task Commits_queued_behind_an_in_flight_one_share_one_fdatasync()
    {
        using var env = StorageEnvironment.Open(Options());
        await PutAndCommitAsync(env, "k", "start");
        long syncsBefore = env.GetStats().JournalSyncs;
        HoldJournalSync();
        var first = PutAndCommitAsync(env, "k0", "v");
        WaitUntilSyncHeld();
        var queued = new List<Task>();
        for (int i = 1; i <= 20; i++)
            queued.Add(PutAndCommitAsync(env, "k" + i, "v"));
        Assert.All(queued, t => Assert.False(t.IsCompleted));
        _syncGate.Set();
        await Task.WhenAll([first, .. queued]).WaitAsync(TimeSpan.FromSeconds(30));
        var stats = env.GetStats();
        Assert.Equal(2, stats.JournalSyncs - syncsBefore); // the held one, then one for all twenty
        for (int i = 0; i <= 20; i++)
            Assert.Equal("v", Read(env, "k" + i));
    }

    [Fact]
    public async Task A_failed_journal_fsync_fails_the_in_flight_commit_and_every_later_one()
    {
        var env = StorageEnvironment.Open(Options());
        await PutAndCommitAsync(env, "a", "durable");
        HoldJournalSync();
        var first = PutAndCommitAsync(env, "a", "lost");
        WaitUntilSyncHeld();
        var second = PutAndCommitAsync(env, "b", "built on the failed one");
        _fault.CountedOperations = FaultOperations.Sync;
        _fault.FailAtOperation = _fault.OperationCount + 1;
        _syncGate.Set();
        await Assert.ThrowsAsync<StorageFailedException>(() => first.WaitAsync(TimeSpan.FromSeconds(30)));
        await Assert.ThrowsAsync<StorageFailedException>(() => second.WaitAsync(TimeSpan.FromSeconds(30)));
        Assert.Throws<StorageFailedException>(() => env.WriteTransaction().Dispose());
        Assert.Equal("durable", Read(env, "a")); // readers never saw the failed commits
        Assert.Null(Read(env, "b"));
        env.Dispose();

        // What survives a power loss now is exactly the acknowledged state.
        using var rebooted = _fault.SimulatePowerLoss(PowerLossMode.DropUnsynced, new Random(1));
        using var again = StorageEnvironment.Open(Options(rebooted));
        Assert.Equal("durable", Read(again, "a"));
        Assert.Null(Read(again, "b"));
    }

    [Fact]
    public async Task Dispose_waits_for_commits_in_flight()
    {
        var env = StorageEnvironment.Open(Options());
        HoldJournalSync();
        var pending = PutAndCommitAsync(env, "x", "1");
        WaitUntilSyncHeld();
        var release = Task.Run(async () =>
        {
            await Task.Delay(100);
            _syncGate.Set();
        });
        env.Dispose();
        Assert.True(pending.IsCompletedSuccessfully);
        await release;
        using var again = StorageEnvironment.Open(Options());
        Assert.Equal(0, again.RecoveredTransactions); // Dispose flushed after the commit landed
        Assert.Equal("1", Read(again, "x"));
    }

    public void Dispose()
    {
        _syncGate.Set();
        _mem.Dispose();
        _syncGate.Dispose();
        _syncWaiting.Dispose();
    }
}
