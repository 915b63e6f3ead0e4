using System.Runtime.InteropServices;

namespace RavenLite.Storage.Trees;

/// <summary>
/// The 8-byte header of a node inside a tree page, followed by the key bytes and then the value
/// (Data), an overflow page number (Overflow) or a child page number (Branch).
/// Format: docs/format/data-file.md ("Nodes").
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = SizeOf)]
public struct NodeHeader
{
    /// <summary>Size in bytes.</summary>
    public const int SizeOf = 8;

    /// <summary>Bytes 0–1: key length.</summary>
    [FieldOffset(0)] public ushort KeySize;

    /// <summary>Byte 2: <see cref="NodeFlags"/>.</summary>
    [FieldOffset(2)] public NodeFlags Flags;

    /// <summary>Byte 3: reserved, zero.</summary>
    [FieldOffset(3)] public byte Reserved;

    /// <summary>Bytes 4–7: value length (Data, Overflow); 8 for Branch.</summary>
    [FieldOffset(4)] public int DataSize;
}
