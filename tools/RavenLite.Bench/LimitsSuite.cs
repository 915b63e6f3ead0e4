using System.Diagnostics;
using System.Runtime.InteropServices;

namespace RavenLite.Bench;

/// <summary>
/// The machine's own ceilings, measured in the same run (docs/benchmarks.md): sequential
/// O_DIRECT write MB/s, fdatasync'ed 4 KB appends per second, memory copy GB/s.
/// </summary>
internal sealed class LimitsSuite(bool quick, string workDir)
{
    private const int OWronly = 0x1, OCreat = 0x40, ODirect = 0x4000;

    public IEnumerable<BenchResult> Run()
    {
        yield return DirectWrite();
        yield return BufferedWrite();
        yield return SyncedAppends();
        yield return SyncedOverwrites();
        yield return SyncedOverwritesWithCpu();
        yield return MemoryCopy();
    }

    internal BenchResult DirectWrite()
    {
        string path = Path.Combine(workDir, "limits-direct");
        const int block = 1 << 20;
        long total = quick ? 256L << 20 : 1L << 30;
        IntPtr raw = Marshal.AllocHGlobal(block + 4096);
        IntPtr aligned = (raw + 4095) & ~(nint)4095;
        Marshal.Copy(new byte[block], 0, aligned, block);
        int fd = open(path, OWronly | OCreat | ODirect, 420);
        if (fd < 0)
            throw new IOException($"open(O_DIRECT) failed for {path}: errno {Marshal.GetLastPInvokeError()}");
        var sw = Stopwatch.StartNew();
        for (long off = 0; off < total; off += block)
            if (pwrite(fd, aligned, block, off) != block)
                throw new IOException($"pwrite(O_DIRECT) failed: errno {Marshal.GetLastPInvokeError()}");
        _ = fdatasync(fd);
        sw.Stop();
        _ = close(fd);
        Marshal.FreeHGlobal(raw);
        File.Delete(path);
        return Row("seq-write-direct-mb", total / 1048576, sw.Elapsed.TotalSeconds);
    }

    /// <summary>
    /// A file written through the page cache in 4 MiB writes, then fsync'ed (256 MiB, 64 with --quick): the ceiling of
    /// anything that stores large content with ordinary buffered writes (the data file's flush does).
    /// </summary>
    internal BenchResult BufferedWrite()
    {
        string path = Path.Combine(workDir, "limits-buffered");
        const int block = 4 << 20;
        long total = quick ? 64L << 20 : 256L << 20;
        var data = new byte[block];
        new Random(3).NextBytes(data);
        var sw = Stopwatch.StartNew();
        using (var fs = new FileStream(path, FileMode.Create, FileAccess.Write, FileShare.None, 1 << 20))
        {
            for (long off = 0; off < total; off += block)
                fs.Write(data);
            fs.Flush(flushToDisk: true);
        }
        sw.Stop();
        File.Delete(path);
        return Row("seq-write-buffered-mb", total / 1048576, sw.Elapsed.TotalSeconds);
    }

    /// <summary>fdatasync'ed 4 KB appends: each sync also commits the file's growth.</summary>
    private BenchResult SyncedAppends() => SyncedWrites("fdatasync-4k-append", 4096, preallocate: false);

    /// <summary>
    /// fdatasync after each 600-byte write into a preallocated, zero-initialized file: exactly a small
    /// journal commit, so the ceiling for one-commit-per-fsync workloads such as fill-sync.
    /// </summary>
    private BenchResult SyncedOverwrites() => SyncedWrites("fdatasync-600b-overwrite", 600, preallocate: true);

    /// <summary>
    /// The shape of one fill-sync commit as profiled in the engine: a 326-byte record (the measured
    /// journal bytes per one-put transaction) and 20 µs of CPU between fsyncs (the measured put +
    /// record build + publish time). The ceiling for fill-sync once the engine's CPU is counted.
    /// </summary>
    private BenchResult SyncedOverwritesWithCpu() => SyncedWrites("fdatasync-326b-overwrite-20us-cpu", 326, preallocate: true, cpuMicroseconds: 20);

    /// <summary>Writes <paramref name="size"/>-byte records back to back, fdatasync after each; returns syncs per second.</summary>
    private BenchResult SyncedWrites(string workload, int size, bool preallocate, int cpuMicroseconds = 0)
    {
        string path = Path.Combine(workDir, "limits-" + workload);
        int count = quick ? 1000 : 5000;
        var record = new byte[size];
        using var handle = File.OpenHandle(path, FileMode.Create, FileAccess.ReadWrite);
        int fd = (int)handle.DangerousGetHandle();
        if (preallocate)
        {
            var zeros = new byte[1 << 20];
            for (long off = 0; off < (long)count * size + zeros.Length; off += zeros.Length)
                RandomAccess.Write(handle, zeros, off);
            _ = fdatasync(fd);
        }
        var sw = Stopwatch.StartNew();
        long spinTicks = cpuMicroseconds * Stopwatch.Frequency / 1_000_000;
        for (int i = 0; i < count; i++)
        {
            long spinUntil = Stopwatch.GetTimestamp() + spinTicks;
            while (Stopwatch.GetTimestamp() < spinUntil)
                Thread.SpinWait(1);
            RandomAccess.Write(handle, record, (long)i * size);
            if (fdatasync(fd) != 0)
                throw new IOException("fdatasync failed");
        }
        sw.Stop();
        handle.Dispose();
        File.Delete(path);
        return Row(workload, count, sw.Elapsed.TotalSeconds);
    }

    private BenchResult MemoryCopy()
    {
        var a = new byte[256 << 20];
        var b = new byte[256 << 20];
        new Random(1).NextBytes(a);
        int rounds = quick ? 4 : 16;
        var sw = Stopwatch.StartNew();
        for (int i = 0; i < rounds; i++)
            Buffer.BlockCopy(a, 0, b, 0, a.Length);
        sw.Stop();
        return Row("memcpy-gb", rounds * 256.0 / 1024, sw.Elapsed.TotalSeconds);
    }

    private static BenchResult Row(string workload, double ops, double seconds) =>
        new("limits", workload, "disk", "-", (long)ops, seconds, ops / seconds, null, null, null, null, null, null, null, Environment.WorkingSet);

#pragma warning disable SYSLIB1054 // DllImport keeps this project free of unsafe code (CONVENTIONS §3)
    [DllImport("libc", SetLastError = true, BestFitMapping = false, ThrowOnUnmappableChar = true)] private static extern int open([MarshalAs(UnmanagedType.LPUTF8Str)] string path, int flags, int mode);
    [DllImport("libc", SetLastError = true)] private static extern nint pwrite(int fd, IntPtr buf, nint count, long offset);
    [DllImport("libc", SetLastError = true)] private static extern int fdatasync(int fd);
    [DllImport("libc", SetLastError = true)] private static extern int close(int fd);
#pragma warning restore SYSLIB1054
}
