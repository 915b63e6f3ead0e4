namespace RavenLite.Storage.Trees;

/// <summary>Node kind, persisted in <see cref="NodeHeader.Flags"/> (values frozen by FormatTests).</summary>
public enum NodeFlags : byte
{
    /// <summary>Leaf node whose value follows the key.</summary>
    Data = 0,
    /// <summary>Leaf node whose value lives in an overflow run; an 8-byte page number follows the key.</summary>
    Overflow = 1,
    /// <summary>Branch node; an 8-byte child page number follows the key.</summary>
    Branch = 2,
}
