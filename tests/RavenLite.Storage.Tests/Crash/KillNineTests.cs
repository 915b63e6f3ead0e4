using System.Buffers.Binary;
using System.Diagnostics;
using System.Globalization;
using RavenLite.Storage.Checking;
using RavenLite.Storage.CrashWorker;
using RavenLite.TestKit;
using Xunit.Abstractions;

namespace RavenLite.Storage.Tests.Crash;

/// <summary>
/// A child process commits transactions on real files and is killed with SIGKILL at random
/// moments; after each kill the environment is reopened here and audited: every acknowledged
/// transaction is present with its exact content and the checker is clean. Rounds default to 12
/// (CI); RAVENLITE_CRASH_ROUNDS runs longer.
/// </summary>
public class KillNineTests(ITestOutputHelper output)
{
    [Theory]
    [InlineData(false, false)]
    [InlineData(true, false)]
    [InlineData(true, true)]
    public void Sigkill_at_random_moments_loses_no_acknowledged_transaction(bool asyncCommit, bool encrypted)
    {
        using var key = encrypted ? RavenLite.Storage.Encryption.EncryptionKey.FromBytes(CrashModel.TestKey) : null;
        int rounds = int.TryParse(Environment.GetEnvironmentVariable("RAVENLITE_CRASH_ROUNDS"), NumberStyles.None, CultureInfo.InvariantCulture, out int n) ? n : 12;
        int seed = TestSeed.For(77)[^1];
        output.WriteLine($"seed {seed}, rounds {rounds}");
        var random = new Random(seed);
        using var dir = new TempDirectory("ravenlite-kill9");
        int lastAcked = -1;
        var recovery = new List<double>();
        for (int round = 0; round < rounds; round++)
        {
            int acked = RunAndKill(dir.Path, random.Next(150, 900), asyncCommit, encrypted);
            // -1: killed before its first acknowledgement (still opening the grown environment); the audit below still runs.
            Assert.True(acked == -1 || acked >= lastAcked, $"round {round}: acknowledged {acked} after {lastAcked} in an earlier round");
            lastAcked = Math.Max(lastAcked, acked);
            var sw = Stopwatch.StartNew();
            var options = StorageOptions.ForDirectory(dir.Path);
            using var env = StorageEnvironment.Open(new StorageOptions { Directory = options.Directory, EncryptionKey = key });
            recovery.Add(sw.Elapsed.TotalMilliseconds);
            int last;
            using (var r = env.ReadTransaction())
            {
                if (r.ReadTree("meta") is not { } meta)
                {
                    // Killed before its first commit (a slow start on a busy machine): nothing was acknowledged, nothing is owed.
                    Assert.True(lastAcked == -1, $"round {round}: the data is gone although {lastAcked} was acknowledged");
                    continue;
                }
                last = BinaryPrimitives.ReadInt32LittleEndian(Get(meta, "last"u8.ToArray()));
                Assert.True(last >= lastAcked, $"round {round}: recovered up to {last} but {lastAcked} was acknowledged");
                var t = r.ReadTree("t")!;
                for (int j = 0; j <= last + 2; j++)
                {
                    bool present = CrashModel.Present(j, last);
                    Assert.Equal(present, t.TryGet(CrashModel.Key(j), out var v));
                    if (present)
                        Assert.True(v.SequenceEqual(CrashModel.Value(j)), $"key {j} content differs");
                }
            }
            var report = StorageChecker.Check(env);
            Assert.True(report.IsValid, report.ToString());
            lastAcked = last;
            output.WriteLine($"round {round}: killed after ack {acked}, recovered to {last} in {recovery[^1]:F0} ms ({env.RecoveredTransactions} journal records replayed)");
        }
        Assert.True(lastAcked > 20, $"the worker acknowledged only {lastAcked} transactions");
    }

    private static byte[] Get(RavenLite.Storage.Trees.Tree tree, byte[] key)
    {
        Assert.True(tree.TryGet(key, out var v));
        return v.ToArray();
    }

    private static int RunAndKill(string dir, int killAfterMs, bool asyncCommit, bool encrypted)
    {
        string worker = Path.Combine(AppContext.BaseDirectory, "RavenLite.Storage.CrashWorker.dll");
        var psi = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        psi.ArgumentList.Add(worker);
        psi.ArgumentList.Add(dir);
        if (asyncCommit)
            psi.ArgumentList.Add("--async");
        if (encrypted)
            psi.ArgumentList.Add("--encrypted");
        using var p = new Process { StartInfo = psi };
        int acked = -1;
        using var ready = new ManualResetEventSlim();
        var errors = new System.Text.StringBuilder();
        p.OutputDataReceived += (_, e) =>
        {
            if (e.Data == null)
                return;
            if (e.Data.StartsWith("READY", StringComparison.Ordinal))
                ready.Set();
            else if (e.Data.StartsWith("ACK ", StringComparison.Ordinal))
                Volatile.Write(ref acked, int.Parse(e.Data.AsSpan(4), CultureInfo.InvariantCulture));
        };
        p.ErrorDataReceived += (_, e) =>
        {
            lock (errors)
                errors.AppendLine(e.Data);
        };
        p.Start();
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        bool started = ready.Wait(TimeSpan.FromSeconds(30));
        if (!started)
        {
            p.Kill();
            p.WaitForExit();
        }
        Assert.True(started, "worker did not start: " + errors);
        Thread.Sleep(killAfterMs);
        p.Kill(); // SIGKILL on Unix
        Assert.True(p.WaitForExit(30_000), "the killed worker did not exit");
        p.WaitForExit(); // drains the output events
        return Volatile.Read(ref acked);
    }
}
