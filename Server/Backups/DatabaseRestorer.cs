using System.IO.Compression;
using System.Text.Json.Nodes;
using RavenLite.Server.Databases;
using RavenLite.Storage;
using RavenLite.Storage.Backup;

namespace RavenLite.Server.Backups;

/// <summary>
/// Restores a backup folder into a new database (RavenDB's <c>RestoreBackupConfiguration</c>: <c>DatabaseName</c>,
/// <c>BackupLocation</c>, <c>LastFileNameToRestore</c>, <c>SkipIndexes</c>, <c>DisableOngoingTasks</c>).
/// A snapshot chain (<c>.ravendb-snapshot</c> then <c>.ravendb-incremental-backup</c> files, in name order, up to
/// <c>LastFileNameToRestore</c>) becomes the database's storage exactly as of the last file's transaction
/// (<see cref="SnapshotRestorer"/>), with the last file's index definitions and the Lucene files of each index's commit
/// (an index whose files are incomplete is built again). Backup statuses are cleared, so the restored database's first
/// scheduled backup is a full one. A <c>.ravendb-full-backup</c> folder (a dump, RavenDB's or ours) is imported, then any
/// incremental dumps after it. Nothing of a failed restore stays: the database does not exist afterwards.
/// </summary>
public static class DatabaseRestorer
{
    /// <summary>The request.</summary>
    public sealed record Request(string DatabaseName, string BackupLocation, string? LastFileNameToRestore, bool SkipIndexes, bool DisableOngoingTasks, string? EncryptionKey = null);

    /// <summary>Parses RavenDB's restore configuration; 400 naming what is wrong.</summary>
    public static Request Parse(JsonElement root)
    {
        if (root.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("A restore configuration is a JSON object.");
        string? String(string name) => root.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.String ? v.GetString() : null;
        bool Bool(string name) => root.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.True;
        string name = String("DatabaseName") ?? throw new BadRequestException("DatabaseName is required: the new database to restore into.");
        DatabaseRegistry.ValidateName(name);
        string location = String("BackupLocation") ?? throw new BadRequestException("BackupLocation is required: the backup folder to restore.");
        if (String("Type") is { } type && !type.Equals("Local", StringComparison.OrdinalIgnoreCase))
            throw new BadRequestException($"Restore type '{type}': RavenLite restores from a local folder only.");
        if (String("DataDirectory") is { Length: > 0 })
            throw new BadRequestException("DataDirectory: RavenLite keeps every database under its DataDir; leave it empty.");
        if (!Directory.Exists(location))
            throw new BadRequestException($"BackupLocation '{location}' is not a folder.");
        // RavenDB's EncryptionKey (or BackupEncryptionSettings.Key): the key an encrypted backup was taken with.
        string? key = String("EncryptionKey") ?? (root.TryGetProperty("BackupEncryptionSettings", out var enc) && enc.ValueKind == JsonValueKind.Object
            && enc.TryGetProperty("Key", out var k) && k.ValueKind == JsonValueKind.String ? k.GetString() : null);
        return new Request(name, location, String("LastFileNameToRestore"), Bool("SkipIndexes"), Bool("DisableOngoingTasks"), key);
    }

    /// <summary>The files a restore reads, in order; 400 when there are none or the named last one is missing.</summary>
    public static List<string> Chain(Request request)
    {
        var files = BackupWriter.BackupFiles(request.BackupLocation);
        if (files.Count == 0)
            throw new BadRequestException($"'{request.BackupLocation}' holds no backup files (.ravendb-snapshot, .ravendb-full-backup, .ravendb-incremental-backup).");
        if (request.LastFileNameToRestore is { Length: > 0 } last)
        {
            int at = files.FindIndex(f => Path.GetFileName(f) == last);
            if (at < 0)
                throw new BadRequestException($"LastFileNameToRestore '{last}' is not a backup file in '{request.BackupLocation}'.");
            files = files[..(at + 1)];
        }
        int full = files.FindLastIndex(f => !f.EndsWith(BackupWriter.IncrementalExtension, StringComparison.Ordinal));
        if (full < 0)
            throw new BadRequestException($"'{request.BackupLocation}' holds incremental backups without the full one they follow.");
        return files[full..];
    }

    /// <summary>Restores; returns the storage transaction the database is at (snapshots) or the documents imported (dumps).</summary>
    public static long Restore(DatabaseRegistry registry, Request request, Configuration.ServerOptions options, ILogger logger, CancellationToken cancellation)
    {
        var chain = Chain(request);
        if (chain[0].EndsWith(BackupWriter.FullBackupExtension, StringComparison.Ordinal))
            return Import(registry, request, chain, options, cancellation);
        long txId = 0;
        bool encrypted;
        using (var first = OpenArchive(chain[^1]))
            encrypted = BackupEncryption.IsEncrypted(first);
        using var key = encrypted ? KeyOf(registry, request, chain[^1]) : null;
        if (encrypted)
            registry.CheckEncryptable(request.DatabaseName);
        registry.CreateFrom(request.DatabaseName, staging =>
        {
            var archives = new List<ZipArchive>();
            try
            {
                foreach (string file in chain)
                    archives.Add(OpenArchive(file));
                string storage = Path.Combine(staging, "storage");
                using (var restorer = new SnapshotRestorer(storage, key: key))
                {
                    for (int i = 0; i < chain.Count; i++)
                    {
                        cancellation.ThrowIfCancellationRequested();
                        var entry = archives[i].GetEntry(BackupWriter.PagesEntry) ?? throw new BadRequestException($"'{Path.GetFileName(chain[i])}' holds no storage pages.");
                        using var pages = BackupEncryption.Open(entry, key);
                        restorer.Apply(pages, Path.GetFileName(chain[i]));
                    }
                    restorer.Complete();
                    txId = restorer.TxId;
                }
                if (!request.SkipIndexes)
                    RestoreIndexes(archives, Path.Combine(staging, "Indexes"), key);
                ResetBackupTasks(storage, request.DisableOngoingTasks, key);
            }
            catch (InvalidDataException e)
            {
                // A zip entry that does not read back (a damaged header, a CRC that does not match), or page streams
                // that fail their checks: the backup's fault, named.
                throw new BadRequestException($"The backup cannot be restored: {e.Message}");
            }
            finally
            {
                foreach (var a in archives)
                    a.Dispose();
            }
        }, encrypted);
        Logging.Log.Restored(logger, request.DatabaseName, request.BackupLocation, chain.Count, txId);
        return txId;
    }

    /// <summary>Opens a backup file with its central directory read (a zip reads it lazily, at the first look at its entries).</summary>
    private static ZipArchive OpenArchive(string file)
    {
        ZipArchive? archive = null;
        try
        {
            archive = ZipFile.OpenRead(file);
            _ = archive.Entries;
            return archive;
        }
        catch (InvalidDataException e)
        {
            archive?.Dispose();
            throw new BadRequestException($"'{Path.GetFileName(file)}' is not a readable backup: {e.Message}");
        }
    }

    /// <summary>The key of an encrypted snapshot chain, checked against its last file.</summary>
    private static Storage.Encryption.EncryptionKey KeyOf(DatabaseRegistry registry, Request request, string last)
    {
        using var archive = OpenArchive(last);
        return BackupEncryption.KeyFor(registry.Keys, request.DatabaseName, request.EncryptionKey, archive);
    }

    private static void RestoreIndexes(List<ZipArchive> archives, string indexesRoot, Storage.Encryption.EncryptionKey? key)
    {
        var last = archives[^1];
        foreach (var (folder, files) in ReadManifest(last, key))
        {
            string target = Path.Combine(indexesRoot, folder);
            var definition = last.GetEntry($"indexes/{folder}/definition.json");
            if (definition == null)
                continue;
            Directory.CreateDirectory(target);
            if (files != null)
            {
                string lucene = Path.Combine(target, "lucene");
                Directory.CreateDirectory(lucene);
                bool complete = true;
                foreach (string name in files)
                {
                    var entry = archives.AsEnumerable().Reverse().Select(a => a.GetEntry($"indexes/{folder}/lucene/{name}")).FirstOrDefault(e => e != null);
                    if (entry == null)
                    {
                        complete = false;
                        break;
                    }
                    BackupEncryption.Extract(entry, Path.Combine(lucene, name), key);
                }
                if (!complete)
                    Directory.Delete(lucene, recursive: true); // the index is built again from the documents
            }
            // The definition last: a folder without one is an unfinished creation and is removed at open.
            BackupEncryption.Extract(definition, Path.Combine(target, "definition.json"), key);
        }
    }

    /// <summary>
    /// The indexes the last file's manifest lists: each one's folder and the Lucene files of its commit (null when it
    /// has none, so it is built again); 400 for a manifest that is not what a backup writes.
    /// </summary>
    private static List<(string Folder, List<string>? Files)> ReadManifest(ZipArchive last, Storage.Encryption.EncryptionKey? key)
    {
        static BadRequestException Bad(string what) => new($"The last backup file's manifest {what}.");
        static string PlainName(JsonElement e, string what) =>
            e.ValueKind == JsonValueKind.String && e.GetString() is { Length: > 0 } name && name == Path.GetFileName(name) && !name.StartsWith('.')
                ? name : throw Bad($"names an index {what} that is not a plain name ({e.GetRawText()})");
        using var stream = BackupEncryption.Open(last.GetEntry(BackupWriter.ManifestEntry) ?? throw new BadRequestException("The last backup file holds no manifest."), key);
        JsonDocument manifest;
        try
        {
            manifest = JsonDocument.Parse(stream);
        }
        catch (JsonException e)
        {
            throw Bad($"is not valid JSON: {e.Message}");
        }
        using (manifest)
        {
            if (manifest.RootElement.ValueKind != JsonValueKind.Object || !manifest.RootElement.TryGetProperty("Indexes", out var indexes) || indexes.ValueKind != JsonValueKind.Array)
                throw Bad("has no Indexes array");
            var result = new List<(string, List<string>?)>();
            foreach (var index in indexes.EnumerateArray())
            {
                if (index.ValueKind != JsonValueKind.Object || !index.TryGetProperty("Folder", out var folder))
                    throw Bad("lists an index without its Folder");
                List<string>? files = index.TryGetProperty("LuceneFiles", out var lucene) && lucene.ValueKind == JsonValueKind.Array
                    ? [.. lucene.EnumerateArray().Select(f => PlainName(f, "file"))] : null;
                result.Add((PlainName(folder, "folder"), files));
            }
            return result;
        }
    }

    /// <summary>Clears backup statuses (the next backup of the restored database is full) and, when asked, disables its tasks.</summary>
    private static void ResetBackupTasks(string storage, bool disable, Storage.Encryption.EncryptionKey? encryptionKey)
    {
        using var env = StorageEnvironment.Open(new StorageOptions { Directory = Path.GetFullPath(storage), EncryptionKey = encryptionKey });
        using var tx = env.WriteTransaction();
        if (tx.ReadTree(BackupService.Tree) is { } tree)
        {
            var keys = new List<(byte[] Key, byte[] Value)>();
            var c = tree.CreateCursor();
            if (c.SeekToFirst())
                do keys.Add((c.Key.ToArray(), c.Value.ToArray()));
                while (c.MoveNext());
            var target = tx.CreateTree(BackupService.Tree);
            foreach (var (key, value) in keys)
            {
                if (key.AsSpan().StartsWith("status/"u8))
                {
                    target.Delete(key);
                }
                else if (disable)
                {
                    var node = JsonNode.Parse(value)!;
                    node["Disabled"] = true;
                    target.Put(key, JsonSerializer.SerializeToUtf8Bytes(node));
                }
            }
        }
        tx.Commit();
    }

    private static long Import(DatabaseRegistry registry, Request request, List<string> chain, Configuration.ServerOptions options, CancellationToken cancellation)
    {
        // A sealed dump is an encrypted database's: it is restored into an encrypted database, under the same key.
        bool encrypted = BackupEncryption.IsSealed(chain[^1]);
        if (encrypted)
        {
            BackupEncryption.KeyFor(registry.Keys, request.DatabaseName, request.EncryptionKey, null).Dispose();
            registry.CheckEncryptable(request.DatabaseName);
        }
        registry.Create(request.DatabaseName, encrypted);
        long documents = 0;
        try
        {
            var db = registry.Acquire(request.DatabaseName);
            try
            {
                foreach (string file in chain)
                {
                    using var raw = File.OpenRead(file);
                    using var stream = db.EncryptionKey is { } key && BackupEncryption.IsSealed(file)
                        ? Storage.Encryption.SealedStream.Open(raw, key, BackupEncryption.DumpBinding, leaveOpen: true) : raw;
                    var importer = new Smuggler.DatabaseImporter(db, options.MaxAttachmentBytes);
                    try
                    {
                        importer.ImportAsync(stream, cancellation).GetAwaiter().GetResult();
                    }
                    catch (InvalidDataException e)
                    {
                        throw new BadRequestException($"'{Path.GetFileName(file)}' cannot be restored: {e.Message}");
                    }
                    documents += importer.Counts.Read("Documents");
                }
            }
            finally
            {
                db.Release();
            }
        }
        catch
        {
            registry.Delete(request.DatabaseName);
            throw;
        }
        return documents;
    }
}
