using System.Buffers.Binary;
using System.Runtime.InteropServices;
using RavenLite.Storage.Journal;

namespace RavenLite.Storage.Encryption;

/// <summary>
/// Journal records of an encrypted environment (docs/format/journal.md "Encrypted records"): the payload — the LZ4 block
/// or the stored pages, as an unencrypted record carries them — is sealed in chunks of <see cref="ChunkSize"/> bytes (the
/// last shorter, possibly empty), each followed by its tag. The header's bytes 96–119 hold a random nonce; chunk i is
/// sealed with that nonce whose last eight bytes are XORed with i, bound to the header's bytes 0–95 (the transaction,
/// its counts and flags, the root tree), i, and whether it is the last. Chunks seal and open on every core, so a bulk
/// load's large record costs its cipher time once per core, not once. The record's hash then covers the sealed bytes,
/// so a torn tail is still told from damage without the key.
/// </summary>
internal static unsafe class JournalSealing
{
    /// <summary>Where the nonce is in the header.</summary>
    public const int NonceOffset = JournalRecordHeader.AuthenticatedBytes;

    /// <summary>Payload bytes per sealed chunk.</summary>
    public const int ChunkSize = 1 << 20;

    private const int StoredChunk = ChunkSize + EncryptionKey.TagSize;

    /// <summary>Chunks a payload of <paramref name="payload"/> bytes is sealed in (at least one).</summary>
    public static int Chunks(long payload) => (int)Math.Max(1, (payload + ChunkSize - 1) / ChunkSize);

    /// <summary>The payload's length from the sealed bytes' (<c>CompressedSize</c>); -1 when no payload has that sealed length.</summary>
    public static long PayloadLength(long sealedBytes)
    {
        long chunks = Math.Max(1, (sealedBytes + StoredChunk - 1) / StoredChunk);
        long payload = sealedBytes - (chunks * EncryptionKey.TagSize);
        return payload >= 0 && Chunks(payload) == chunks ? payload : -1;
    }

    /// <summary>Bytes a payload of <paramref name="payload"/> bytes takes sealed.</summary>
    public static long SealedLength(long payload) => payload + ((long)Chunks(payload) * EncryptionKey.TagSize);

    private static byte[] BoundTo(ReadOnlySpan<byte> header, int chunk, bool last)
    {
        var bound = new byte[JournalRecordHeader.AuthenticatedBytes + 5];
        header[..JournalRecordHeader.AuthenticatedBytes].CopyTo(bound);
        BinaryPrimitives.WriteInt32LittleEndian(bound.AsSpan(JournalRecordHeader.AuthenticatedBytes), chunk);
        bound[^1] = last ? (byte)1 : (byte)0;
        return bound;
    }

    private static byte[] NonceOf(ReadOnlySpan<byte> baseNonce, int chunk)
    {
        var nonce = baseNonce.ToArray();
        BinaryPrimitives.WriteUInt64LittleEndian(nonce.AsSpan(EncryptionKey.NonceSize - 8), BinaryPrimitives.ReadUInt64LittleEndian(nonce.AsSpan(EncryptionKey.NonceSize - 8)) ^ (ulong)chunk);
        return nonce;
    }

    /// <summary>
    /// Seals the payload of <paramref name="record"/> (header then payload) into <paramref name="target"/>, updating
    /// <paramref name="header"/> (flags, size, nonce); returns the sealed record (its hash not yet set).
    /// </summary>
    public static Span<byte> Seal(EncryptionKey key, scoped ref JournalRecordHeader header, ReadOnlySpan<byte> record, ref byte[] target)
    {
        int payloadLength = record.Length - JournalRecordHeader.SizeOf;
        int length = JournalRecordHeader.SizeOf + (int)SealedLength(payloadLength);
        if (target.Length < length)
            target = GC.AllocateUninitializedArray<byte>(Math.Max(length, target.Length * 2));
        header.Flags |= JournalRecordFlags.Encrypted;
        header.CompressedSize = (int)SealedLength(payloadLength);
        var sealedRecord = target.AsSpan(0, length);
        MemoryMarshal.Write(sealedRecord, in header);
        System.Security.Cryptography.RandomNumberGenerator.Fill(sealedRecord.Slice(NonceOffset, EncryptionKey.NonceSize));
        header = MemoryMarshal.Read<JournalRecordHeader>(sealedRecord);
        int chunks = Chunks(payloadLength);
        var headerBytes = sealedRecord[..JournalRecordHeader.SizeOf].ToArray();
        var baseNonce = headerBytes.AsSpan(NonceOffset, EncryptionKey.NonceSize).ToArray();
        var output = target;
        fixed (byte* source = record)
        {
            nint payload = (nint)(source + JournalRecordHeader.SizeOf); // pinned for the (synchronous) loop below
            void SealChunk(int i)
            {
                int from = i * ChunkSize, n = Math.Min(ChunkSize, payloadLength - from);
                int at = JournalRecordHeader.SizeOf + (i * StoredChunk);
                key.Seal(new ReadOnlySpan<byte>((byte*)payload + from, n), output.AsSpan(at, n), output.AsSpan(at + n, EncryptionKey.TagSize), NonceOf(baseNonce, i),
                    BoundTo(headerBytes, i, i == chunks - 1));
            }
            if (chunks == 1)
                SealChunk(0);
            else
                Parallel.For(0, chunks, SealChunk);
        }
        return sealedRecord;
    }

    /// <summary>Opens a sealed payload (<paramref name="sealedBytes"/>, after <paramref name="header"/>'s bytes) into <paramref name="payload"/>; false when a chunk does not authenticate.</summary>
    public static bool Open(EncryptionKey key, ReadOnlySpan<byte> header, ReadOnlySpan<byte> sealedBytes, byte[] payload)
    {
        long payloadLength = PayloadLength(sealedBytes.Length);
        if (payloadLength < 0 || payloadLength > payload.Length)
            return false;
        int chunks = Chunks(payloadLength);
        var headerBytes = header[..JournalRecordHeader.SizeOf].ToArray();
        var baseNonce = headerBytes.AsSpan(NonceOffset, EncryptionKey.NonceSize).ToArray();
        var input = sealedBytes.ToArray();
        int failed = 0;
        void OpenChunk(int i)
        {
            int from = i * ChunkSize, n = (int)Math.Min(ChunkSize, payloadLength - from);
            int at = i * StoredChunk;
            if (!key.Open(input.AsSpan(at, n), input.AsSpan(at + n, EncryptionKey.TagSize), NonceOf(baseNonce, i), payload.AsSpan(from, n), BoundTo(headerBytes, i, i == chunks - 1)))
                Interlocked.Exchange(ref failed, 1);
        }
        if (chunks == 1)
            OpenChunk(0);
        else
            Parallel.For(0, chunks, OpenChunk);
        return failed == 0;
    }
}
