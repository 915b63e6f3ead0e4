using System.Numerics;
using System.Runtime.InteropServices;
using System.Runtime.Intrinsics;

namespace RavenLite.Server.Indexing;

/// <summary>
/// The top-level properties of a document that an index's map reads (<c>o.Company</c>, <c>o.ShipTo.City</c>: Company
/// and ShipTo), so that a map is handed a small JSON object of those properties instead of the whole document parsed:
/// an order of 1 KB whose map reads two numbers and a string is mostly its order lines, which a structural scan
/// skips several times faster than a parser reads them into a document. The properties are copied as they are
/// (raw bytes, in document order, duplicates kept), so the map sees the same values it would see in the whole
/// document, and a property it names that the document lacks is missing from both.
/// </summary>
internal sealed class DocumentProjection
{
    private readonly byte[][] _names;

    public DocumentProjection(IEnumerable<string> names) =>
        _names = names.Distinct(StringComparer.Ordinal).Select(Encoding.UTF8.GetBytes).ToArray();

    private static readonly SearchValues<byte> StringEnd = SearchValues.Create("\"\\"u8);

    /// <summary>
    /// Writes the object of the kept properties of <paramref name="json"/> (a JSON object) to <paramref name="output"/>;
    /// false when the scan meets something it does not expect (a property name with an escape, text that is not an
    /// object): the caller then reads the whole document, as it would without a projection. The buffer is reset first.
    /// </summary>
    public bool TryProject(ReadOnlySpan<byte> json, ArrayBufferWriter<byte> output)
    {
        output.ResetWrittenCount();
        int pos = SkipSpace(json, 0);
        if (pos >= json.Length || json[pos] != (byte)'{')
            return false;
        pos++;
        Put(output, "{"u8);
        bool first = true;
        while (true)
        {
            pos = SkipSpace(json, pos);
            if (pos >= json.Length)
                return Fail(output);
            if (json[pos] == (byte)'}')
                break;
            if (json[pos] != (byte)'"')
                return Fail(output);
            int nameEnd = json[(pos + 1)..].IndexOfAny(StringEnd);
            if (nameEnd < 0 || json[pos + 1 + nameEnd] != (byte)'"')
                return Fail(output); // an escaped name: compared as text only by the parser
            var name = json.Slice(pos + 1, nameEnd);
            pos = SkipSpace(json, pos + nameEnd + 2);
            if (pos >= json.Length || json[pos] != (byte)':')
                return Fail(output);
            pos = SkipSpace(json, pos + 1);
            int valueStart = pos;
            pos = SkipValue(json, pos);
            if (pos < 0)
                return Fail(output);
            if (Kept(name))
            {
                if (!first)
                    Put(output, ","u8);
                first = false;
                Put(output, "\""u8);
                Put(output, name);
                Put(output, "\":"u8);
                Put(output, json[valueStart..pos]);
            }
            pos = SkipSpace(json, pos);
            if (pos < json.Length && json[pos] == (byte)',')
            {
                pos++;
                continue;
            }
            if (pos < json.Length && json[pos] == (byte)'}')
                break;
            return Fail(output);
        }
        Put(output, "}"u8);
        return true;
    }

    private bool Kept(ReadOnlySpan<byte> name)
    {
        foreach (var n in _names)
            if (name.SequenceEqual(n))
                return true;
        return false;
    }

    private static bool Fail(ArrayBufferWriter<byte> output)
    {
        output.ResetWrittenCount();
        return false;
    }

    private static void Put(ArrayBufferWriter<byte> output, ReadOnlySpan<byte> bytes)
    {
        bytes.CopyTo(output.GetSpan(bytes.Length));
        output.Advance(bytes.Length);
    }

    private static int SkipSpace(ReadOnlySpan<byte> json, int pos)
    {
        while (pos < json.Length && json[pos] is (byte)' ' or (byte)'\t' or (byte)'\n' or (byte)'\r')
            pos++;
        return pos;
    }

    /// <summary>The position after the string that opens at <paramref name="pos"/> (a quote), or -1.</summary>
    private static int SkipString(ReadOnlySpan<byte> json, int pos)
    {
        pos++;
        while (true)
        {
            int i = json[pos..].IndexOfAny(StringEnd);
            if (i < 0)
                return -1;
            pos += i;
            if (json[pos] == (byte)'"')
                return pos + 1;
            pos += 2; // a backslash and the character it escapes (a \u's four digits hold no quote or backslash)
            if (pos > json.Length)
                return -1;
        }
    }

    /// <summary>The position after the value that starts at <paramref name="pos"/>, or -1.</summary>
    private static int SkipValue(ReadOnlySpan<byte> json, int pos)
    {
        if (pos >= json.Length)
            return -1;
        switch (json[pos])
        {
            case (byte)'"':
                return SkipString(json, pos);
            case (byte)'{' or (byte)'[':
                return SkipContainer(json, pos);
            default:
                // A number, true, false or null: up to the next separator.
                int end = pos;
                while (end < json.Length && json[end] is not ((byte)',' or (byte)'}' or (byte)']' or (byte)' ' or (byte)'\t' or (byte)'\n' or (byte)'\r'))
                    end++;
                return end > pos ? end : -1;
        }
    }

    /// <summary>
    /// The position after the object or array that opens at <paramref name="pos"/>, or -1. Where vectors are fast, 32
    /// bytes at a time, as simdjson finds structure: masks of quotes and brackets, the bytes inside strings from the
    /// prefix XOR of the quotes (carried from block to block), and the depth moved by the brackets outside strings. A
    /// block with a backslash (an escape may hide a quote) goes byte by byte.
    /// </summary>
    private static int SkipContainer(ReadOnlySpan<byte> json, int pos)
    {
        int depth = 0;
        bool inString = false;
        int i = pos;
        if (Vector256.IsHardwareAccelerated)
        {
            ref byte start = ref MemoryMarshal.GetReference(json);
            while (i + 32 <= json.Length)
            {
                var v = Vector256.LoadUnsafe(ref start, (nuint)i);
                if (Vector256.EqualsAny(v, Vector256.Create((byte)'\\')))
                {
                    int end = Step(json, i, i + 32, ref inString, ref depth);
                    if (end >= 0)
                        return end;
                    i = -end - 1;
                    continue;
                }
                uint quotes = Vector256.Equals(v, Vector256.Create((byte)'"')).ExtractMostSignificantBits();
                uint opens = (Vector256.Equals(v, Vector256.Create((byte)'{')) | Vector256.Equals(v, Vector256.Create((byte)'['))).ExtractMostSignificantBits();
                uint closes = (Vector256.Equals(v, Vector256.Create((byte)'}')) | Vector256.Equals(v, Vector256.Create((byte)']'))).ExtractMostSignificantBits();
                // Bit k set: byte k is inside a string (its opening quote included, its closing quote not).
                uint inside = quotes;
                inside ^= inside << 1;
                inside ^= inside << 2;
                inside ^= inside << 4;
                inside ^= inside << 8;
                inside ^= inside << 16;
                if (inString)
                    inside = ~inside;
                inString = (inside & 0x8000_0000u) != 0;
                uint structure = (opens | closes) & ~inside;
                while (structure != 0)
                {
                    int bit = BitOperations.TrailingZeroCount(structure);
                    if ((opens & (1u << bit)) != 0)
                        depth++;
                    else if (--depth == 0)
                        return i + bit + 1;
                    structure &= structure - 1;
                }
                i += 32;
            }
        }
        int last = Step(json, i, json.Length, ref inString, ref depth);
        return last >= 0 ? last : -1;
    }

    /// <summary>
    /// Byte by byte from <paramref name="from"/> until <paramref name="to"/> (or past it, to finish an escape): the
    /// position after the bracket that closes the container, or -(the position reached) - 1.
    /// </summary>
    private static int Step(ReadOnlySpan<byte> json, int from, int to, ref bool inString, ref int depth)
    {
        int i = from;
        while (i < to)
        {
            byte b = json[i++];
            if (inString)
            {
                if (b == (byte)'\\')
                    i++;
                else if (b == (byte)'"')
                    inString = false;
            }
            else if (b == (byte)'"')
                inString = true;
            else if (b is (byte)'{' or (byte)'[')
                depth++;
            else if (b is (byte)'}' or (byte)']' && --depth == 0)
                return i;
        }
        return -Math.Min(i, json.Length) - 1;
    }
}
