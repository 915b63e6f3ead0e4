using System.Runtime.InteropServices;
using RavenLite.Storage.Journal;

namespace RavenLite.Storage.Encryption;

/// <summary>
/// Journal records of an encrypted environment (docs/format/journal.md "Encrypted records"): the payload — the LZ4 block
/// or the stored pages, as an unencrypted record carries them — is sealed, bound to the header's bytes 0–95 (the
/// transaction, its counts and flags, the root tree); the nonce goes in bytes 96–119 and the tag after the payload.
/// The record's hash then covers the sealed bytes, so a torn tail is still told from damage without the key.
/// </summary>
internal static class JournalSealing
{
    /// <summary>Where the nonce is in the header.</summary>
    public const int NonceOffset = JournalRecordHeader.AuthenticatedBytes;

    /// <summary>
    /// Seals the payload of <paramref name="record"/> (header then payload) into <paramref name="target"/>, updating
    /// <paramref name="header"/> (flags, size, nonce); returns the sealed record (its hash not yet set).
    /// </summary>
    public static Span<byte> Seal(EncryptionKey key, scoped ref JournalRecordHeader header, ReadOnlySpan<byte> record, ref byte[] target)
    {
        var payload = record[JournalRecordHeader.SizeOf..];
        int length = JournalRecordHeader.SizeOf + payload.Length + EncryptionKey.TagSize;
        if (target.Length < length)
            target = GC.AllocateUninitializedArray<byte>(Math.Max(length, target.Length * 2));
        header.Flags |= JournalRecordFlags.Encrypted;
        header.CompressedSize = payload.Length + EncryptionKey.TagSize;
        var sealedRecord = target.AsSpan(0, length);
        MemoryMarshal.Write(sealedRecord, in header);
        Span<byte> seal = stackalloc byte[EncryptionKey.SealSize];
        key.Seal(payload, sealedRecord.Slice(JournalRecordHeader.SizeOf, payload.Length), seal, sealedRecord[..JournalRecordHeader.AuthenticatedBytes]);
        seal[..EncryptionKey.NonceSize].CopyTo(sealedRecord.Slice(NonceOffset, EncryptionKey.NonceSize));
        seal[EncryptionKey.NonceSize..].CopyTo(sealedRecord[^EncryptionKey.TagSize..]);
        header = MemoryMarshal.Read<JournalRecordHeader>(sealedRecord);
        return sealedRecord;
    }
}
