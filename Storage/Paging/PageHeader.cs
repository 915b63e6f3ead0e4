using System.Runtime.InteropServices;

namespace RavenLite.Storage.Paging;

/// <summary>
/// The 32-byte header at offset 0 of every tree page and of the first page of an overflow run.
/// Format: docs/format/data-file.md ("Page header").
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = SizeOf)]
public struct PageHeader
{
    /// <summary>Size in bytes.</summary>
    public const int SizeOf = 32;

    /// <summary>Bytes 0–7: this page's own number (a check against misplaced pages).</summary>
    [FieldOffset(0)] public long PageNumber;

    /// <summary>Bytes 8–9: <see cref="PageFlags"/>.</summary>
    [FieldOffset(8)] public PageFlags Flags;

    /// <summary>Bytes 10–11: number of nodes (tree pages).</summary>
    [FieldOffset(10)] public ushort NumberOfEntries;

    /// <summary>Bytes 12–13: end of the node-offset array (tree pages).</summary>
    [FieldOffset(12)] public ushort Lower;

    /// <summary>Bytes 14–15: start of the node area, which grows down from the page end (tree pages).</summary>
    [FieldOffset(14)] public ushort Upper;

    /// <summary>Bytes 16–23: value length in bytes (overflow pages).</summary>
    [FieldOffset(16)] public long OverflowSize;

    /// <summary>Bytes 24–31: the page's checksum (<see cref="PageChecksum"/>; format 3, zero in format 2).</summary>
    [FieldOffset(24)] public ulong Checksum;
}
