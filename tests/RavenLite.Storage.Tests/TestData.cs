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
}
