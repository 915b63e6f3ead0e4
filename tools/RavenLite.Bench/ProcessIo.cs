using System.Globalization;

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
}
