namespace RavenLite.Server.BulkInsert;

/// <summary>
/// Follows the nesting of JSON text that arrives in pieces, without parsing it: strings (with their
/// escapes) are skipped, <c>{</c>/<c>[</c> open and <c>}</c>/<c>]</c> close. Finds where a value that
/// started at <see cref="Depth"/> 0 (an object being read) or a body at depth 1 (inside an array) is
/// closed. State carries across calls; the text is assumed well-formed (a mismatched bracket counts as
/// a close). Used by the bulk-insert reader to find an item's end and by <see cref="BodyDrainer"/>.
/// Not thread-safe.
/// </summary>
public sealed class JsonNestingScanner(int depth = 0)
{
    private static readonly SearchValues<byte> Structural = SearchValues.Create("\"{}[]"u8);
    private static readonly SearchValues<byte> StringEnd = SearchValues.Create("\"\\"u8);

    private bool _inString, _escaped;

    /// <summary>Open brackets not yet closed.</summary>
    public int Depth { get; private set; } = depth;

    /// <summary>Starts over at <paramref name="depth"/>, outside any string.</summary>
    public void Reset(int depth = 0)
    {
        Depth = depth;
        _inString = _escaped = false;
    }

    /// <summary>
    /// Scans <paramref name="span"/>; returns the index of the bracket that brings <see cref="Depth"/>
    /// back to 0, or -1 when the span ends before that (the state is kept for the next piece).
    /// </summary>
    public int FindClose(ReadOnlySpan<byte> span)
    {
        int i = 0;
        while (i < span.Length)
        {
            if (_inString)
            {
                if (_escaped)
                {
                    _escaped = false;
                    i++;
                    continue;
                }
                int j = span[i..].IndexOfAny(StringEnd);
                if (j < 0)
                    return -1;
                i += j;
                if (span[i] == (byte)'\\')
                    _escaped = true;
                else
                    _inString = false;
                i++;
                continue;
            }
            int k = span[i..].IndexOfAny(Structural);
            if (k < 0)
                return -1;
            i += k;
            switch (span[i])
            {
                case (byte)'"':
                    _inString = true;
                    break;
                case (byte)'{' or (byte)'[':
                    Depth++;
                    break;
                default:
                    if (--Depth <= 0)
                        return i;
                    break;
            }
            i++;
        }
        return -1;
    }
}
