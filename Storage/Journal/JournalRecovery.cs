using System.Buffers.Binary;
using System.Runtime.InteropServices;
using RavenLite.Storage.Paging;
using RavenLite.Storage.Platform;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Journal;

/// <summary>
/// Replays the journal after the last synced transaction (docs/format/journal.md, "Recovery").
/// Invariants it enforces:
/// 1. Records are applied in transaction-id order starting at LastSyncedTxId + 1, with no gap.
/// 2. A record is applied only after every declared length is bounded and its hash, seeded with
///    the expected transaction id, matches (so a stale record in a recycled file never applies).
/// 3. The first record that fails ends the log (a torn tail, never acknowledged) unless a valid
///    record with a later id follows anywhere after it: that is corruption and opening refuses.
/// 4. Journal files from the header's file onward are numbered without gaps.
/// </summary>
internal static class JournalRecovery
{
    /// <summary>Outcome of a replay.</summary>
    internal sealed record Result(long LastTxId, long NextPage, TreeHeader RootTree, long EndFile, long EndOffset, int RecordsReplayed, string? TailNote);

    /// <summary>
    /// Replays records after <paramref name="header"/> from the journal files in <paramref name="dir"/> of
    /// <paramref name="fs"/>, handing each page run to <paramref name="target"/>; with <paramref name="key"/>, the
    /// environment's when it is encrypted (its records' payloads are sealed).
    /// </summary>
    public static Result Run(IStorageFileSystem fs, string dir, FileHeader header, IRecoveryTarget target, Encryption.EncryptionKey? key = null)
    {
        var numbers = fs.ListFiles(dir)
            .Select(n => JournalFileNames.TryParse(n, out long x) ? x : 0)
            .Where(x => x >= header.JournalFileNumber)
            .OrderBy(x => x)
            .ToList();
        for (int i = 0; i < numbers.Count; i++)
        {
            long expectedNumber = header.JournalFileNumber + i;
            if (numbers[i] != expectedNumber)
                throw new StorageCorruptionException(
                    $"Journal file '{JournalFileNames.For(dir, expectedNumber)}' is missing: the header continues the journal in file {header.JournalFileNumber} at offset {header.JournalOffset}, and file {numbers[i]} exists after the gap.");
        }

        long expected = header.LastSyncedTxId + 1;
        long nextPage = header.NextPage;
        var root = header.RootTree;
        long fileNo = header.JournalFileNumber, offset = header.JournalOffset;
        int replayed = 0;
        int index = 0;
        byte[] payload = [];
        byte[]? data = numbers.Count > 0 ? ReadFile(fs, dir, numbers[0]) : null;
        string? tailNote = null;

        while (data != null)
        {
            var status = TryRead(data, offset, expected, out var rh, ref payload, out string why, key);
            if (status)
            {
                ApplyPayload(payload.AsSpan(0, rh.UncompressedSize), rh, target, JournalFileNames.For(dir, fileNo), offset);
                expected++;
                nextPage = rh.NextPage;
                root = rh.RootTree;
                offset += JournalRecordHeader.SizeOf + rh.CompressedSize;
                replayed++;
                continue;
            }
            // End of this file's sequence: continue in the next file only if it starts with the expected record.
            if (index + 1 < numbers.Count)
            {
                var next = ReadFile(fs, dir, numbers[index + 1]);
                if (TryRead(next, 0, expected, out _, ref payload, out _, key))
                {
                    index++;
                    fileNo = numbers[index];
                    offset = 0;
                    data = next;
                    continue;
                }
            }
            tailNote = why;
            break;
        }

        // Nothing valid and later may follow the end of the log.
        for (int i = Math.Max(index, 0); i < numbers.Count; i++)
        {
            var bytes = i == index && data != null ? data : ReadFile(fs, dir, numbers[i]);
            long from = i == index ? offset + 1 : 0;
            if (FindLaterRecord(bytes, from, expected, out long at, out long tx, key))
                throw new StorageCorruptionException(
                    $"Journal corruption: the record expected for transaction {expected} at '{JournalFileNames.For(dir, fileNo)}' offset {offset} is invalid ({tailNote}), " +
                    $"but a valid record for transaction {tx} follows at '{JournalFileNames.For(dir, numbers[i])}' offset {at}.");
        }
        return new Result(expected - 1, nextPage, root, fileNo, offset, replayed, tailNote);
    }

    private static byte[] ReadFile(IStorageFileSystem fs, string dir, long number)
    {
        using var f = fs.OpenFile(JournalFileNames.For(dir, number), create: false);
        var bytes = new byte[f.Length];
        int n = f.Read(0, bytes);
        return n == bytes.Length ? bytes : bytes[..n];
    }

    /// <summary>Validates and decompresses the record at <paramref name="offset"/> as transaction <paramref name="expectedTx"/>.</summary>
    internal static bool TryRead(byte[] file, long offset, long expectedTx, out JournalRecordHeader header, ref byte[] payload, out string why,
        Encryption.EncryptionKey? key = null)
    {
        header = default;
        if (offset + JournalRecordHeader.SizeOf > file.Length)
        {
            why = "end of journal";
            return false;
        }
        var span = file.AsSpan((int)offset);
        header = MemoryMarshal.Read<JournalRecordHeader>(span);
        if (header.Magic != JournalRecordHeader.MagicValue)
        {
            why = span[..JournalRecordHeader.SizeOf].ContainsAnyExcept((byte)0) ? "bad magic" : "end of journal";
            return false;
        }
        if (!LengthsValid(header, file.Length - offset, out why))
            return false;
        var body = span.Slice(JournalRecordHeader.SizeOf, header.CompressedSize);
        if (ComputeHash(span[..JournalRecordHeader.SizeOf], body, (ulong)expectedTx) != header.Hash || header.TxId != expectedTx)
        {
            why = header.TxId != expectedTx ? $"record for transaction {header.TxId} where {expectedTx} was expected" : "checksum mismatch";
            return false;
        }
        if (payload.Length < header.UncompressedSize)
            payload = new byte[Math.Max(header.UncompressedSize, payload.Length * 2)];
        if ((header.Flags & JournalRecordFlags.Encrypted) != 0)
        {
            if (key == null)
            {
                why = "the record is encrypted and no key was given";
                return false;
            }
            var opened = new byte[Math.Max(0, Encryption.JournalSealing.PayloadLength(body.Length))];
            if (!Encryption.JournalSealing.Open(key, span, body, opened))
            {
                why = "the sealed payload does not authenticate";
                return false;
            }
            body = opened;
        }
        if ((header.Flags & JournalRecordFlags.Stored) != 0)
            body.CopyTo(payload);
        else if (Lz4.Decompress(body, payload.AsSpan(0, header.UncompressedSize)) != header.UncompressedSize)
        {
            why = "LZ4 payload does not decompress to its declared size";
            return false;
        }
        why = "";
        return true;
    }

    private static bool LengthsValid(in JournalRecordHeader h, long available, out string why)
    {
        why = "";
        if (h.PageCount < 0 || h.EntryCount < 0 || h.EntryCount > h.PageCount || h.PageCount > Lz4.MaxInputSize / StorageConstants.PageSize)
            why = $"page count {h.PageCount} / entry count {h.EntryCount} out of range";
        else if (h.UncompressedSize < (long)h.EntryCount * JournalPageEntry.SizeOf
            || h.UncompressedSize > (long)h.EntryCount * JournalPageEntry.SizeOf + (long)h.PageCount * StorageConstants.PageSize)
            why = $"uncompressed size {h.UncompressedSize} does not fit {h.EntryCount} entries of {h.PageCount} pages";
        else if (h.UncompressedSize > Lz4.MaxInputSize)
            why = $"uncompressed size {h.UncompressedSize} exceeds the LZ4 block limit";
        else if ((h.Flags & ~(JournalRecordFlags.Stored | JournalRecordFlags.Encrypted)) != 0)
            why = $"unknown flags {(uint)h.Flags}";
        else if (PayloadSize(h) is var payload && (payload < 0 || payload > Lz4.CompressBound(h.UncompressedSize)
            || ((h.Flags & JournalRecordFlags.Stored) != 0 && payload != h.UncompressedSize)))
            why = $"compressed size {h.CompressedSize} out of range";
        else if (JournalRecordHeader.SizeOf + (long)h.CompressedSize > available)
            why = $"record of {JournalRecordHeader.SizeOf + h.CompressedSize} bytes runs past the end of the file";
        else if (h.TxId < 1 || h.NextPage < 1)
            why = "transaction id or page count out of range";
        return why.Length == 0;
    }

    /// <summary>The LZ4 block's (or stored payload's) length: the bytes after the header, less a sealed payload's tag.</summary>
    private static long PayloadSize(in JournalRecordHeader h) =>
        (h.Flags & JournalRecordFlags.Encrypted) != 0 ? Encryption.JournalSealing.PayloadLength(h.CompressedSize) : h.CompressedSize;

    /// <summary>XXH64 over the header's first 120 bytes and the compressed payload, seeded with the transaction id.</summary>
    internal static ulong ComputeHash(ReadOnlySpan<byte> header, ReadOnlySpan<byte> body, ulong seed)
    {
        var state = new System.IO.Hashing.XxHash64(unchecked((long)seed));
        state.Append(header[..(JournalRecordHeader.SizeOf - 8)]);
        state.Append(body);
        return state.GetCurrentHashAsUInt64();
    }

    private static void ApplyPayload(ReadOnlySpan<byte> payload, in JournalRecordHeader h, IRecoveryTarget target, string file, long offset)
    {
        int pos = 0, pages = 0;
        Span<byte> page = stackalloc byte[StorageConstants.PageSize];
        for (int e = 0; e < h.EntryCount; e++)
        {
            if (pos + JournalPageEntry.SizeOf > payload.Length)
                throw Corrupt(h, file, offset, "an entry header runs past the payload");
            var entry = MemoryMarshal.Read<JournalPageEntry>(payload[pos..]);
            pos += JournalPageEntry.SizeOf;
            if (entry.PageNumber < 1 || entry.PageCount < 1 || entry.PageNumber + entry.PageCount > h.NextPage)
                throw Corrupt(h, file, offset, $"page entry out of range (page {entry.PageNumber}, count {entry.PageCount})");
            if (entry.DiffSize == 0)
            {
                long bytes = (long)entry.PageCount * StorageConstants.PageSize;
                if (pos + bytes > payload.Length)
                    throw Corrupt(h, file, offset, $"page {entry.PageNumber} runs past the payload");
                target.Write(entry.PageNumber, entry.PageCount, payload.Slice(pos, (int)bytes));
                pos += (int)bytes;
            }
            else
            {
                if (entry.PageCount != 1 || entry.DiffSize < 0 || pos + entry.DiffSize > payload.Length || entry.BasePage < 1 || entry.BasePage >= h.NextPage)
                    throw Corrupt(h, file, offset, $"diff entry for page {entry.PageNumber} is malformed (base {entry.BasePage}, {entry.DiffSize} bytes)");
                target.Read(entry.BasePage).CopyTo(page);
                if (!PageDiff.Apply(payload.Slice(pos, entry.DiffSize), page))
                    throw Corrupt(h, file, offset, $"diff for page {entry.PageNumber} writes outside the page");
                target.Write(entry.PageNumber, 1, page);
                pos += entry.DiffSize;
            }
            pages += entry.PageCount;
        }
        if (pages != h.PageCount || pos != payload.Length)
            throw Corrupt(h, file, offset, $"declares {h.PageCount} pages in {payload.Length} bytes but holds {pages} pages in {pos}");
    }

    private static StorageCorruptionException Corrupt(in JournalRecordHeader h, string file, long offset, string what) =>
        new($"Journal record for transaction {h.TxId} at '{file}' offset {offset}: {what}.");

    private static bool FindLaterRecord(byte[] file, long from, long minTx, out long at, out long tx, Encryption.EncryptionKey? key)
    {
        Span<byte> magic = stackalloc byte[8];
        BinaryPrimitives.WriteUInt64LittleEndian(magic, JournalRecordHeader.MagicValue);
        long pos = from;
        byte[] scratch = [];
        while (pos < file.Length)
        {
            int i = file.AsSpan((int)pos).IndexOf(magic);
            if (i < 0)
                break;
            long cand = pos + i;
            if (cand + JournalRecordHeader.SizeOf <= file.Length)
            {
                var h = MemoryMarshal.Read<JournalRecordHeader>(file.AsSpan((int)cand));
                if (h.TxId >= minTx && TryRead(file, cand, h.TxId, out _, ref scratch, out _, key))
                {
                    at = cand;
                    tx = h.TxId;
                    return true;
                }
            }
            pos = cand + 1;
        }
        at = tx = 0;
        return false;
    }
}
