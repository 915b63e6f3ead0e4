using System.Runtime.InteropServices;
using RavenLite.Storage.Platform;

namespace RavenLite.Storage.Paging;

/// <summary>
/// The <c>headers</c> file: two 4 KB slots, each holding one checksummed <see cref="FileHeader"/>.
/// Writes alternate between slots and are fsynced, so a torn write damages at most the copy being
/// written and the other still names a consistent synced state. The file has both slots' space from its opening on,
/// so writing a header never grows it. Format: docs/format/data-file.md.
/// </summary>
internal sealed class HeaderFile : IDisposable
{
    public const int SlotSize = 4096;
    private readonly IStorageFile _file;

    /// <summary>The key check value every header written carries (empty: an unencrypted environment).</summary>
    public KeyCheckValue KeyCheck { get; set; }

    private HeaderFile(IStorageFile file) => _file = file;

    /// <summary>Opens (creating) the file and returns the newest valid header, or null when the file holds nothing yet.</summary>
    /// <exception cref="StorageCorruptionException">bytes are present but neither copy is valid.</exception>
    public static HeaderFile Open(IStorageFileSystem fs, string path, out FileHeader? current)
    {
        var file = fs.OpenFile(path, create: true);
        var hf = new HeaderFile(file);
        try
        {
            var bytes = new byte[SlotSize * 2];
            int read = file.Read(0, bytes);
            FileHeader? best = null;
            var reasons = new List<string>();
            for (int slot = 0; slot < 2; slot++)
            {
                var span = bytes.AsSpan(slot * SlotSize, FileHeader.SizeOf);
                string? why = Validate(span, out var h);
                if (why == null)
                {
                    if (best == null || h.Sequence > best.Value.Sequence)
                        best = h;
                }
                else
                {
                    reasons.Add($"copy {slot} at offset {slot * SlotSize}: {why}");
                }
            }
            if (best == null && bytes.AsSpan(0, read).ContainsAnyExcept((byte)0))
                throw new StorageCorruptionException($"Header file '{path}' has no valid copy ({string.Join("; ", reasons)}).");
            if (file.Length < SlotSize * 2)
            {
                // Both slots take their space now: a header write then only overwrites, and never needs room a full disk
                // may refuse (before, the first write of the second slot grew the file: on a disk filled since the
                // database was created it failed the flush, and with it the environment).
                file.Write(file.Length, new byte[SlotSize * 2 - file.Length]);
                file.Sync();
            }
            current = best;
            return hf;
        }
        catch
        {
            hf.Dispose();
            throw;
        }
    }

    /// <summary>Null when the bytes are a valid header, else the reason.</summary>
    public static string? Validate(ReadOnlySpan<byte> bytes, out FileHeader header)
    {
        header = MemoryMarshal.Read<FileHeader>(bytes);
        if (header.Magic != FileHeader.MagicValue)
            return "bad magic";
        if (System.IO.Hashing.XxHash64.HashToUInt64(bytes[..(FileHeader.SizeOf - 8)]) != header.Hash)
            return "checksum mismatch";
        if (header.FormatVersion is < StorageConstants.OldestFormatVersion or > StorageConstants.FormatVersion)
            return $"format version {header.FormatVersion}, this build reads {StorageConstants.OldestFormatVersion} to {StorageConstants.FormatVersion}";
        if (header.PageSize != StorageConstants.PageSize)
            return $"page size {header.PageSize}, this build uses {StorageConstants.PageSize}";
        if (header.NextPage < 1 || header.LastSyncedTxId < 0 || header.JournalFileNumber < 1 || header.JournalOffset < 0)
            return "field out of range";
        return null;
    }

    /// <summary>Writes <paramref name="header"/> (its sequence picks the slot) and fsyncs; a FormatVersion of 0 writes the current one.</summary>
    public void Write(FileHeader header)
    {
        header.Magic = FileHeader.MagicValue;
        if (header.FormatVersion == 0)
            header.FormatVersion = StorageConstants.FormatVersion;
        header.PageSize = StorageConstants.PageSize;
        header.KeyCheck = KeyCheck;
        Span<byte> bytes = stackalloc byte[FileHeader.SizeOf];
        MemoryMarshal.Write(bytes, in header);
        header.Hash = System.IO.Hashing.XxHash64.HashToUInt64(bytes[..(FileHeader.SizeOf - 8)]);
        MemoryMarshal.Write(bytes, in header);
        _file.Write((header.Sequence % 2) * SlotSize, bytes);
        _file.Sync();
    }

    public void Dispose() => _file.Dispose();
}
