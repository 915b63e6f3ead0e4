using System.Runtime.InteropServices;

namespace RavenLite.Storage.Trees;

/// <summary>
/// A tree's root and statistics: the value stored under the tree's name in the root tree, and the
/// root tree's own header in the file header and each journal record. 48 bytes.
/// Format: docs/format/data-file.md ("Tree header").
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = SizeOf)]
public struct TreeHeader
{
    /// <summary>Size in bytes.</summary>
    public const int SizeOf = 48;

    /// <summary>Bytes 0–7: root page number; 0 for an empty tree.</summary>
    [FieldOffset(0)] public long RootPage;

    /// <summary>Bytes 8–15: number of entries.</summary>
    [FieldOffset(8)] public long EntryCount;

    /// <summary>Bytes 16–23: branch pages.</summary>
    [FieldOffset(16)] public long BranchPages;

    /// <summary>Bytes 24–31: leaf pages.</summary>
    [FieldOffset(24)] public long LeafPages;

    /// <summary>Bytes 32–39: overflow pages (all pages of all runs).</summary>
    [FieldOffset(32)] public long OverflowPages;

    /// <summary>Bytes 40–43: depth (0 empty, 1 a single leaf).</summary>
    [FieldOffset(40)] public int Depth;

    /// <summary>Bytes 44–47: reserved, zero.</summary>
    [FieldOffset(44)] public int Reserved;
}
