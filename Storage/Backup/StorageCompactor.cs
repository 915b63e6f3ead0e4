namespace RavenLite.Storage.Backup;

/// <summary>
/// Rewrites an environment without its free pages: every tree's entries, in key order, into a new environment in
/// another directory (appends fill pages; overflow values are laid out afresh), committed in batches of about
/// 64 MiB and flushed before the call returns. The source must not be open elsewhere. The caller swaps the
/// directories. Key/value content is copied exactly; page numbers, transaction ids and the journal start anew.
/// </summary>
public static class StorageCompactor
{
    private const long BatchBytes = 64L << 20;

    /// <summary>Copies <paramref name="sourceDirectory"/> into the empty <paramref name="targetDirectory"/>; returns (data-file bytes before, after).</summary>
    /// <param name="sourceDirectory">The environment to compact (opened read-only for the copy).</param>
    /// <param name="targetDirectory">An empty directory that receives the compacted environment.</param>
    /// <param name="progress">Called with (tree name, entries copied so far) at every batch and at each tree's end; null: none.</param>
    /// <param name="key">The key of an encrypted environment (the compacted one is encrypted with it too); null: unencrypted.</param>
    /// <param name="cancellation">Stops the copy between batches.</param>
    public static (long Before, long After) Compact(string sourceDirectory, string targetDirectory, Action<string, long>? progress = null,
        Encryption.EncryptionKey? key = null, CancellationToken cancellation = default)
    {
        // An encrypted environment compacts into an encrypted one under the same key.
        using var source = StorageEnvironment.Open(new StorageOptions { Directory = Path.GetFullPath(sourceDirectory), EncryptionKey = key });
        using var target = StorageEnvironment.Open(new StorageOptions { Directory = Path.GetFullPath(targetDirectory), Durability = DurabilityMode.Buffered, EncryptionKey = key });
        using (var read = source.ReadTransaction())
        {
            foreach (string name in read.GetTreeNames())
            {
                var tree = read.ReadTree(name)!;
                var cursor = tree.CreateCursor();
                var write = target.WriteTransaction();
                try
                {
                    var into = write.CreateTree(name);
                    long bytes = 0, copied = 0;
                    if (cursor.SeekToFirst())
                    {
                        do
                        {
                            into.Put(cursor.Key, cursor.Value);
                            bytes += cursor.Key.Length + cursor.Value.Length;
                            copied++;
                            if (bytes >= BatchBytes)
                            {
                                progress?.Invoke(name, copied);
                                cancellation.ThrowIfCancellationRequested();
                                write.Commit();
                                write.Dispose();
                                write = target.WriteTransaction();
                                into = write.CreateTree(name);
                                bytes = 0;
                            }
                        }
                        while (cursor.MoveNext());
                    }
                    write.Commit();
                    progress?.Invoke(name, copied);
                }
                finally
                {
                    write.Dispose();
                }
            }
        }
        target.Flush();
        return (source.GetStats().DataFileBytes, target.GetStats().DataFileBytes);
    }
}
