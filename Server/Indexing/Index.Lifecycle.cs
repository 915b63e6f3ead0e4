using Lucene.Net.Index;
using Lucene.Net.Store;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>Opening (or rebuilding) the Lucene index, resetting it, closing and disposing.</summary>
public sealed partial class Index
{
    /// <summary>
    /// Opens the Lucene index (<see cref="PositionalReadDirectory"/>, a NIOFSDirectory: docs/format/indexes.md); when it cannot be opened (corrupted, unreadable),
    /// deletes it and starts empty, which rebuilds it from the documents.
    /// </summary>
    private void OpenOrRebuild()
    {
        try
        {
            Open();
        }
        catch (Exception e) when (e is IOException or InvalidDataException or IndexFormatTooOldException or IndexFormatTooNewException or FormatException or ArgumentException)
        {
            Logging.Log.IndexRebuilt(_logger, Name, e.Message);
            RecordError(null, "Index files could not be opened and are rebuilt from the documents: " + e.Message);
            CloseQuietly();
            DeleteFiles();
            Open();
            return;
        }
        // Entries written before sort keys were part of the entry doc value: this format is gone, rebuild.
        if (_snapshot.Reader.Leaves.Any(l => l.AtomicReader.FieldInfos.FieldInfo(LegacyEntryField) != null))
        {
            Logging.Log.IndexRebuilt(_logger, Name, "its entries were in the format before sort keys");
            CloseQuietly();
            DeleteFiles();
            Open();
        }
    }

    private void Open()
    {
        System.IO.Directory.CreateDirectory(_luceneDir);
        // Small segments flushed for near-real-time readers stay in memory until a commit or merge writes them
        // (Lucene's NRTCachingDirectory): publishing a batch of a few changes writes no files.
        // An encrypted database's index files are sealed block by block with its key (EncryptedDirectory).
        Lucene.Net.Store.Directory files = new PositionalReadDirectory(new DirectoryInfo(_luceneDir));
        if (_db.EncryptionKey is { } key)
            files = new EncryptedDirectory(files, key);
        _directory = new NRTCachingDirectory(files, maxMergeSizeMB: 4, maxCachedMB: 32);
        IDictionary<string, string> data = new Dictionary<string, string>();
        if (DirectoryReader.IndexExists(_directory))
        {
            using var committed = DirectoryReader.Open(_directory);
            data = committed.IndexCommit.UserData;
        }
        else if (_mapReduce != null || _references != null)
        {
            DropMapResults(); // a new (or rebuilt) index maps every document again
        }
        OpenWriterAndReader(data);
    }

    /// <summary>A new writer (after <see cref="Open"/> or a rollback, which closes it) and a reader of its last commit.</summary>
    private void OpenWriterAndReader(IDictionary<string, string>? committedData = null)
    {
        // Only Search fields' text is analyzed by the writer (each with its field's analyzer); the terms field brings its own tokens.
        var config = new IndexWriterConfig(LuceneVersion.LUCENE_48, new FieldTextAnalyzer(Compiled))
        {
            OpenMode = OpenMode.CREATE_OR_APPEND,
            RAMBufferSizeMB = 64,
            // Fewer, larger segments than the defaults (10 per tier): each query looks every term up in every segment.
            // A floor of 100 KB, not 2 MB: below the floor every segment counts as floor-sized, so a whole small index
            // (a map-reduce index of 5,000 keys is under 2 MB) was rewritten with every few one-document segments that
            // single changes add — a merge thread busy on one core through the mapreduce bench's changes.
            MergePolicy = new TieredMergePolicy { SegmentsPerTier = 4, MaxMergeAtOnce = 4, FloorSegmentMB = 0.1 },
            MergeScheduler = new IndexMergeScheduler(Name, e => RecordError(null, "A merge of the index's segments failed: " + e.Message)),
            IndexDeletionPolicy = _deletionPolicy = new SnapshotDeletionPolicy(new KeepOnlyLastCommitDeletionPolicy()),
        };
        _writer = new IndexWriter(_directory, config);
        try
        {
            OpenReader(committedData ?? _writer.CommitData);
        }
        catch
        {
            RollbackQuietly(); // it holds the index's lock: the next attempt (after a full disk, say) must be able to open one
            throw;
        }
    }

    private void OpenReader(IDictionary<string, string> committedData)
    {
        var etags = new Dictionary<string, long>(StringComparer.OrdinalIgnoreCase);
        foreach (string c in PositionKeys)
            etags[c] = committedData.TryGetValue(EtagKeyPrefix + c.ToLowerInvariant(), out var v) ? long.Parse(v, CultureInfo.InvariantCulture) : 0;
        long tomb = committedData.TryGetValue(TombstoneKey, out var t) ? long.Parse(t, CultureInfo.InvariantCulture) : 0;
        // The committed entries' dynamic fields keep their ids; those added since the commit are gone with its entries.
        var dynamicFields = committedData.TryGetValue(DynamicFieldsKey, out var df) ? JsonSerializer.Deserialize<List<DynamicFieldRecord>>(df) ?? [] : [];
        Compiled.RestoreDynamicFields(dynamicFields.Select(f => (f.Name, (FieldIndexing?)f.Indexing, f.Stored)).ToList());
        Publish(DirectoryReader.Open(_writer, applyAllDeletes: true), etags, tomb);
        _reduceDirty = _mapReduce != null;
        _reducedSinceCommit.Clear();
    }

    private void CloseQuietly()
    {
        try
        {
            CommitPending(); // a graceful close leaves nothing to index again
        }
        catch (Exception)
        {
            // Closing anyway: what was not committed is indexed again from the last commit.
        }
        try
        {
            _writer?.Dispose();
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException or InvalidOperationException)
        {
        }
        // The snapshot object stays (its position is still readable by stats); its reader closes once the
        // queries holding it are done, and TryAcquireSnapshot waits for the next one.
        var snapshot = _snapshot;
        if (snapshot != null && !_snapshotReleased)
            snapshot.Reader.DecRef();
        _snapshotReleased = true;
        try
        {
            _directory?.Dispose(); // writes segments it still caches in memory
        }
        catch (IOException)
        {
            // No room for them (disk full) or the disk failed: they were not committed, and are indexed again on open.
        }
    }

    private void DeleteFiles()
    {
        if (System.IO.Directory.Exists(_luceneDir))
            System.IO.Directory.Delete(_luceneDir, recursive: true);
    }

    /// <summary>Throws away everything indexed and starts again from the first document (RavenDB's reset).</summary>
    public void Reset()
    {
        StopWorker();
        CloseQuietly();
        DeleteOutputDocuments();
        DeleteFiles();
        Open();
        Interlocked.Exchange(ref _mapAttempts, 0);
        Interlocked.Exchange(ref _mapSuccesses, 0);
        Interlocked.Exchange(ref _mapErrors, 0);
        _stopping = false;
        Start();
    }

    private void TryRebuild()
    {
        try
        {
            _blocked = true;
            WaitForLeases();
            CloseQuietly();
            DeleteFiles();
            Open();
            Logging.Log.IndexRebuilt(_logger, Name, "the worker failed repeatedly");
        }
        catch (Exception e)
        {
            Logging.Log.IndexingFailed(_logger, e, Name);
        }
        finally
        {
            _blocked = false;
        }
    }

    private void WaitForLeases()
    {
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (Volatile.Read(ref _leases) > 0 && DateTime.UtcNow < deadline)
            Thread.Sleep(5);
    }

    internal void StopWorker()
    {
        _stopping = true;
        _wake.Release();
        _worker?.Join();
        _worker = null;
        WaitForLeases();
    }

    /// <summary>Stops the worker, waits for queries, closes the storage.</summary>
    public void Dispose()
    {
        if (_disposed)
            return;
        _disposed = true;
        StopWorker();
        CloseQuietly();
        _advanced.TrySetResult();
    }
}
