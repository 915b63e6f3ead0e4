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
    public static int Encode(ReadOnlySpan<byte> page, ReadOnlySpan<byte> basePage, Span<byte> output, int limit)
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
            BinaryPrimitives.WriteUInt16LittleEndian(output[written..], (ushort)start);
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
