using System.Buffers.Binary;
using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace RavenLite.Storage.Journal;

/// <summary>
/// Encodes a page as the byte runs where it differs from a base page, and applies such a diff.
/// A diff is a sequence of runs: u16 offset, u16 length, then the bytes. Runs closer than
/// <see cref="MergeGap"/> equal bytes are merged (a run header costs 4 bytes). The encoder compares
/// 8 bytes per step inside a differing run (an insert shifts a leaf's slot array, so a run can span
/// hundreds of bytes) and stops as soon as the diff would exceed its limit.
/// </summary>
internal static class PageDiff
{
    private const int MergeGap = 8;

    /// <summary>Writes the diff of <paramref name="page"/> against <paramref name="basePage"/> into <paramref name="output"/>; returns its length, or -1 when it would exceed <paramref name="limit"/>.</summary>
    public static int Encode(ReadOnlySpan<byte> page, ReadOnlySpan<byte> basePage, Span<byte> output, int limit) =>
        EncodeRange(page, basePage, output, limit, 0);

    /// <summary>
    /// The diff of a tree page against its base tree page, where only the used bytes of each mean something: the
    /// header and offset array [0, lower) and the node area [upper, end); the free gap between them may hold anything
    /// (a copy zeroes it, a removal leaves old bytes there), and recovery's copy of the base may hold other bytes in its
    /// gap than the base in memory did. So the page's used bytes are journaled where they differ from the base's used
    /// bytes, and always where they lie in the base's gap; the page's own gap is not journaled. Applied to any copy of
    /// the base that agrees with it on the base's used bytes, the diff gives a page that agrees with this one on its
    /// used bytes. Returns the length, or -1 when it would exceed <paramref name="limit"/>.
    /// </summary>
    public static int EncodeUsed(ReadOnlySpan<byte> page, int lower, int upper, ReadOnlySpan<byte> basePage, int baseLower, int baseUpper, Span<byte> output, int limit)
    {
        int n = page.Length;
        if (basePage.Length < n)
            throw new ArgumentException("The base page is shorter than the page.", nameof(basePage));
        if (lower < 0 || upper < lower || upper > n || baseLower < 0 || baseUpper < baseLower || baseUpper > n)
            throw new ArgumentOutOfRangeException(nameof(upper), $"[{lower}, {upper}) and [{baseLower}, {baseUpper}) are not gaps of a {n}-byte page.");
        int written = 0;
        // The used ranges of the page, each split where it enters and leaves the base's gap, in offset order.
        foreach (var (from, to) in (ReadOnlySpan<(int, int)>)[(0, lower), (upper, n)])
        {
            int pos = from;
            while (pos < to)
            {
                bool inBaseGap = pos >= baseLower && pos < baseUpper;
                int end = inBaseGap ? Math.Min(to, baseUpper) : pos < baseLower ? Math.Min(to, baseLower) : to;
                int w;
                if (inBaseGap)
                {
                    // Unknown in the base: the bytes as they are, in runs a u16 length can carry.
                    w = 0;
                    for (int s = pos; s < end; s += ushort.MaxValue)
                    {
                        int len = Math.Min(ushort.MaxValue, end - s);
                        if (written + w + 4 + len > limit)
                            return -1;
                        BinaryPrimitives.WriteUInt16LittleEndian(output[(written + w)..], (ushort)s);
                        BinaryPrimitives.WriteUInt16LittleEndian(output[(written + w + 2)..], (ushort)len);
                        page.Slice(s, len).CopyTo(output[(written + w + 4)..]);
                        w += 4 + len;
                    }
                }
                else
                {
                    w = EncodeRange(page[pos..end], basePage[pos..end], output[written..], limit - written, pos);
                    if (w < 0)
                        return -1;
                }
                written += w;
                pos = end;
            }
        }
        return written;
    }

    /// <summary>The diff of <paramref name="page"/>, a range of a page starting at <paramref name="origin"/>, against the same range of the base.</summary>
    private static int EncodeRange(ReadOnlySpan<byte> page, ReadOnlySpan<byte> basePage, Span<byte> output, int limit, int origin)
    {
        int n = page.Length, pos = 0, written = 0;
        if (basePage.Length < n)
            throw new ArgumentException("The base page is shorter than the page.", nameof(basePage));
        while (pos < n)
        {
            pos += page[pos..].CommonPrefixLength(basePage[pos..]);
            if (pos >= n)
                break;
            int start = pos;
            int end = RunEnd(page, basePage, start, limit - written - 4, out pos);
            if (end < 0)
                return -1;
            int length = end - start;
            if (written + 4 + length > limit)
                return -1;
            BinaryPrimitives.WriteUInt16LittleEndian(output[written..], (ushort)(origin + start));
            BinaryPrimitives.WriteUInt16LittleEndian(output[(written + 2)..], (ushort)length);
            page.Slice(start, length).CopyTo(output[(written + 4)..]);
            written += 4 + length;
        }
        return written;
    }

    /// <summary>
    /// The end of the differing run that starts at <paramref name="start"/>: the first position after it
    /// where <see cref="MergeGap"/> bytes are equal, or where the rest of the page is equal (then
    /// <paramref name="next"/> is where comparing resumes). -1 as soon as the run is known to be longer
    /// than <paramref name="budget"/>. Compares 8 bytes at a time: when the 8 bytes at d differ and the
    /// last differing one is at d + k, no equal 8-byte window starts at d..d + k, so the scan moves to d + k + 1.
    /// </summary>
    private static int RunEnd(ReadOnlySpan<byte> page, ReadOnlySpan<byte> basePage, int start, int budget, out int next)
    {
        int n = page.Length, d = start + 1;
        ref byte p = ref MemoryMarshal.GetReference(page);
        ref byte q = ref MemoryMarshal.GetReference(basePage);
        while (d + MergeGap <= n)
        {
            if (d - start > budget)
            {
                next = n;
                return -1;
            }
            ulong x = Unsafe.ReadUnaligned<ulong>(ref Unsafe.Add(ref p, d)) ^ Unsafe.ReadUnaligned<ulong>(ref Unsafe.Add(ref q, d));
            if (x == 0)
            {
                next = d + MergeGap + page[(d + MergeGap)..].CommonPrefixLength(basePage[(d + MergeGap)..]);
                return d;
            }
            d += BitConverter.IsLittleEndian ? 8 - (BitOperations.LeadingZeroCount(x) >> 3) : 8 - (BitOperations.TrailingZeroCount(x) >> 3);
        }
        // Fewer than MergeGap bytes left: the run ends only where the rest of the page is equal.
        while (d < n)
        {
            int equal = page[d..].CommonPrefixLength(basePage[d..]);
            if (d + equal >= n)
            {
                next = n;
                return d;
            }
            d += equal + 1;
        }
        next = n;
        return n;
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
