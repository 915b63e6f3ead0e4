using System.Buffers.Binary;
using System.Text;
using System.Text.Json;
using RavenLite.Server.Queries;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Posting keys of an index (docs/format/indexes.md): <c>field id (2, BE) · kind (1) · term · entry id (8, BE)</c>.
/// Terms: <c>S</c> lower-cased text (UTF-8, at most <see cref="MaxTermBytes"/>, 0 bytes raised to 1, then a
/// 0 separator), <c>N</c> a number as 8 order-preserving bytes, <c>B</c> a boolean (one byte),
/// <c>Z</c> null, <c>W</c> an analyzed word (Search fields), <c>E</c> "the field has a value with no
/// term of its own" (an object). "Has the field" is therefore every S, N, B, Z and E posting of it.
/// Every mapping from value to term is order-preserving (never strictly reversing), so an equality,
/// prefix or range lookup over terms yields a superset of the true matches; queries then check each
/// candidate exactly, so truncation and case folding can never lose or invent a result.
/// </summary>
internal static class IndexKeys
{
    public const byte Exists = (byte)'E', Text = (byte)'S', Number = (byte)'N', Bool = (byte)'B', Null = (byte)'Z', Word = (byte)'W';
    public const int MaxTermBytes = 256;

    public static byte[] FieldPrefix(ushort field, byte kind)
    {
        var p = new byte[3];
        BinaryPrimitives.WriteUInt16BigEndian(p, field);
        p[2] = kind;
        return p;
    }

    /// <summary>The key prefix of one term (without the entry id).</summary>
    public static byte[] TermPrefix(ushort field, byte kind, ReadOnlySpan<byte> term)
    {
        bool text = kind is Text or Word;
        var key = new byte[3 + term.Length + (text ? 1 : 0)];
        BinaryPrimitives.WriteUInt16BigEndian(key, field);
        key[2] = kind;
        term.CopyTo(key.AsSpan(3));
        return key; // a text term ends with the 0 separator (already 0 from allocation)
    }

    public static byte[] Posting(byte[] termPrefix, long entryId)
    {
        var key = new byte[termPrefix.Length + 8];
        termPrefix.CopyTo(key, 0);
        BinaryPrimitives.WriteInt64BigEndian(key.AsSpan(termPrefix.Length), entryId);
        return key;
    }

    public static long EntryIdOf(ReadOnlySpan<byte> postingKey) => BinaryPrimitives.ReadInt64BigEndian(postingKey[^8..]);

    /// <summary>The term bytes of a posting key (text terms without their separator).</summary>
    public static ReadOnlySpan<byte> TermOf(ReadOnlySpan<byte> postingKey, byte kind) =>
        postingKey[3..^(kind is Text or Word ? 9 : 8)];

    /// <summary>Lower-cased UTF-8, truncated to <see cref="MaxTermBytes"/>, 0 bytes raised to 1.</summary>
    public static byte[] TextTerm(string s, bool lower = true)
    {
        var bytes = Encoding.UTF8.GetBytes(lower ? s.ToLowerInvariant() : s);
        if (bytes.Length > MaxTermBytes)
            Array.Resize(ref bytes, MaxTermBytes);
        for (int i = 0; i < bytes.Length; i++)
            if (bytes[i] == 0)
                bytes[i] = 1;
        return bytes;
    }

    /// <summary>A double as 8 bytes whose byte order is the numeric order (-0 as 0).</summary>
    public static byte[] NumberTerm(double d)
    {
        if (d == 0)
            d = 0;
        long bits = BitConverter.DoubleToInt64Bits(d);
        bits = bits < 0 ? ~bits : bits ^ long.MinValue;
        var b = new byte[8];
        BinaryPrimitives.WriteInt64BigEndian(b, bits);
        return b;
    }

    /// <summary>The term prefixes (without entry id) one field's values produce.</summary>
    public static void TermsOf(IndexField field, JsonElement values, HashSet<byte[]> into)
    {
        bool other = false;
        foreach (var v in values.EnumerateArray())
        {
            switch (v.ValueKind)
            {
                case JsonValueKind.String:
                    string s = v.GetString()!;
                    into.Add(TermPrefix(field.Id, Text, TextTerm(s)));
                    if (field.Indexing == FieldIndexing.Search)
                        foreach (string word in JsonPaths.Analyze(s))
                            into.Add(TermPrefix(field.Id, Word, TextTerm(word)));
                    break;
                case JsonValueKind.Number:
                    into.Add(TermPrefix(field.Id, Number, NumberTerm(v.GetDouble())));
                    break;
                case JsonValueKind.True or JsonValueKind.False:
                    into.Add(TermPrefix(field.Id, Bool, [v.ValueKind == JsonValueKind.True ? (byte)1 : (byte)0]));
                    break;
                case JsonValueKind.Null:
                    into.Add(TermPrefix(field.Id, Null, []));
                    break;
                default:
                    other = true;
                    break;
            }
        }
        // Scalars are found by their own terms; an E posting marks values that have none (objects).
        if (other)
            into.Add(TermPrefix(field.Id, Exists, []));
    }
}

/// <summary>Byte-array equality for sets of keys.</summary>
internal sealed class ByteArrayComparer : IEqualityComparer<byte[]>
{
    public static readonly ByteArrayComparer Instance = new();

    public bool Equals(byte[]? x, byte[]? y) => x.AsSpan().SequenceEqual(y);

    public int GetHashCode(byte[] obj)
    {
        var h = new HashCode();
        h.AddBytes(obj);
        return h.ToHashCode();
    }
}
