using System.Globalization;
using System.Runtime.InteropServices;

namespace RavenLite.Bench;

/// <summary>Bytes this process caused to be written to storage (/proc/self/io write_bytes).</summary>
internal static class ProcessIo
{
    public static long WriteBytes()
    {
        foreach (string line in File.ReadLines("/proc/self/io"))
            if (line.StartsWith("write_bytes:", StringComparison.Ordinal))
                return long.Parse(line.AsSpan(12).Trim(), CultureInfo.InvariantCulture);
        return 0;
    }

    /// <summary>
    /// Lets the device settle between timed runs: sync(2) the page cache, then a short pause. The previous
    /// run's cleanup (deleting hundreds of MB on a file system mounted with `discard`, the other engine's
    /// writeback) otherwise lands on whichever engine runs next.
    /// </summary>
    public static void Settle()
    {
        sync();
        Thread.Sleep(500);
    }

#pragma warning disable SYSLIB1054 // DllImport keeps this project free of unsafe code (CONVENTIONS §3)
    [DllImport("libc")]
    private static extern void sync();
#pragma warning restore SYSLIB1054
}
