using System.IO.Hashing;

namespace RavenLite.Server.Indexing.Scripting;

/// <summary>
/// Values made from short UTF-8 texts, shared by their bytes: the property names and short strings of a collection's
/// documents repeat, and looking them up by the bytes skips decoding them to UTF-16 and hashing the characters. A fixed
/// table (two slots per hash); a text whose slots are taken is made anew each time rather than evicting one.
/// </summary>
internal sealed class Utf8Intern<T>(Func<string, T> make)
    where T : class
{
    private const int Slots = 4096; // a power of two
    private readonly byte[]?[] _keys = new byte[Slots][];
    private readonly T[] _values = new T[Slots];

    /// <summary>The value for <paramref name="utf8"/> (valid UTF-8, as a JSON reader hands it over).</summary>
    public T Get(ReadOnlySpan<byte> utf8)
    {
        int slot = (int)XxHash3.HashToUInt64(utf8) & (Slots - 1);
        for (int probe = 0; probe < 2; probe++, slot = (slot + 1) & (Slots - 1))
        {
            var key = _keys[slot];
            if (key == null)
            {
                var made = make(Encoding.UTF8.GetString(utf8));
                _values[slot] = made;
                _keys[slot] = utf8.ToArray();
                return made;
            }
            if (utf8.SequenceEqual(key))
                return _values[slot];
        }
        return make(Encoding.UTF8.GetString(utf8));
    }
}
