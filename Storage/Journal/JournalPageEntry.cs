using System.Runtime.InteropServices;

namespace RavenLite.Storage.Journal;

/// <summary>
/// Header of one entry inside a decompressed record payload (docs/format/journal.md, "Payload").
/// Either full pages (<see cref="DiffSize"/> = 0: <c>PageCount × PageSize</c> bytes follow) or one
/// page given as a diff against the committed content of <see cref="BasePage"/> (<see cref="DiffSize"/> bytes of runs follow).
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = SizeOf)]
public struct JournalPageEntry
{
    /// <summary>Size in bytes.</summary>
    public const int SizeOf = 24;

    /// <summary>Bytes 0–7: first page number of the run.</summary>
    [FieldOffset(0)] public long PageNumber;

    /// <summary>Bytes 8–11: pages in the run (1 for a diff).</summary>
    [FieldOffset(8)] public int PageCount;

    /// <summary>Bytes 12–15: 0 for full pages, else the length of the diff that follows.</summary>
    [FieldOffset(12)] public int DiffSize;

    /// <summary>Bytes 16–23: for a diff, the page (as of the previous transaction) the diff applies to; else 0.</summary>
    [FieldOffset(16)] public long BasePage;
}
