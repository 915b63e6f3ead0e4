using System.Globalization;
using System.Text;

namespace RavenLite.Storage.Tests;

internal static class TestData
{
    public static byte[] Key(long i) => Encoding.ASCII.GetBytes(i.ToString("0000000000000000", CultureInfo.InvariantCulture));

    public static byte[] Value(Random r, int size)
    {
        var v = new byte[size];
        r.NextBytes(v);
        return v;
    }

    public static byte[] Bytes(string s) => Encoding.UTF8.GetBytes(s);

    /// <summary>Copies a directory tree (an environment as a crash would leave it, when taken while it is open).</summary>
    public static void CopyDirectory(string from, string to)
    {
        Directory.CreateDirectory(to);
        foreach (string file in Directory.GetFiles(from))
            File.Copy(file, Path.Combine(to, Path.GetFileName(file)));
        foreach (string sub in Directory.GetDirectories(from))
            CopyDirectory(sub, Path.Combine(to, Path.GetFileName(sub)));
    }
}
