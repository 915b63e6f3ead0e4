using System.IO.Hashing;

namespace RavenLite.Storage.Paging;

/// <summary>
/// The checksum every tree page and every overflow run carries in its <see cref="PageHeader.Checksum"/> (format 3):
/// XXH3-64 of the page's bytes without the checksum field — bytes 0–23, then bytes 32 to the end of the page (tree
/// pages) or to the end of the value (the first page of an overflow run covers the whole run) — seeded with the page
/// number, so a page written at the wrong place fails too. Stamped when a page is written to the data file (by the
/// flusher, and by recovery for journaled pages, which carry none), verified the first time a page is read from the
/// data file after open, and by the checker. Format: docs/format/data-file.md.
/// </summary>
internal static unsafe class PageChecksum
{
    /// <summary>Where the checksum field lies in a page's header: bytes [<see cref="FieldOffset"/>, <see cref="FieldEnd"/>).</summary>
    internal const int FieldOffset = 24, FieldEnd = 32;

    /// <summary>
    /// Bytes covered for the page at <paramref name="page"/> (its header's flags and overflow size say), or -1 when
    /// the header names a run longer than <paramref name="available"/> bytes (a damaged header).
    /// </summary>
    public static long CoveredLength(byte* page, long available)
    {
        var h = (PageHeader*)page;
        if ((h->Flags & PageFlags.Overflow) == 0)
            return StorageConstants.PageSize;
        long size = h->OverflowSize;
        return size < 0 || size > available - PageHeader.SizeOf ? -1 : PageHeader.SizeOf + size;
    }

    /// <summary>The checksum of <paramref name="length"/> covered bytes at <paramref name="page"/>, page <paramref name="pageNumber"/>.</summary>
    public static ulong Compute(byte* page, long pageNumber, long length)
    {
        ulong head = XxHash3.HashToUInt64(new ReadOnlySpan<byte>(page, FieldOffset), pageNumber);
        long rest = length - FieldEnd;
        byte* p = page + FieldEnd;
        ulong hash = head;
        // Spans are int-sized: an overflow run (≤ 256 MiB values) is hashed in chained pieces.
        while (true)
        {
            int n = (int)Math.Min(rest, 1 << 30);
            hash = XxHash3.HashToUInt64(new ReadOnlySpan<byte>(p, n), unchecked((long)hash));
            rest -= n;
            p += n;
            if (rest == 0)
                return hash;
        }
    }

    /// <summary>Writes the checksum of the page (or run) at <paramref name="page"/>, which has <paramref name="available"/> bytes.</summary>
    public static void Stamp(byte* page, long pageNumber, long available)
    {
        long length = CoveredLength(page, available);
        if (length < 0)
            throw new InvalidOperationException($"Page {pageNumber}: an overflow run of {((PageHeader*)page)->OverflowSize} bytes does not fit its {available} bytes.");
        ((PageHeader*)page)->Checksum = Compute(page, pageNumber, length);
    }

    /// <summary>Null when the page (or run) at <paramref name="page"/> matches its checksum, else what is wrong.</summary>
    public static string? Verify(byte* page, long pageNumber, long available)
    {
        long length = CoveredLength(page, available);
        if (length < 0)
            return $"its header names an overflow run of {((PageHeader*)page)->OverflowSize} bytes, past the end of the data file";
        ulong stored = ((PageHeader*)page)->Checksum, computed = Compute(page, pageNumber, length);
        return stored == computed ? null : $"checksum mismatch (stored {stored:X16}, computed {computed:X16} over {length} bytes)";
    }
}
