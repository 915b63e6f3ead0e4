using RavenLite.Storage.Platform;
using RavenLite.TestKit;
using RavenLite.TestKit.Faults;
using Xunit.Abstractions;

namespace RavenLite.Storage.Tests.Crash;

/// <summary>docs/reliability.md R3, R6, R7 and R8 through the I/O seam.</summary>
public class FaultInjectionTests(ITestOutputHelper output)
{
    private const int Transactions = 60;

    private static long CountOperations(bool asyncCommit, RavenLite.Storage.Encryption.EncryptionKey? key)
    {
        using var mem = new MemoryFileSystem();
        var fault = new FaultInjectingFileSystem(mem);
        int acked = -1;
        using (var env = StorageEnvironment.Open(FaultWorkload.Options(fault, key: key)))
            FaultWorkload.Run(env, 0, Transactions, ref acked, asyncCommit);
        return fault.OperationCount;
    }

    /// <summary>R3: power loss at every I/O operation of the workload; unsynced writes dropped, kept in part, or torn. Encrypted too (pages, seals, journal and undo images sealed).</summary>
    [Theory]
    [InlineData(false, false)]
    [InlineData(true, false)]
    [InlineData(false, true)]
    public void Power_loss_at_every_operation_loses_no_acknowledged_transaction(bool asyncCommit, bool encrypted)
    {
        using var key = encrypted ? RavenLite.Storage.Tests.Encryption.EncryptedEnvironmentTests.NewKey(out _) : null;
        long total = CountOperations(asyncCommit, key);
        int explored = 0;
        foreach (int seed in TestSeed.For(31))
        {
            output.WriteLine($"seed {seed} (RAVENLITE_TEST_SEED replays); {total} operations in the workload");
            for (long n = 1; n <= total; n++)
            {
                var mode = (PowerLossMode)(n % 3);
                using var mem = new MemoryFileSystem();
                var fault = new FaultInjectingFileSystem(mem) { CrashAtOperation = n };
                int acked = -1;
                StorageEnvironment? env = null;
                try
                {
                    env = StorageEnvironment.Open(FaultWorkload.Options(fault, key: key));
                    FaultWorkload.Run(env, 0, Transactions, ref acked, asyncCommit);
                }
                catch (Exception e) when (FaultWorkload.IsExpectedFailure(e))
                {
                }
                finally
                {
                    env?.Dispose();
                }
                if (!fault.Crashed)
                {
                    // With async commit the flush runs beside the writer, so the number of I/O operations varies from run
                    // to run: this run may end before operation n of the counting run. Anything else is a missed crash point.
                    Assert.True(asyncCommit && fault.OperationCount < n, $"crash point {n} was never reached ({fault.OperationCount} operations ran)");
                    continue;
                }
                using var rebooted = fault.SimulatePowerLoss(mode, new Random(seed ^ (int)n));
                try
                {
                    FaultWorkload.Audit(rebooted, acked, key: key);
                }
                catch (Exception e)
                {
                    throw new InvalidOperationException($"crash at operation {n} ({mode}, seed {seed}, acked {acked}): {e.Message}", e);
                }
                explored++;
            }
        }
        output.WriteLine($"crash points explored: {explored}");
    }

    /// <summary>The disk after a power loss with transactions 50–58 only in the journal (flushed through 49; their pages reuse pages the flushed state holds).</summary>
    private static MemoryFileSystem CrashedWithJournalToReplay()
    {
        using var mem = new MemoryFileSystem();
        var fault = new FaultInjectingFileSystem(mem);
        int acked = -1;
        var env = StorageEnvironment.Open(FaultWorkload.Options(fault));
        FaultWorkload.Run(env, 0, 59, ref acked);
        Assert.Equal(58, acked);
        fault.CrashAtOperation = fault.OperationCount + 1; // the close's flush never happens
        try
        {
            env.Dispose();
        }
        catch (Exception e) when (FaultWorkload.IsExpectedFailure(e))
        {
        }
        return fault.SimulatePowerLoss(PowerLossMode.DropUnsynced, new Random(1));
    }

    /// <summary>
    /// R3 for recovery itself: a power loss at every I/O operation of an open that replays the journal. Replayed pages
    /// overwrite pages the header's state holds; a crash while they are written must leave a disk that the next open
    /// returns to that state and replays again (their before-images go to the undo file first).
    /// </summary>
    [Fact]
    public void Power_loss_at_every_operation_of_recovery_loses_nothing()
    {
        long total;
        using (var disk = CrashedWithJournalToReplay())
        {
            var counting = new FaultInjectingFileSystem(disk);
            using (var env = StorageEnvironment.Open(FaultWorkload.Options(counting)))
                Assert.Equal(9, env.RecoveredTransactions);
            total = counting.OperationCount;
        }
        foreach (int seed in TestSeed.For(41))
        {
            for (long n = 1; n <= total; n++)
            {
                var mode = (PowerLossMode)(n % 3);
                using var disk = CrashedWithJournalToReplay();
                var fault = new FaultInjectingFileSystem(disk) { CrashAtOperation = n };
                try
                {
                    StorageEnvironment.Open(FaultWorkload.Options(fault)).Dispose();
                }
                catch (Exception e) when (FaultWorkload.IsExpectedFailure(e))
                {
                }
                using var rebooted = fault.SimulatePowerLoss(mode, new Random(seed ^ (int)n));
                foreach (string path in disk.AllFiles.Where(f => !rebooted.FileExists(f)))
                    rebooted.WriteAllBytes(path, disk.ReadAllBytes(path)); // files the crashed open never touched, as they were
                try
                {
                    Assert.Equal(58, FaultWorkload.Audit(rebooted, 58));
                }
                catch (Exception e)
                {
                    throw new InvalidOperationException($"crash at operation {n} of {total} of recovery ({mode}, seed {seed}): {e.Message}", e);
                }
            }
        }
        output.WriteLine($"{total} operations in the recovering open");
    }

    /// <summary>
    /// R3 without a journal (<see cref="DurabilityMode.None"/>): a power loss at any operation returns exactly the state of
    /// a completed flush, never a mix. Freed pages are reused before the next flush, so flushes overwrite pages the synced
    /// state reaches; opening writes their before-images back from the undo file.
    /// </summary>
    [Fact]
    public void Power_loss_at_every_operation_without_a_journal_returns_a_flushed_state()
    {
        long total;
        using (var mem = new MemoryFileSystem())
        {
            var counting = new FaultInjectingFileSystem(mem);
            using (var env = StorageEnvironment.Open(FaultWorkload.Options(counting, DurabilityMode.None)))
                RunFlushing(env, out _, out _);
            total = counting.OperationCount;
        }
        int restored = 0;
        foreach (int seed in TestSeed.For(37))
        {
            for (long n = 1; n <= total; n++)
            {
                var mode = (PowerLossMode)(n % 3);
                using var mem = new MemoryFileSystem();
                var fault = new FaultInjectingFileSystem(mem) { CrashAtOperation = n };
                int acked = -1, flushed = -1;
                StorageEnvironment? env = null;
                try
                {
                    env = StorageEnvironment.Open(FaultWorkload.Options(fault, DurabilityMode.None));
                    RunFlushing(env, out acked, out flushed);
                }
                catch (Exception e) when (FaultWorkload.IsExpectedFailure(e))
                {
                }
                finally
                {
                    env?.Dispose();
                }
                using var rebooted = fault.SimulatePowerLoss(mode, new Random(seed ^ (int)n));
                try
                {
                    using (var reopened = StorageEnvironment.Open(FaultWorkload.Options(rebooted)))
                        restored += reopened.UndoPagesRestored > 0 ? 1 : 0;
                    FaultWorkload.Audit(rebooted, acked, flushed);
                }
                catch (Exception e)
                {
                    throw new InvalidOperationException($"crash at operation {n} ({mode}, seed {seed}, acked {acked}, flushed {flushed}): {e.Message}", e);
                }
            }
        }
        output.WriteLine($"{total} crash points; before-images written back after {restored} of them");
        Assert.True(restored > 0, "no crash point fell between an undo file and its flush's header");

        static void RunFlushing(StorageEnvironment env, out int acked, out int flushed)
        {
            acked = flushed = -1;
            for (int i = 0; i < Transactions; i++)
            {
                using (var tx = env.WriteTransaction())
                {
                    FaultWorkload.Write(tx, i);
                    tx.Commit();
                }
                acked = i;
                if (i % 10 == 9)
                {
                    env.Flush();
                    flushed = i;
                }
            }
        }
    }

    /// <summary>R7: fail the Nth operation (once) for N = 1.. until the workload completes; nothing unexpected escapes, nothing acknowledged is lost.</summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void Failing_the_nth_operation_never_loses_acknowledged_data(bool asyncCommit)
    {
        int runs = 0;
        for (long n = 1; ; n++)
        {
            using var mem = new MemoryFileSystem();
            var fault = new FaultInjectingFileSystem(mem) { FailAtOperation = n };
            int acked = -1;
            StorageEnvironment? env = null;
            bool failed = false;
            try
            {
                env = StorageEnvironment.Open(FaultWorkload.Options(fault));
                FaultWorkload.Run(env, 0, Transactions, ref acked, asyncCommit);
            }
            catch (Exception e) when (FaultWorkload.IsExpectedFailure(e))
            {
                failed = true;
                if (env != null && e is StorageFailedException)
                    Assert.Throws<StorageFailedException>(() => env.WriteTransaction().Dispose());
            }
            finally
            {
                env?.Dispose();
            }
            runs++;
            // Reopen on the same disk (a process restart): everything acknowledged is there.
            FaultWorkload.Audit(mem, acked);
            if (!failed && fault.InjectedFailures == 0)
                break;
        }
        output.WriteLine($"fail-the-Nth-operation runs: {runs}");
        Assert.True(runs > 50);
    }

    /// <summary>R6: a failed fsync of the journal stops the environment; nothing is acknowledged after it and nothing acknowledged before it is lost, even when the kernel dropped the dirty pages.</summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void Fsync_failure_stops_writes_and_reopen_recovers(bool persistent)
    {
        using var mem = new MemoryFileSystem();
        var fault = new FaultInjectingFileSystem(mem) { CountedOperations = FaultOperations.Sync, PersistentSyncFailure = persistent };
        int acked = -1;
        var env = StorageEnvironment.Open(FaultWorkload.Options(fault));
        FaultWorkload.Run(env, 0, 7, ref acked);
        fault.FailAtOperation = fault.OperationCount + 1;
        int before = acked;
        Assert.Throws<StorageFailedException>(() => FaultWorkload.Run(env, 7, 5, ref acked));
        Assert.Equal(before, acked);
        var e = Assert.Throws<StorageFailedException>(() => env.WriteTransaction());
        Assert.Contains("reopen", e.Message, StringComparison.Ordinal);
        Assert.NotNull(env.Failure);
        // Readers still work on the stopped environment.
        using (var r = env.ReadTransaction())
            Assert.True(r.ReadTree("t")!.ContainsKey(TestData.Key(6)));
        env.Dispose();

        if (persistent)
            Assert.ThrowsAny<IOException>(() => StorageEnvironment.Open(FaultWorkload.Options(fault)).Dispose());

        // After a failed fsync the kernel may have dropped the dirty pages: drop every unsynced write.
        using var rebooted = fault.SimulatePowerLoss(PowerLossMode.DropUnsynced, new Random(1));
        Assert.Equal(acked, FaultWorkload.Audit(rebooted, acked));
        using var again = StorageEnvironment.Open(FaultWorkload.Options(rebooted));
        int more = acked;
        FaultWorkload.Run(again, acked + 1, 5, ref more);
        Assert.Equal(acked + 5, more);
    }

    /// <summary>R8: a full disk during journal append, data-file growth or flush is a clear error; after space is freed, writes resume.</summary>
    [Fact]
    public void Disk_full_is_a_clear_error_and_writes_resume_after_space_is_freed()
    {
        int errors = 0;
        for (long capacity = 300 * 1024; capacity <= 1400 * 1024; capacity += 100 * 1024)
        {
            using var mem = new MemoryFileSystem();
            var fault = new FaultInjectingFileSystem(mem) { DiskCapacity = capacity };
            int acked = -1;
            StorageEnvironment? env = null;
            try
            {
                env = StorageEnvironment.Open(FaultWorkload.Options(fault));
                FaultWorkload.Run(env, 0, 200, ref acked);
            }
            catch (Exception e) when (FaultWorkload.IsExpectedFailure(e))
            {
                Assert.Contains("No space left on device", e.ToString(), StringComparison.Ordinal);
                errors++;
            }
            finally
            {
                env?.Dispose();
            }
            fault.DiskCapacity = null;
            int last = FaultWorkload.Audit(fault, acked);
            using (var resumed = StorageEnvironment.Open(FaultWorkload.Options(fault)))
            {
                int more = last;
                FaultWorkload.Run(resumed, last + 1, 10, ref more);
                Assert.Equal(last + 10, more);
            }
        }
        output.WriteLine($"disk-full errors hit: {errors}");
        Assert.True(errors >= 5);
    }

    /// <summary>
    /// An exception other than an I/O error in the background flush (a broken invariant; injected here at the data file's
    /// sync) stops the environment as an I/O error does — the next commit fails with StorageFailedException — and never
    /// leaves the flusher thread, where it would end the process (this test host with it). Nothing acknowledged is lost.
    /// </summary>
    [Fact]
    public void A_broken_invariant_in_the_background_flush_stops_the_environment_not_the_process()
    {
        using var mem = new MemoryFileSystem();
        var fault = new FaultInjectingFileSystem(mem);
        int acked = -1;
        int injected = 0;
        using (var env = StorageEnvironment.Open(FaultWorkload.Options(fault, flushIntervalMs: 5)))
        {
            fault.BeforeSync = path =>
            {
                if (path.EndsWith("/data", StringComparison.Ordinal))
                {
                    Interlocked.Increment(ref injected);
                    throw new InvalidOperationException("injected broken invariant in the flush");
                }
            };
            var failed = Assert.Throws<StorageFailedException>(() =>
            {
                var until = DateTime.UtcNow.AddSeconds(30);
                for (int i = 0; DateTime.UtcNow < until; i++)
                {
                    using var tx = env.WriteTransaction();
                    FaultWorkload.Write(tx, i);
                    tx.Commit();
                    acked = i;
                    Thread.Sleep(1);
                }
            });
            Assert.Contains("injected broken invariant", failed.ToString(), StringComparison.Ordinal);
            fault.BeforeSync = null;
        }
        Assert.True(injected >= 1);
        output.WriteLine($"the environment stopped after {acked + 1} acknowledged transactions");
        FaultWorkload.Audit(fault, acked);
    }
}
