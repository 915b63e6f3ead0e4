using System.Buffers.Binary;

namespace RavenLite.Storage.Journal;

/// <summary>
/// Encodes a page as the byte runs where it differs from a base page, and applies such a diff.
/// A diff is a sequence of runs: u16 offset, u16 length, then the bytes. Runs closer than
/// <see cref="MergeGap"/> equal bytes are merged (a run header costs 4 bytes).
/// </summary>
internal static class PageDiff
{
    private const int MergeGap = 8;

    /// <summary>Writes the diff of <paramref name="page"/> against <paramref name="basePage"/> into <paramref name="output"/>; returns its length, or -1 when it would exceed <paramref name="limit"/>.</summary>
    public static int Encode(ReadOnlySpan<byte> page, ReadOnlySpan<byte> basePage, Span<byte> output, int limit)
    {
        int n = page.Length, pos = 0, written = 0;
        while (pos < n)
        {
            pos += page[pos..].CommonPrefixLength(basePage[pos..]);
            if (pos >= n)
                break;
            int start = pos, end;
            int d = pos;
            while (true)
            {
                d++;
                if (d >= n)
                {
                    end = n;
                    pos = n;
                    break;
                }
                int equal = page[d..].CommonPrefixLength(basePage[d..]);
                if (equal >= MergeGap || d + equal >= n)
                {
                    end = d;
                    pos = d + equal;
                    break;
                }
                d += equal;
            }
            int length = end - start;
            if (written + 4 + length > limit)
                return -1;
            BinaryPrimitives.WriteUInt16LittleEndian(output[written..], (ushort)start);
            BinaryPrimitives.WriteUInt16LittleEndian(output[(written + 2)..], (ushort)length);
            page.Slice(start, length).CopyTo(output[(written + 4)..]);
            written += 4 + length;
        }
        return written;
    }

    /// <summary>Applies <paramref name="diff"/> to <paramref name="page"/> (which holds the base); false when a run falls outside the page.</summary>
    public static bool Apply(ReadOnlySpan<byte> diff, Span<byte> page)
    {
        int pos = 0;
        while (pos < diff.Length)
        {
            if (pos + 4 > diff.Length)
                return false;
            int offset = BinaryPrimitives.ReadUInt16LittleEndian(diff[pos..]);
            int length = BinaryPrimitives.ReadUInt16LittleEndian(diff[(pos + 2)..]);
            pos += 4;
            if (offset + length > page.Length || pos + length > diff.Length)
                return false;
            diff.Slice(pos, length).CopyTo(page[offset..]);
            pos += length;
        }
        return true;
    }
}
