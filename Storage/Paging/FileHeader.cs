using System.Runtime.InteropServices;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Paging;

/// <summary>
/// One copy of the environment header (file <c>headers</c>, two 4 KB slots written alternately).
/// Records the last transaction whose pages are synced into the data file and where the journal
/// continues. Format and choice of copy: docs/format/data-file.md ("Header file").
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = SizeOf)]
public struct FileHeader
{
    /// <summary>Size in bytes.</summary>
    public const int SizeOf = 128;

    /// <summary>"RVLHEADR" little-endian.</summary>
    public const ulong MagicValue = 0x5244414548_4C5652UL;

    /// <summary>Bytes 0–7: <see cref="MagicValue"/>.</summary>
    [FieldOffset(0)] public ulong Magic;

    /// <summary>Bytes 8–11: format version.</summary>
    [FieldOffset(8)] public int FormatVersion;

    /// <summary>Bytes 12–15: page size.</summary>
    [FieldOffset(12)] public int PageSize;

    /// <summary>Bytes 16–23: write sequence; the valid copy with the higher one wins.</summary>
    [FieldOffset(16)] public long Sequence;

    /// <summary>Bytes 24–31: last transaction fully synced into the data file.</summary>
    [FieldOffset(24)] public long LastSyncedTxId;

    /// <summary>Bytes 32–39: number of pages in use (next page to allocate at the file end) at that transaction.</summary>
    [FieldOffset(32)] public long NextPage;

    /// <summary>Bytes 40–47: journal file number holding the record after <see cref="LastSyncedTxId"/>.</summary>
    [FieldOffset(40)] public long JournalFileNumber;

    /// <summary>Bytes 48–55: byte offset of that record in that file.</summary>
    [FieldOffset(48)] public long JournalOffset;

    /// <summary>Bytes 56–103: the root tree's header at <see cref="LastSyncedTxId"/>.</summary>
    [FieldOffset(56)] public TreeHeader RootTree;

    /// <summary>
    /// Bytes 104–119: zero for an unencrypted environment; for an encrypted one, its key's check value
    /// (<see cref="Encryption.EncryptionKey.Check"/>), which tells at open whether the key given is its key.
    /// </summary>
    [FieldOffset(104)] public KeyCheckValue KeyCheck;

    /// <summary>Bytes 120–127: XXH64 of bytes 0–119, seed 0.</summary>
    [FieldOffset(120)] public ulong Hash;
}

/// <summary>The 16 bytes of an encryption key's check value in a header (all zero: not encrypted).</summary>
[System.Runtime.CompilerServices.InlineArray(16)]
public struct KeyCheckValue
{
    private byte _first;

    /// <summary>True when every byte is zero (an unencrypted environment).</summary>
    public readonly bool IsEmpty => ((ReadOnlySpan<byte>)this).IndexOfAnyExcept((byte)0) < 0;
}
