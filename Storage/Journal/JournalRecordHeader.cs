using System.Runtime.InteropServices;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Journal;

/// <summary>
/// The fixed 128-byte header of one journal record (one committed transaction), followed by
/// <see cref="CompressedSize"/> bytes: one LZ4 block holding the transaction's modified pages.
/// Format, validity rules and recovery: docs/format/journal.md.
/// </summary>
[StructLayout(LayoutKind.Explicit, Size = SizeOf)]
public struct JournalRecordHeader
{
    /// <summary>Size in bytes.</summary>
    public const int SizeOf = 128;

    /// <summary>"RVLJRNL1" little-endian.</summary>
    public const ulong MagicValue = 0x314C4E524A4C5652UL;

    /// <summary>Bytes 0–7: <see cref="MagicValue"/>.</summary>
    [FieldOffset(0)] public ulong Magic;

    /// <summary>Bytes 8–15: transaction id; consecutive records have consecutive ids.</summary>
    [FieldOffset(8)] public long TxId;

    /// <summary>Bytes 16–19: pages in the payload (sum of the entries' page counts).</summary>
    [FieldOffset(16)] public int PageCount;

    /// <summary>Bytes 20–23: number of page entries (runs) in the payload.</summary>
    [FieldOffset(20)] public int EntryCount;

    /// <summary>Bytes 24–27: LZ4 block length that follows the header.</summary>
    [FieldOffset(24)] public int CompressedSize;

    /// <summary>Bytes 28–31: payload length after decompression.</summary>
    [FieldOffset(28)] public int UncompressedSize;

    /// <summary>Bytes 32–35: <see cref="JournalRecordFlags"/>.</summary>
    [FieldOffset(32)] public JournalRecordFlags Flags;

    /// <summary>Bytes 36–39: reserved, zero.</summary>
    [FieldOffset(36)] public int Reserved;

    /// <summary>Bytes 40–47: pages in use after this transaction.</summary>
    [FieldOffset(40)] public long NextPage;

    /// <summary>Bytes 48–95: the root tree's header after this transaction.</summary>
    [FieldOffset(48)] public TreeHeader RootTree;

    /// <summary>Bytes 96–119: zero, or for a record of an encrypted environment (<see cref="JournalRecordFlags.Encrypted"/>) its payload's nonce.</summary>
    [FieldOffset(96)] public JournalNonce Nonce;

    /// <summary>Bytes 0–95: what a sealed payload is bound to.</summary>
    public const int AuthenticatedBytes = 96;

    /// <summary>Bytes 120–127: XXH64 of bytes 0–119 then the compressed payload, seeded with <see cref="TxId"/>.</summary>
    [FieldOffset(120)] public ulong Hash;
}

/// <summary>The 24 bytes of a sealed journal payload's nonce.</summary>
[System.Runtime.CompilerServices.InlineArray(Encryption.EncryptionKey.NonceSize)]
public struct JournalNonce
{
    private byte _first;
}
