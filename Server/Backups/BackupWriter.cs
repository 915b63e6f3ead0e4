using System.IO.Compression;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Storage.Backup;
using RavenLite.Storage.Platform;

namespace RavenLite.Server.Backups;

#pragma warning disable CA1507 // the JSON names are RavenDB's wire names, equal to some member names by coincidence

/// <summary>
/// Takes one backup of a database into a local folder (docs/format/backup.md), while writes go on:
/// <list type="bullet">
/// <item><c>Snapshot</c>: a <c>.ravendb-snapshot</c> zip holding the storage pages reachable from one read transaction
/// (<see cref="StorageSnapshot"/>), their hashes, every index definition and (unless excluded) the files of each
/// index's last Lucene commit, taken before the read transaction so no index is ahead of the documents. An
/// incremental (<c>.ravendb-incremental-backup</c>) holds only pages changed since the previous file of the same
/// backup folder, and only index files that folder does not hold yet.</item>
/// <item><c>Backup</c>: a <c>.ravendb-full-backup</c>, the <c>.ravendbdump</c> export from one snapshot, which RavenDB's
/// own restore and import read too. Incremental backups of this type are refused (<see cref="DomainException"/>): the
/// exact incremental is the snapshot's.</item>
/// </list>
/// A file is written as <c>*.in-progress</c>, fsynced, then renamed, so a crash leaves no partial backup a restore
/// would pick up. Thread-safety: callers run one backup per database at a time (<see cref="BackupService"/>).
/// </summary>
public static class BackupWriter
{
    /// <summary>Extension of a full storage snapshot.</summary>
    public const string SnapshotExtension = ".ravendb-snapshot";

    /// <summary>Extension of an incremental backup.</summary>
    public const string IncrementalExtension = ".ravendb-incremental-backup";

    /// <summary>Extension of a full (dump) backup.</summary>
    public const string FullBackupExtension = ".ravendb-full-backup";

    /// <summary>Zip entry of the page stream.</summary>
    public const string PagesEntry = "storage.pages";

    /// <summary>Zip entry of the page hashes.</summary>
    public const string HashesEntry = "storage.hashes";

    /// <summary>Zip entry of the manifest.</summary>
    public const string ManifestEntry = "manifest.json";

    private const string InProgress = ".in-progress";

    /// <summary>How a backup file's name starts (UTC).</summary>
    private const string FileStampFormat = "yyyy-MM-dd-HH-mm-ss-fff";

    /// <summary>
    /// Writes one backup. With <paramref name="request"/>.Incremental and a previous snapshot file in
    /// <paramref name="request"/>.BackupFolder it writes an incremental one there; otherwise (or when the folder holds
    /// no snapshot) a full one in a new folder under the request's folder path.
    /// </summary>
    public static BackupResult Write(Database db, BackupRequest request, CancellationToken cancellation)
    {
        var started = System.Diagnostics.Stopwatch.StartNew();
        DateTime now = DateTime.UtcNow;
        string stamp = now.ToString("yyyy-MM-dd-HH-mm-ss", CultureInfo.InvariantCulture);
        EnsureWritable(request.FolderPath);

        bool snapshot = request.Type == BackupType.Snapshot;
        string? previous = request.Incremental && request.BackupFolder != null && Directory.Exists(request.BackupFolder)
            ? LatestFile(request.BackupFolder)
            : null;
        if (!snapshot && request.Incremental)
            throw new BadRequestException("Incremental backups are taken of Snapshot backups (BackupType 'Snapshot'); a 'Backup' writes a full .ravendbdump each time.");
        bool incremental = previous != null;
        string folder = incremental
            ? request.BackupFolder!
            : Path.Combine(request.FolderPath, $"{stamp}.ravendb-{db.Name}-{db.Documents.NodeTag}-{(snapshot ? "snapshot" : "backup")}");
        Directory.CreateDirectory(folder);
        // File names start with the time to the millisecond, strictly after the folder's last file, so name order is
        // the order they were taken in (what a restore and LastFileNameToRestore go by).
        var existing = BackupFiles(folder);
        DateTime at = now;
        string FileStamp(DateTime t) => t.ToString(FileStampFormat, CultureInfo.InvariantCulture);
        while (existing.Count > 0 && string.CompareOrdinal(Path.GetFileName(existing[^1]) is var last && last.Length > FileStampFormat.Length ? last[..FileStampFormat.Length] : last, FileStamp(at)) >= 0)
            at = at.AddMilliseconds(1);
        string fileName = FileStamp(at) + (incremental ? IncrementalExtension : snapshot ? SnapshotExtension : FullBackupExtension);
        string path = Path.Combine(folder, fileName);
        string temp = path + InProgress;
        try
        {
            BackupResult result;
            using (var file = new FileStream(temp, FileMode.CreateNew, FileAccess.Write, FileShare.None, 1 << 16))
            {
                if (snapshot)
                {
                    result = WriteSnapshot(db, request, file, previous, cancellation);
                }
                else
                {
                    using var tx = db.Environment.ReadTransaction();
                    long etag = DocumentsStorage.LastEtag(tx);
                    long txId = tx.Id;
                    tx.Dispose();
                    // An encrypted database's dump is sealed with its key as it is written (BackupEncryption).
                    var output = db.EncryptionKey is { } key ? Storage.Encryption.SealedStream.Seal(file, key, BackupEncryption.DumpBinding, leaveOpen: true) : file;
                    Smuggler.SmugglerCounts counts;
                    try
                    {
                        counts = Smuggler.DatabaseExporter.Export(db, output, cancellation);
                    }
                    finally
                    {
                        if (output != file)
                            output.Dispose();
                    }
                    result = new BackupResult { TxId = txId, LastEtag = etag, Documents = counts.Read("Documents") };
                }
                file.Flush(flushToDisk: true);
                result.SizeInBytes = file.Length;
            }
            File.Move(temp, path);
            DiskFileSystem.Instance.SyncDirectory(folder);
            result.Folder = folder;
            result.FileName = fileName;
            result.Incremental = incremental;
            result.Type = request.Type;
            result.Duration = started.Elapsed;
            result.CreatedAt = now;
            return result;
        }
        catch
        {
            try
            {
                File.Delete(temp);
                if (!incremental && Directory.Exists(folder) && !Directory.EnumerateFileSystemEntries(folder).Any())
                    Directory.Delete(folder);
            }
            catch (IOException)
            {
            }
            throw;
        }
    }

    /// <summary>Creates <paramref name="folder"/> when missing and writes (then deletes) a probe file in it; 400 naming why it cannot.</summary>
    public static void EnsureWritable(string folder)
    {
        try
        {
            Directory.CreateDirectory(folder);
            string probe = Path.Combine(folder, ".ravenlite-write-check-" + Guid.NewGuid().ToString("N"));
            File.WriteAllBytes(probe, []);
            File.Delete(probe);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or ArgumentException or NotSupportedException)
        {
            throw new BadRequestException($"The backup folder '{folder}' is not writable: {e.Message}");
        }
    }

    /// <summary>The backup files of a folder in the order they were taken (their names start with the time).</summary>
    public static List<string> BackupFiles(string folder) =>
        Directory.EnumerateFiles(folder)
            .Where(f => f.EndsWith(SnapshotExtension, StringComparison.Ordinal) || f.EndsWith(IncrementalExtension, StringComparison.Ordinal) || f.EndsWith(FullBackupExtension, StringComparison.Ordinal))
            .Order(StringComparer.Ordinal)
            .ToList();

    private static string? LatestFile(string folder)
    {
        var files = BackupFiles(folder);
        return files.Count > 0 && !files[0].EndsWith(FullBackupExtension, StringComparison.Ordinal) ? files[^1] : null;
    }

    // Kept whole: one backup file from one storage snapshot (pages, hashes, then the record and index
    // definitions), so every part describes the same moment.
    private static BackupResult WriteSnapshot(Database db, BackupRequest request, Stream file, string? previous, CancellationToken cancellation)
    {
        PageHashes? baseHashes = null;
        var chainIndexFiles = new HashSet<string>(StringComparer.Ordinal);
        if (previous != null)
        {
            foreach (string earlier in BackupFiles(Path.GetDirectoryName(previous)!))
            {
                using var zip = ZipFile.OpenRead(earlier);
                foreach (var entry in zip.Entries.Where(e => e.FullName.StartsWith("indexes/", StringComparison.Ordinal) && e.FullName.Contains("/lucene/", StringComparison.Ordinal)))
                    chainIndexFiles.Add(entry.FullName);
                if (earlier == previous)
                {
                    var hashesEntry = zip.GetEntry(HashesEntry) ?? throw new InvalidDataException($"'{previous}' holds no page hashes.");
                    using var hashes = BackupEncryption.Open(hashesEntry, BackupEncryption.IsEncrypted(zip) ? db.EncryptionKey : null);
                    baseHashes = PageHashes.ReadFrom(hashes);
                }
            }
        }

        var result = new BackupResult();
        var level = request.Compression;
        using var archive = new ZipArchive(file, ZipArchiveMode.Create, leaveOpen: true);
        var key = db.EncryptionKey;
        if (key != null)
            BackupEncryption.Mark(archive, key);
        var manifestIndexes = new List<ManifestIndex>();
        // Index files first: each index's last commit is then at or behind the documents' snapshot taken next.
        foreach (var index in db.Indexes.All)
        {
            cancellation.ThrowIfCancellationRequested();
            string folderName = Path.GetFileName(index.Folder);
            string definitionPath = Path.Combine(index.Folder, "definition.json");
            byte[] definition;
            try
            {
                definition = File.ReadAllBytes(definitionPath);
            }
            catch (IOException)
            {
                continue; // deleted meanwhile
            }
            using (var s = BackupEncryption.Create(archive, $"indexes/{folderName}/definition.json", CompressionLevel.Fastest, key))
                s.Write(definition);
            IReadOnlyList<string>? files = null;
            if (!request.ExcludeIndexes)
            {
                string staging = Path.Combine(Path.GetTempPath(), "ravenlite-backup-" + Guid.NewGuid().ToString("N"));
                try
                {
                    files = index.CopyLastCommitTo(staging);
                    foreach (string name in files ?? [])
                    {
                        string entryName = $"indexes/{folderName}/lucene/{name}";
                        if (chainIndexFiles.Contains(entryName))
                            continue; // Lucene files never change once written: the chain holds it already
                        using (var source = File.OpenRead(Path.Combine(staging, name)))
                        using (var target = BackupEncryption.Create(archive, entryName, level, key))
                            source.CopyTo(target);
                        result.IndexFiles++;
                    }
                }
                finally
                {
                    if (Directory.Exists(staging))
                        Directory.Delete(staging, recursive: true);
                }
            }
            manifestIndexes.Add(new ManifestIndex(folderName, index.Name, files));
        }

        using var tx = db.Environment.ReadTransaction();
        result.TxId = tx.Id;
        result.LastEtag = DocumentsStorage.LastEtag(tx);
        result.Documents = DocumentsStorage.CountDocuments(tx);
        SnapshotResult pages;
        using (var s = BackupEncryption.Create(archive, PagesEntry, level, key))
            pages = StorageSnapshot.Write(tx, s, baseHashes, cancellation: cancellation);
        using (var s = BackupEncryption.Create(archive, HashesEntry, CompressionLevel.Fastest, key))
            pages.Hashes.WriteTo(s);
        result.PagesWritten = pages.WrittenPages;
        result.PagesReachable = pages.ReachablePages;

        using (var s = BackupEncryption.Create(archive, ManifestEntry, CompressionLevel.Fastest, key))
        using (var w = new Utf8JsonWriter(s, new JsonWriterOptions { Indented = true }))
        {
            w.WriteStartObject();
            w.WriteString("Format", "RavenLite.Snapshot");
            w.WriteNumber("Version", 1);
            w.WriteString("DatabaseName", db.Name);
            w.WriteString("DatabaseId", db.Documents.DatabaseId);
            w.WriteBoolean("Incremental", baseHashes != null);
            w.WriteNumber("TransactionId", pages.TxId);
            w.WriteNumber("BaseTransactionId", baseHashes?.TxId ?? 0);
            w.WriteNumber("LastEtag", result.LastEtag);
            w.WriteNumber("Documents", result.Documents);
            w.WriteString("CreatedAt", DateTime.UtcNow);
            w.WriteStartArray("Indexes");
            foreach (var i in manifestIndexes)
            {
                w.WriteStartObject();
                w.WriteString("Folder", i.Folder);
                w.WriteString("Name", i.Name);
                if (i.Files == null)
                {
                    w.WriteNull("LuceneFiles");
                }
                else
                {
                    w.WriteStartArray("LuceneFiles");
                    foreach (string f in i.Files)
                        w.WriteStringValue(f);
                    w.WriteEndArray();
                }
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        }
        return result;
    }

    private sealed record ManifestIndex(string Folder, string Name, IReadOnlyList<string>? Files);
}

/// <summary>What kind of backup: RavenDB's <c>BackupType</c>.</summary>
public enum BackupType
{
    /// <summary>A <c>.ravendbdump</c> (portable to RavenDB).</summary>
    Backup,

    /// <summary>The storage pages (exact, with incrementals).</summary>
    Snapshot,
}

/// <summary>One backup to take.</summary>
/// <param name="Type">Dump or storage snapshot.</param>
/// <param name="FolderPath">Where backup folders are made (LocalSettings.FolderPath).</param>
/// <param name="Incremental">An incremental one, when <paramref name="BackupFolder"/> holds a snapshot to follow.</param>
/// <param name="BackupFolder">The folder of the chain to extend.</param>
/// <param name="ExcludeIndexes">Leave the Lucene files out (restored indexes are built again).</param>
/// <param name="Compression">Zip compression of the pages and index files.</param>
public sealed record BackupRequest(BackupType Type, string FolderPath, bool Incremental, string? BackupFolder, bool ExcludeIndexes, CompressionLevel Compression);

/// <summary>What a backup wrote.</summary>
public sealed class BackupResult
{
    /// <summary>The backup folder.</summary>
    public string Folder { get; set; } = "";

    /// <summary>The file written in it.</summary>
    public string FileName { get; set; } = "";

    /// <summary>Dump or snapshot.</summary>
    public BackupType Type { get; set; }

    /// <summary>True for an incremental snapshot.</summary>
    public bool Incremental { get; set; }

    /// <summary>The storage transaction the backup is of.</summary>
    public long TxId { get; set; }

    /// <summary>The database's last etag at that transaction.</summary>
    public long LastEtag { get; set; }

    /// <summary>Documents at that transaction.</summary>
    public long Documents { get; set; }

    /// <summary>Pages written (snapshots).</summary>
    public long PagesWritten { get; set; }

    /// <summary>Pages reachable at the transaction (snapshots).</summary>
    public long PagesReachable { get; set; }

    /// <summary>Lucene files written.</summary>
    public int IndexFiles { get; set; }

    /// <summary>Bytes of the file.</summary>
    public long SizeInBytes { get; set; }

    /// <summary>How long it took.</summary>
    public TimeSpan Duration { get; set; }

    /// <summary>When it started (UTC).</summary>
    public DateTime CreatedAt { get; set; }

    /// <summary>RavenDB's <c>BackupResult</c> shape, with RavenLite's figures beside it.</summary>
    public void WriteJson(Utf8JsonWriter w)
    {
        w.WriteStartObject();
        w.WriteString("$type", "Raven.Client.Documents.Operations.Backups.BackupResult, Raven.Client");
        w.WriteStartObject("Documents");
        w.WriteNumber("ReadCount", Documents);
        w.WriteNumber("SkippedCount", 0);
        w.WriteNumber("ErroredCount", 0);
        w.WriteNumber("LastEtag", LastEtag);
        w.WriteEndObject();
        w.WriteStartObject("LocalBackup");
        w.WriteString("BackupDirectory", Folder);
        w.WriteString("FileName", FileName);
        w.WriteBoolean("TempFolderUsed", false);
        w.WriteNumber(Incremental ? "IncrementalBackupDurationInMs" : "FullBackupDurationInMs", (long)Duration.TotalMilliseconds);
        w.WriteEndObject();
        w.WriteString("BackupType", Type.ToString());
        w.WriteBoolean("IsIncremental", Incremental);
        w.WriteNumber("TransactionId", TxId);
        w.WriteNumber("LastEtag", LastEtag);
        w.WriteNumber("PagesWritten", PagesWritten);
        w.WriteNumber("PagesReachable", PagesReachable);
        w.WriteNumber("IndexFilesWritten", IndexFiles);
        w.WriteNumber("SizeInBytes", SizeInBytes);
        w.WriteNumber("DurationInMs", (long)Duration.TotalMilliseconds);
        w.WriteStartArray("Messages");
        w.WriteEndArray();
        w.WriteEndObject();
    }
}
