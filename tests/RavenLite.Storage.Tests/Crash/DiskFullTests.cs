using System.Diagnostics;
using RavenLite.Storage.Platform;
using RavenLite.TestKit.Faults;
using Xunit.Abstractions;

namespace RavenLite.Storage.Tests.Crash;

/// <summary>
/// A full disk fails the write that needed the space, at once and cleanly, and the same environment
/// takes writes again once space is freed (no reopen). Other I/O errors still stop the environment until reopen.
/// </summary>
public class DiskFullTests(ITestOutputHelper output)
{
    private static readonly TimeSpan NoHang = TimeSpan.FromSeconds(30);

    /// <summary>Runs <paramref name="work"/> on the thread pool and fails the test if it does not end within <see cref="NoHang"/>.</summary>
    private static Exception? Bounded(Action work)
    {
        var task = Task.Run(work);
        Assert.True(((IAsyncResult)task).AsyncWaitHandle.WaitOne(NoHang), "the workload hung");
        return task.Exception?.InnerException;
    }

    /// <summary>The last workload transaction a new reader sees, or -1.</summary>
    private static int LastVisible(StorageEnvironment env)
    {
        using var r = env.ReadTransaction();
        return r.ReadTree("meta") is { } meta && meta.TryGet("last"u8, out var v) ? System.Buffers.Binary.BinaryPrimitives.ReadInt32LittleEndian(v) : -1;
    }

    // Kept whole: one scenario on one environment whose disk fills and frees; each step checks the state the
    // previous one left.
    /// <summary>
    /// Commits until the disk is full: the commit that needs more room, for the data file (which grows as commits
    /// need it, so that a flush never has to) or for the journal, is refused.
    /// </summary>
    [Theory]
    [InlineData(false, true)]
    [InlineData(true, true)]
    [InlineData(false, false)]
    public void A_full_disk_fails_the_commit_and_the_same_environment_resumes_once_space_is_freed(bool asyncCommit, bool flush)
    {
        int runs = 0, journalRefusals = 0, dataRefusals = 0;
        for (long capacity = 300 * 1024; capacity <= 1400 * 1024; capacity += 100 * 1024)
        {
            using var mem = new MemoryFileSystem();
            var fault = new FaultInjectingFileSystem(mem) { DiskCapacity = capacity };
            int acked = -1, flushRefusals = 0, next = 0;
            var env = StorageEnvironment.Open(FaultWorkload.Options(fault));
            try
            {
                // Commits one transaction; a refused flush is only counted. Returns the commit's refusal, if any.
                DiskFullException? Step(out TimeSpan took)
                {
                    using var tx = env.WriteTransaction();
                    FaultWorkload.Write(tx, next);
                    long started = Stopwatch.GetTimestamp();
                    try
                    {
                        if (asyncCommit)
                            tx.CommitAsync().GetAwaiter().GetResult();
                        else
                            tx.Commit();
                    }
                    catch (DiskFullException e)
                    {
                        took = Stopwatch.GetElapsedTime(started);
                        return e;
                    }
                    took = Stopwatch.GetElapsedTime(started);
                    acked = next++;
                    if (flush && acked % 10 == 9)
                    {
                        try
                        {
                            env.Flush();
                        }
                        catch (DiskFullException)
                        {
                            flushRefusals++;
                            Assert.NotNull(env.DiskFull);
                        }
                    }
                    return null;
                }

                DiskFullException? refused = null;
                TimeSpan took = default;
                Assert.Null(Bounded(() =>
                {
                    while (refused == null && next < 5000)
                        refused = Step(out took);
                }));
                Assert.NotNull(refused);
                runs++;
                output.WriteLine($"capacity {capacity / 1024} KiB: {flushRefusals} flushes refused, then the commit of transaction {next} refused in {took.TotalMilliseconds:F2} ms: {refused.Message}");
                Assert.Contains("No space left on the device for the", refused.Message, StringComparison.Ordinal);
                if (refused.Message.Contains("for the journal", StringComparison.Ordinal))
                    journalRefusals++;
                else
                    dataRefusals++;
                Assert.True(took < TimeSpan.FromSeconds(1), $"the refusal took {took}");
                Assert.Null(env.Failure);
                Assert.Same(refused, env.DiskFull);

                // Reads go on and see exactly what was acknowledged; the refused transaction left nothing behind.
                Assert.Equal(acked, LastVisible(env));
                // While the disk stays full, the next commits are refused the same way.
                Assert.Null(Bounded(() => Assert.NotNull(Step(out _))));
                Assert.Null(env.Failure);

                // Space returns: the same environment commits and flushes again.
                fault.DiskCapacity = null;
                Assert.Null(Bounded(() =>
                {
                    for (int k = 0; k < 25; k++)
                        Assert.Null(Step(out _));
                }));
                env.Flush();
                Assert.Null(env.DiskFull);
                Assert.Equal(acked, LastVisible(env));
            }
            finally
            {
                env.Dispose();
            }
            Assert.Equal(acked, FaultWorkload.Audit(fault, acked));
        }
        output.WriteLine($"commits refused for want of journal space: {journalRefusals}, of data-file space: {dataRefusals}");
        Assert.True(runs >= 5);
        // Flushed, the journal is recycled and the data file is what outgrows the disk; never flushed, the journal is.
        Assert.True(flush ? dataRefusals > 0 : journalRefusals > 0);
    }

    /// <summary>
    /// ENOSPC, then EIO, at each I/O operation of the workload in turn. ENOSPC where space is being allocated is a
    /// <see cref="DiskFullException"/> and the environment goes on; every other failure stops the environment and a
    /// reopen recovers. Never a hang, never an acknowledged transaction lost.
    /// </summary>
    [Theory]
    [InlineData(DiskFullException.ENOSPC, false)]
    [InlineData(DiskFullException.ENOSPC, true)]
    [InlineData(5, false)]
    public void Enospc_and_eio_at_every_operation(int errno, bool asyncCommit)
    {
        int runs = 0, carriedOn = 0, stopped = 0;
        for (long n = 1; ; n++)
        {
            using var mem = new MemoryFileSystem();
            var fault = new FaultInjectingFileSystem(mem) { FailAtOperation = n, FailErrno = errno };
            int acked = -1;
            StorageEnvironment? env = null;
            var e = Bounded(() =>
            {
                env = StorageEnvironment.Open(FaultWorkload.Options(fault));
                FaultWorkload.Run(env, 0, 40, ref acked, asyncCommit);
            });
            runs++;
            try
            {
                if (e == null)
                {
                    if (fault.InjectedFailures == 0)
                        break; // past the workload's last operation
                }
                else if (env == null)
                {
                    Assert.True(e is IOException or StorageFailedException, $"open, operation {n}: {e}");
                }
                else if (e is DiskFullException)
                {
                    Assert.Equal(DiskFullException.ENOSPC, errno);
                    Assert.Null(env.Failure);
                    carriedOn++;
                    // Resume after what readers see (a flush that found the disk full comes after its transaction's commit).
                    int from = Math.Max(acked, LastVisible(env)) + 1;
                    int more = from - 1;
                    Assert.Null(Bounded(() => FaultWorkload.Run(env, from, 10, ref more, asyncCommit)));
                    acked = more;
                }
                else
                {
                    Assert.True(e is StorageFailedException, $"operation {n}: {e}");
                    Assert.NotNull(env.Failure);
                    Assert.Throws<StorageFailedException>(() => env.WriteTransaction().Dispose());
                    stopped++;
                }
            }
            finally
            {
                env?.Dispose();
            }
            FaultWorkload.Audit(mem, acked); // a restart: everything acknowledged is there
        }
        output.WriteLine($"errno {errno}: {runs} runs, {carriedOn} carried on after a DiskFullException, {stopped} stopped the environment");
        Assert.True(runs > 50);
        if (errno == DiskFullException.ENOSPC)
            Assert.True(carriedOn > 0);
        else
            Assert.Equal(0, carriedOn);
    }
}
