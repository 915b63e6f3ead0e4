using System.Runtime.InteropServices;

namespace RavenLite.Storage.Journal;

/// <summary>Header of one entry inside a decompressed record payload: a run of pages to place at <see cref="PageNumber"/>.</summary>
[StructLayout(LayoutKind.Explicit, Size = SizeOf)]
public struct JournalPageEntry
{
    /// <summary>Size in bytes.</summary>
    public const int SizeOf = 16;

    /// <summary>Bytes 0–7: first page number of the run.</summary>
    [FieldOffset(0)] public long PageNumber;

    /// <summary>Bytes 8–11: pages in the run; <c>PageCount × PageSize</c> bytes follow.</summary>
    [FieldOffset(8)] public int PageCount;

    /// <summary>Bytes 12–15: reserved, zero.</summary>
    [FieldOffset(12)] public int Reserved;
}
