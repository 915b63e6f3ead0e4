using Lucene.Net.Index;
using Lucene.Net.Util;
using RavenLite.Storage.Backup;

namespace RavenLite.Server.Databases;

/// <summary>
/// Compaction of a closed database (RavenDB's <c>POST /admin/compact</c>): its storage rewritten without free pages
/// into <c>storage.compacting/</c> (<see cref="StorageCompactor"/>), then swapped in by two directory renames
/// (<c>storage</c> → <c>storage.old</c>, <c>storage.compacting</c> → <c>storage</c>, each followed by a directory
/// fsync); named indexes' Lucene files merged into one segment. <see cref="Recover"/>, run when a database opens,
/// finishes or undoes a swap a crash cut short: the old storage is kept unless the new one is wholly in place.
/// </summary>
public static class DatabaseCompaction
{
    /// <summary>What a compaction did.</summary>
    public sealed record Result(long StorageBytesBefore, long StorageBytesAfter, IReadOnlyList<string> IndexesCompacted);

    /// <summary>Compacts the storage of the database in <paramref name="dir"/> and the Lucene files of <paramref name="indexes"/>.</summary>
    public static Result Run(string dir, bool documents, IReadOnlyCollection<string> indexes, CancellationToken cancellation, Storage.Encryption.EncryptionKey? key = null)
    {
        Recover(dir);
        long before = 0, after = 0;
        if (documents)
        {
            string storage = Path.Combine(dir, "storage"), target = storage + ".compacting", old = storage + ".old";
            Directory.CreateDirectory(target);
            (before, after) = StorageCompactor.Compact(storage, target, cancellation: cancellation, key: key);
            var fs = Storage.Platform.DiskFileSystem.Instance;
            Directory.Move(storage, old);
            fs.SyncDirectory(dir);
            Directory.Move(target, storage);
            fs.SyncDirectory(dir);
            Directory.Delete(old, recursive: true);
        }
        var done = new List<string>();
        string indexRoot = Path.Combine(dir, "Indexes");
        if (indexes.Count > 0 && Directory.Exists(indexRoot))
        {
            foreach (string folder in Directory.GetDirectories(indexRoot))
            {
                string definition = Path.Combine(folder, "definition.json");
                if (!File.Exists(definition))
                    continue;
                string name = Indexing.IndexDefinition.Deserialize(File.ReadAllBytes(definition)).Name;
                if (!indexes.Contains(name, StringComparer.OrdinalIgnoreCase) || !Directory.Exists(Path.Combine(folder, "lucene")))
                    continue;
                cancellation.ThrowIfCancellationRequested();
                MergeToOneSegment(Path.Combine(folder, "lucene"), key);
                done.Add(name);
            }
        }
        return new Result(before, after, done);
    }

    /// <summary>Merges a closed Lucene index into one segment; the last commit's user data (the indexed positions) is kept.</summary>
    private static void MergeToOneSegment(string luceneDir, Storage.Encryption.EncryptionKey? key)
    {
        using Lucene.Net.Store.Directory directory = key == null ? new Lucene.Net.Store.NIOFSDirectory(luceneDir)
            : new Indexing.EncryptedDirectory(new Lucene.Net.Store.NIOFSDirectory(luceneDir), key);
        if (!DirectoryReader.IndexExists(directory))
            return;
        var config = new IndexWriterConfig(LuceneVersion.LUCENE_48, new Lucene.Net.Analysis.Core.KeywordAnalyzer()) { OpenMode = OpenMode.APPEND };
        using var writer = new IndexWriter(directory, config);
        var data = writer.CommitData;
        writer.ForceMerge(1);
        writer.SetCommitData(data);
        writer.Commit();
        Storage.Platform.DiskFileSystem.Instance.SyncDirectory(luceneDir);
    }

    /// <summary>Finishes or undoes a storage swap that a crash interrupted (see the class summary).</summary>
    public static void Recover(string dir)
    {
        string storage = Path.Combine(dir, "storage"), target = storage + ".compacting", old = storage + ".old";
        if (!Directory.Exists(storage) && Directory.Exists(old))
            Directory.Move(old, storage); // crashed between the two renames: the old storage is whole
        if (Directory.Exists(target))
            Directory.Delete(target, recursive: true);
        if (Directory.Exists(old))
            Directory.Delete(old, recursive: true); // the new storage was in place
    }
}
