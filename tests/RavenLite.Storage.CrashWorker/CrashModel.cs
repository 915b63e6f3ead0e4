using System.Globalization;
using System.Text;

namespace RavenLite.Storage.CrashWorker;

/// <summary>What transaction i of the crash worker does, so the auditor can recompute the state after any transaction.</summary>
public static class CrashModel
{
    /// <summary>Key written by transaction <paramref name="i"/>.</summary>
    public static byte[] Key(int i) => Encoding.ASCII.GetBytes(i.ToString("0000000000000000", CultureInfo.InvariantCulture));

    /// <summary>Value written by transaction <paramref name="i"/>: 50–250 bytes, every 13th 30 KB (overflow).</summary>
    public static byte[] Value(int i)
    {
        var v = new byte[i % 13 == 0 ? 30_000 : 50 + i % 200];
        new Random(i).NextBytes(v);
        return v;
    }

    /// <summary>Every 4th transaction deletes the key written 3 transactions earlier.</summary>
    public static bool DeletesAt(int i, out int victim)
    {
        victim = i - 3;
        return i % 4 == 3 && victim >= 0;
    }

    /// <summary>The key of the encrypted runs (a test's: known to the worker and its auditor alike).</summary>
    public static byte[] TestKey => [.. Enumerable.Range(1, 32).Select(b => (byte)(b * 7))];

    /// <summary>True when key <paramref name="j"/> exists after transaction <paramref name="last"/>.</summary>
    public static bool Present(int j, int last) => j <= last && !(j + 3 <= last && DeletesAt(j + 3, out _));
}
