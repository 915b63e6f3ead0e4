using System.IO.Compression;
using RavenLite.Server.Databases;
using RavenLite.Storage.Encryption;

namespace RavenLite.Server.Backups;

/// <summary>
/// Backups of an encrypted database are encrypted with its key (docs/format/backup.md "Encrypted backups"): a snapshot's
/// zip entries each hold a sealed stream of their deflated content (entry names stay readable; what they hold does
/// not), with a plain entry <see cref="MarkEntry"/> saying so and holding the key's check value; a dump backup is one
/// sealed stream of the gzipped dump. A restore needs the key — given in the restore configuration
/// (<c>EncryptionKey</c>), or the one this server holds for the database restored into.
/// </summary>
internal static class BackupEncryption
{
    /// <summary>The plain entry that marks an encrypted snapshot: <c>{"Encrypted": true, "KeyCheck": base64}</c>.</summary>
    public const string MarkEntry = "encryption.json";

    /// <summary>What a dump backup's sealed stream is bound to.</summary>
    public const string DumpBinding = "RavenLite dump backup";

    /// <summary>A new entry's stream: as is, or deflated then sealed with <paramref name="key"/>.</summary>
    public static Stream Create(ZipArchive archive, string name, CompressionLevel level, EncryptionKey? key)
    {
        if (key == null)
            return archive.CreateEntry(name, level).Open();
        return new DeflateStream(SealedStream.Seal(archive.CreateEntry(name, CompressionLevel.NoCompression).Open(), key, name), level);
    }

    /// <summary>An entry's content, opened with <paramref name="key"/> when the snapshot is encrypted.</summary>
    public static Stream Open(ZipArchiveEntry entry, EncryptionKey? key) =>
        key == null ? entry.Open() : new DeflateStream(SealedStream.Open(entry.Open(), key, entry.FullName), CompressionMode.Decompress);

    /// <summary>Copies an entry's content to a new file.</summary>
    public static void Extract(ZipArchiveEntry entry, string path, EncryptionKey? key)
    {
        using var source = Open(entry, key);
        using var target = new FileStream(path, FileMode.CreateNew, FileAccess.Write);
        source.CopyTo(target);
        target.Flush(flushToDisk: true);
    }

    /// <summary>Marks an encrypted snapshot.</summary>
    public static void Mark(ZipArchive archive, EncryptionKey key)
    {
        using var s = archive.CreateEntry(MarkEntry, CompressionLevel.NoCompression).Open();
        using var w = new Utf8JsonWriter(s);
        w.WriteStartObject();
        w.WriteBoolean("Encrypted", true);
        w.WriteString("KeyCheck", key.CheckBase64());
        w.WriteEndObject();
    }

    /// <summary>True when the snapshot is encrypted.</summary>
    public static bool IsEncrypted(ZipArchive archive) => archive.GetEntry(MarkEntry) != null;

    /// <summary>True when the dump backup file is a sealed stream.</summary>
    public static bool IsSealed(string file)
    {
        Span<byte> start = stackalloc byte[8];
        using var f = File.OpenRead(file);
        return f.ReadAtLeast(start, 8, throwOnEndOfStream: false) == 8 && SealedStream.IsSealed(start);
    }

    /// <summary>
    /// The key a restore opens an encrypted backup with: <paramref name="given"/> (base64) — then stored for
    /// <paramref name="database"/> — or the one this server holds for it; 400 when there is none or it is not the
    /// backup's (checked against <paramref name="archive"/>'s mark when given).
    /// </summary>
    public static EncryptionKey KeyFor(DatabaseKeys keys, string database, string? given, ZipArchive? archive)
    {
        if (given is { Length: > 0 } && !keys.Has(database))
            keys.Put(database, given, overwrite: false);
        var key = keys.KeyFor(database) ?? throw new BadRequestException(
            $"The backup is encrypted: restoring it needs its key — EncryptionKey in the restore configuration, or the key distributed for database '{database}' (POST /admin/secrets/distribute).");
        if (archive?.GetEntry(MarkEntry) is { } mark)
        {
            using var s = mark.Open();
            using var json = JsonDocument.Parse(s);
            if (json.RootElement.GetProperty("KeyCheck").GetString() != key.CheckBase64())
            {
                key.Dispose();
                throw new BadRequestException($"The key for database '{database}' is not the key the backup was encrypted with.");
            }
        }
        return key;
    }

}
