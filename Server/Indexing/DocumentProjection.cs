using System.Buffers;
using System.Text;

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

    public DocumentProjection(IEnumerable<string> names)
    {
        _names = names.Distinct(StringComparer.Ordinal).Select(Encoding.UTF8.GetBytes).ToArray();
        Names = names.ToHashSet(StringComparer.Ordinal);
    }

    /// <summary>The property names kept.</summary>
    public IReadOnlySet<string> Names { get; }

    private static readonly SearchValues<byte> StringEnd = SearchValues.Create("\"\\"u8);

    private static readonly SearchValues<byte> Structure = SearchValues.Create("\"{}[]"u8);

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
                int depth = 0;
                while (true)
                {
                    int i = json[pos..].IndexOfAny(Structure);
                    if (i < 0)
                        return -1;
                    pos += i;
                    switch (json[pos])
                    {
                        case (byte)'"':
                            pos = SkipString(json, pos);
                            if (pos < 0)
                                return -1;
                            continue;
                        case (byte)'{' or (byte)'[':
                            depth++;
                            break;
                        default:
                            if (--depth == 0)
                                return pos + 1;
                            break;
                    }
                    pos++;
                }
            default:
                // A number, true, false or null: up to the next separator.
                int end = pos;
                while (end < json.Length && json[end] is not ((byte)',' or (byte)'}' or (byte)']' or (byte)' ' or (byte)'\t' or (byte)'\n' or (byte)'\r'))
                    end++;
                return end > pos ? end : -1;
        }
    }
}
