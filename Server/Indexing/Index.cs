using System.Buffers.Binary;
using System.Diagnostics;
using System.Globalization;
using System.Text;
using System.Text.Json;
using Lucene.Net.Documents;
using Lucene.Net.Index;
using Lucene.Net.Store;
using Lucene.Net.Util;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Storage;
using RavenLite.Storage.Transactions;
using LuceneDirectory = Lucene.Net.Store.Directory;

namespace RavenLite.Server.Indexing;

/// <summary>
/// One index: a Lucene.Net index in its own folder beside the database's storage
/// (<c>{db}/Indexes/{folder}/lucene</c>, layout in docs/format/indexes.md) and one background worker.
/// The worker opens a database read transaction (a snapshot), reads the documents of the index's
/// collections with etag above its last indexed etag, and the tombstones above its last tombstone
/// etag, in bounded batches; maps them; writes one Lucene document per entry (updated by id, so a
/// replayed batch is harmless) with one IndexWriter; and commits with the new positions in the
/// commit's user data, so content and position move together (a crash leaves both at the last
/// commit). Writers are never blocked: the worker only reads the database. Queries read a
/// near-real-time reader opened after each commit together with the position it holds
/// (<see cref="AcquireSnapshot"/>).
/// Thread-safety: public members are thread-safe.
/// </summary>
public sealed class Index : IDisposable
{
    /// <summary>Indexed, not stored: the document's lower-cased id (the key entries are updated and deleted by).</summary>
    internal const string IdField = "@id";

    /// <summary>
    /// One binary doc value per entry: the etag the document was mapped at (int64 LE) · id length (uint16 LE) ·
    /// lower-cased id (UTF-8) · field count n (uint16 LE) · n sort keys (int64 LE each, by field id:
    /// <see cref="SortMissing"/>, <see cref="SortOther"/> or <see cref="IndexKeys.SortableBits"/> of the field's first value)
    /// · the entry, the mapped field values as JSON (left out when the whole value would be over
    /// <see cref="MaxDocValueBytes"/>: then it is in <see cref="LargeEntryField"/>). The sort keys ride in this
    /// one doc value because Lucene.Net measures a numeric doc-value writer's memory by reflection on every value
    /// added (a numeric field per sort key cost a tenth of the build).
    /// </summary>
    internal const string EntryField = "@e";

    /// <summary>The entry doc value before sort keys were part of it (no sort keys); an index holding it is rebuilt.</summary>
    internal const string LegacyEntryField = "@entry";

    /// <summary>Sort keys: no value or null / a first value that is not a number (text, boolean, object).</summary>
    internal const long SortMissing = long.MinValue, SortOther = long.MaxValue;

    /// <summary>Stored field: an entry too long for <see cref="EntryField"/>.</summary>
    internal const string LargeEntryField = "@entry-large";

    /// <summary>Indexed as given (one token per term), documents only: no positions, frequencies or norms.</summary>
    private static readonly FieldType TermsFieldType = CreateTermsFieldType();

    private static FieldType CreateTermsFieldType()
    {
        var type = new FieldType { IsIndexed = true, IsTokenized = true, OmitNorms = true, IndexOptions = IndexOptions.DOCS_ONLY };
        type.Freeze();
        return type;
    }

    /// <summary>The longest binary doc value Lucene 4.8 accepts.</summary>
    internal const int MaxDocValueBytes = 32766;

    // A batch ends at whichever comes first: documents, bytes of document JSON, or time (a build then flushes a
    // few large segments instead of many small ones, and the database snapshot is renewed every second). A batch
    // that follows one that ran out of time (a build, a backlog) may take 3 s: the per-batch work — reducing the
    // changed keys, a near-real-time reader, the storage commit, while the mapping tasks wait for the next batch —
    // is a fixed cost per batch, which longer batches spread over more documents.
    private const int BatchDocuments = 1 << 20;
    private const long BatchBytes = 256L << 20;
    private static readonly TimeSpan BatchTime = TimeSpan.FromSeconds(1);
    private static readonly TimeSpan CatchUpBatchTime = TimeSpan.FromSeconds(3);

    /// <summary>The last batch ended on a limit with documents left (the next may take <see cref="CatchUpBatchTime"/>).</summary>
    private bool _catchingUp;

    /// <summary>
    /// Batches are visible to queries at once (a near-real-time reader per batch) but committed at most this
    /// often while the worker has more to do, and once it has caught up and no change came for
    /// <see cref="IdleBeforeCommit"/>: each commit writes and fsyncs segment files (beside the next batches, on another thread),
    /// so a build or a steady trickle of changes commits every few seconds instead of once per batch. A crash
    /// goes back to the last commit and indexes the rest again.
    /// </summary>
    private static readonly TimeSpan CommitInterval = TimeSpan.FromSeconds(5);

    /// <summary>Caught up, the index commits once no batch came for this long.</summary>
    private static readonly TimeSpan IdleBeforeCommit = TimeSpan.FromMilliseconds(200);
    private const int MaxRecordedErrors = 500;
    private const string TombstoneKey = "tombstone", EtagKeyPrefix = "etag:", DynamicFieldsKey = "dynamicFields";

    /// <summary>A field the maps created (CreateField), as the commit's user data lists them in id order.</summary>
    private sealed record DynamicFieldRecord(string Name, FieldIndexing Indexing, bool Stored);

    private readonly Database _db;
    private readonly string _luceneDir;
    private readonly ILogger _logger;
    private readonly SemaphoreSlim _wake = new(0);
    private readonly object _errorsLock = new();
    private readonly List<IndexError> _errors = [];
    private LuceneDirectory _directory = null!;
    private IndexWriter _writer = null!;
    private SnapshotDeletionPolicy _deletionPolicy = null!; // lets a backup hold the last commit's files while it copies them
    private volatile IndexSnapshot _snapshot = null!;
    private Thread? _worker;
    private volatile bool _stopping, _blocked, _disposed;
    private TaskCompletionSource _advanced = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _leases;
    private long _mapAttempts, _mapSuccesses, _mapErrors, _errorCount;
    private long _lastIndexingTicks, _lastQueryingTicks;
    private volatile string _state = "Normal";
    private bool _uncommitted; // batches published but not committed yet (worker thread only)
    private Task? _committing; // the Lucene commit running beside the worker, started and finished by the worker
    private HashSet<string>? _committingReduced; // map-reduce: the keys whose results that commit makes durable
    private bool _snapshotReleased; // the index's own reference to the published reader was given back (closing)
    private long _lastCommit = Stopwatch.GetTimestamp();
    private readonly List<List<JsonElement>> _fieldValues; // the worker's per-field values of the document being written
    private readonly MapReduceStore? _mapReduce; // map-reduce: map results per reduce key, in the database's storage
    private readonly ReferenceStore? _references; // maps that load documents: who loaded what, in the database's storage

    /// <summary>The position key of the last document change examined for loaded documents (maps that load documents).</summary>
    internal const string ReferencesKey = "@references";
    private readonly HashSet<string> _reducedSinceCommit = []; // map-reduce: keys (hash hex) whose results the next Lucene commit makes durable
    private Task? _mapResultsDurable; // map-reduce: the last storage commit of map and reduce results
    private bool _reduceDirty; // map-reduce: reduce every dirty key before the next batch (writer opened from a commit)

    /// <summary>Map-reduce: the stored field holding a reduce result as the reduce returned it (what queries answer).</summary>
    internal const string ReduceResultField = "@reduce";

    internal Index(Database db, IndexDefinition definition, CompiledIndex compiled, string folder, ILogger logger)
    {
        _db = db;
        Definition = definition;
        Compiled = compiled;
        Folder = folder;
        _logger = logger;
        _luceneDir = Path.Combine(folder, "lucene");
        _fieldValues = compiled.Fields.Select(_ => new List<JsonElement>()).ToList();
        _mapReduce = compiled.IsMapReduce ? new MapReduceStore(definition.StoreId ?? definition.Name) : null;
        _references = compiled.UsesLoad ? new ReferenceStore(definition.StoreId ?? definition.Name) : null;
        // Before Lucene.Net, an index was a storage environment in `storage/`: that format is gone, and the
        // index is rebuilt from the documents into `lucene/`.
        string legacy = Path.Combine(folder, "storage");
        if (System.IO.Directory.Exists(legacy))
        {
            System.IO.Directory.Delete(legacy, recursive: true);
            Logging.Log.IndexRebuilt(_logger, definition.Name, "its files were in the format before Lucene.Net");
        }
        OpenOrRebuild();
    }

    /// <summary>The definition as stored.</summary>
    public IndexDefinition Definition { get; }

    /// <summary>Name.</summary>
    public string Name => Definition.Name;

    /// <summary>Collections, fields and the map.</summary>
    public CompiledIndex Compiled { get; }

    /// <summary>The index's folder.</summary>
    public string Folder { get; }

    /// <summary>How far the index has got, as of its last commit (what queries see).</summary>
    public IndexPosition Position => _snapshot.Position;

    /// <summary>Normal, or Error while the worker is failing (it retries).</summary>
    public string State => _state;

    /// <summary>
    /// True while indexing waits for disk space: from a batch or commit that found the disk full until the next commit
    /// that goes through. The index keeps serving queries from its last commit and retries every second, going on by
    /// itself once space is freed.
    /// </summary>
    public bool DiskFull => _diskFull;

    private volatile bool _diskFull;

    /// <summary>Documents the map was run on / succeeded / failed.</summary>
    public (long Attempts, long Successes, long Errors) MapCounts =>
        (Interlocked.Read(ref _mapAttempts), Interlocked.Read(ref _mapSuccesses), Interlocked.Read(ref _mapErrors));

    /// <summary>Errors recorded, newest last (at most 500 kept; <see cref="ErrorCount"/> counts all).</summary>
    public IReadOnlyList<IndexError> Errors
    {
        get
        {
            lock (_errorsLock)
                return _errors.ToList();
        }
    }

    /// <summary>Errors since the index was opened.</summary>
    public long ErrorCount => Interlocked.Read(ref _errorCount);

    /// <summary>When the worker last committed (UTC), or null.</summary>
    public DateTime? LastIndexingTime => Interlocked.Read(ref _lastIndexingTicks) is var t && t > 0 ? new DateTime(t, DateTimeKind.Utc) : null;

    /// <summary>When a query last used the index (UTC), or null.</summary>
    public DateTime? LastQueryingTime => Interlocked.Read(ref _lastQueryingTicks) is var t && t > 0 ? new DateTime(t, DateTimeKind.Utc) : null;

    /// <summary>True while indexing is stopped (<c>/admin/indexes/stop</c>): the index serves queries but does not advance.</summary>
    public bool Paused
    {
        get => _paused;
        set
        {
            _paused = value;
            Notify();
        }
    }

    private volatile bool _paused;

    private volatile TaskCompletionSource? _stopped; // completed by the worker once stopped with nothing uncommitted

    /// <summary>
    /// Stops indexing (<c>/admin/indexes/stop</c>) and waits, at most <paramref name="timeout"/>, until the worker has
    /// finished its batch and committed what it indexed: a stopped index keeps what it had, whatever happens next.
    /// </summary>
    public async Task StopAsync(TimeSpan timeout)
    {
        var stopped = _stopped = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Paused = true;
        try
        {
            await stopped.Task.WaitAsync(timeout).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            // Still busy (a long batch, a full disk): it stops when done.
        }
    }

    /// <summary>Starts the background worker.</summary>
    internal void Start()
    {
        _worker = new Thread(Work) { IsBackground = true, Name = "index " + Name };
        _worker.Start();
    }

    /// <summary>
    /// Copies the files of the index's last Lucene commit into <paramref name="target"/> (a hot backup: the commit is held
    /// by the writer's <see cref="SnapshotDeletionPolicy"/> while it is copied, so indexing goes on). Returns the file names,
    /// or null when the index has no commit yet or the files went away (a writer reopened meanwhile): the restored index
    /// is then built again from the documents.
    /// </summary>
    public IReadOnlyList<string>? CopyLastCommitTo(string target)
    {
        var policy = _deletionPolicy;
        IndexCommit commit;
        try
        {
            commit = policy.Snapshot();
        }
        catch (Exception e) when (e is InvalidOperationException or ObjectDisposedException)
        {
            return null;
        }
        try
        {
            var names = commit.FileNames.ToList();
            System.IO.Directory.CreateDirectory(target);
            foreach (string name in names)
                File.Copy(Path.Combine(_luceneDir, name), Path.Combine(target, name), overwrite: true);
            return names;
        }
        catch (IOException)
        {
            return null;
        }
        finally
        {
            try
            {
                policy.Release(commit);
            }
            catch (Exception e) when (e is InvalidOperationException or ObjectDisposedException or ArgumentException)
            {
                // The writer closed meanwhile: nothing is held any more.
            }
        }
    }

    /// <summary>The worker thread's nice value for a RavenDB index priority: Low 10, Normal 0, High −5 (needs CAP_SYS_NICE).</summary>
    internal static int NiceOf(string priority) => priority switch
    {
        "Low" => 10,
        "High" => -5,
        _ => 0,
    };

    private volatile int _workerThreadId;

    /// <summary>Applies <see cref="IndexDefinition.Priority"/> (the worker's nice value) and <see cref="IndexDefinition.State"/> after they changed.</summary>
    internal void ApplySettings()
    {
        Storage.Platform.ThreadPriorities.SetNice(_workerThreadId, NiceOf(Definition.Priority));
        Notify();
    }

    /// <summary>Wakes the worker (documents were written).</summary>
    public void Notify()
    {
        if (_wake.CurrentCount == 0)
            _wake.Release();
    }

    /// <summary>Takes a lease for one query; false once the index is being closed.</summary>
    public bool TryAcquire()
    {
        Interlocked.Increment(ref _leases);
        if (!_stopping && !_blocked)
        {
            Interlocked.Exchange(ref _lastQueryingTicks, DateTime.UtcNow.Ticks);
            return true;
        }
        Interlocked.Decrement(ref _leases);
        return false;
    }

    /// <summary>Returns a lease.</summary>
    public void Release() => Interlocked.Decrement(ref _leases);

    /// <summary>
    /// The index as of its last commit: a reader and the position it holds. Use under a lease
    /// (<see cref="TryAcquire"/>) and hand it back with <see cref="ReleaseSnapshot"/>.
    /// </summary>
    public IndexSnapshot AcquireSnapshot() =>
        TryAcquireSnapshot(out var snapshot) ? snapshot : throw new InvalidOperationException($"Index '{Name}' is being closed, reset or rebuilt.");

    /// <summary>
    /// <see cref="AcquireSnapshot"/>, or false while the index's files are being closed, reset or rebuilt
    /// (its published reader is closed and no new one is there yet, for at most a few seconds).
    /// </summary>
    public bool TryAcquireSnapshot(out IndexSnapshot snapshot)
    {
        var deadline = Stopwatch.GetTimestamp() + Stopwatch.Frequency * 5;
        var spin = new SpinWait();
        while (!_disposed)
        {
            snapshot = _snapshot;
            if (snapshot.Reader.TryIncRef())
                return true;
            if (Stopwatch.GetTimestamp() > deadline)
                break;
            spin.SpinOnce(); // replaced by the worker, or being reopened
        }
        snapshot = null!;
        return false;
    }

    /// <summary>The published reader's segment count and deleted entries, and the bytes of the index's files.</summary>
    public (int Segments, int DeletedEntries, long SizeInBytes) Files()
    {
        if (!TryAcquireSnapshot(out var snapshot))
            return (0, 0, 0);
        try
        {
            long size = 0;
            try
            {
                // Files on disk and small segments still held in memory (NRTCachingDirectory) alike.
                var directory = _directory;
                foreach (string file in directory.ListAll())
                    size += directory.FileLength(file);
            }
            catch (Exception e) when (e is IOException or ObjectDisposedException)
            {
                // A file merged away (or the index reset) meanwhile: the size is a best effort.
            }
            return (snapshot.Reader.Leaves.Count, snapshot.Reader.NumDeletedDocs, size);
        }
        finally
        {
            ReleaseSnapshot(snapshot);
        }
    }

    /// <summary>Hands back a snapshot from <see cref="AcquireSnapshot"/>.</summary>
    public static void ReleaseSnapshot(IndexSnapshot snapshot) => snapshot.Reader.DecRef();

    /// <summary>The last etags of the index's collections and of tombstones in a database snapshot.</summary>
    public IndexPosition TargetOf(Transaction dbTx)
    {
        var etags = new Dictionary<string, long>(StringComparer.OrdinalIgnoreCase);
        var byCollection = dbTx.ReadTree(DocumentsStorage.CollectionEtagTree)!;
        foreach (string c in Compiled.Collections)
        {
            var cursor = byCollection.CreateCursor();
            cursor.Prefix = DocumentsStorage.CollectionPrefix(c);
            etags[c] = cursor.SeekToLast() ? BinaryPrimitives.ReadInt64BigEndian(cursor.Key[^8..]) : 0;
        }
        if (_references != null)
        {
            var all = dbTx.ReadTree(DocumentsStorage.EtagTree)!.CreateCursor();
            etags[ReferencesKey] = all.SeekToLast() ? BinaryPrimitives.ReadInt64BigEndian(all.Key) : 0;
        }
        var tomb = dbTx.ReadTree(DocumentsStorage.TombstoneTree)!.CreateCursor();
        long lastTomb = tomb.SeekToLast() ? BinaryPrimitives.ReadInt64BigEndian(tomb.Key) : 0;
        return new IndexPosition(etags, lastTomb, 0);
    }

    /// <summary>Stale: the database snapshot holds documents or tombstones this index position has not processed.</summary>
    public static bool IsBehind(IndexPosition index, IndexPosition target) =>
        index.LastTombstoneEtag < target.LastTombstoneEtag
        || target.LastEtags.Any(kv => index.LastEtags.GetValueOrDefault(kv.Key) < kv.Value);

    /// <summary>
    /// Waits until the index has processed everything in the database as of now, or the timeout
    /// passes. True when caught up.
    /// </summary>
    public async Task<bool> WaitForNonStaleAsync(TimeSpan timeout, CancellationToken cancellation)
    {
        IndexPosition target;
        using (var dbTx = _db.Environment.ReadTransaction())
            target = TargetOf(dbTx);
        var deadline = DateTime.UtcNow + timeout;
        while (true)
        {
            var advanced = Volatile.Read(ref _advanced).Task;
            if (!IsBehind(_snapshot.Position, target))
                return true;
            var left = deadline - DateTime.UtcNow;
            if (left <= TimeSpan.Zero || _stopping)
                return false;
            Notify();
            try
            {
                await advanced.WaitAsync(left < TimeSpan.FromMilliseconds(100) ? left : TimeSpan.FromMilliseconds(100), cancellation).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
            }
        }
    }

    private void Work()
    {
        _workerThreadId = Storage.Platform.ThreadPriorities.CurrentThreadId();
        Storage.Platform.ThreadPriorities.SetNice(_workerThreadId, NiceOf(Definition.Priority));
        int failures = 0;
        long lastBatch = 0;
        while (!_stopping)
        {
            try
            {
                if (!Step(ref failures, ref lastBatch))
                    break;
            }
            catch (Exception e) when (!_stopping)
            {
                // What escaped a step outside a batch (starting a commit, a wait): an index error like a failed batch — an
                // exception leaving this thread would end the whole server.
                Failed(e, ref failures);
            }
            catch (Exception) when (_stopping)
            {
                break;
            }
        }
    }

    /// <summary>One turn of the worker: a batch, a commit or a wait. False when the worker is to end.</summary>
    private bool Step(ref int failures, ref long lastBatch)
    {
        if (_committing is { IsCompleted: true } && !TryCommit(wait: false))
            return true;
        if (_paused || Definition.State == "Disabled")
        {
            // Stopped: what was indexed is committed, so that the index does not fall back to an older commit (and
            // its queries to fewer results) should a later batch or commit fail, on a full disk say.
            if (TryCommit())
                _stopped?.TrySetResult();
            _wake.Wait(TimeSpan.FromMilliseconds(250));
            return true;
        }
        bool worked;
        try
        {
            worked = IndexBatch();
            failures = 0;
            _state = "Normal";
        }
        catch (Exception e) when (!_stopping && Storage.DiskFullException.IsDiskFull(e))
        {
            WaitForSpace(e);
            return true;
        }
        catch (Exception e) when (!_stopping)
        {
            Failed(e, ref failures);
            return true;
        }
        catch (Exception) when (_stopping)
        {
            return false; // closing (the database may already refuse writes): the batch was rolled back and is indexed again on open
        }
        if (worked)
        {
            lastBatch = Stopwatch.GetTimestamp();
            return true;
        }
        var idle = Stopwatch.GetElapsedTime(lastBatch); // read once: a second reading is later, and the wait could come out negative
        if (_uncommitted && idle < IdleBeforeCommit)
        {
            // Caught up: commit once no change came for a moment, so that a trickle of single changes is published
            // batch by batch without a Lucene commit (and its fsyncs) between each.
            _wake.Wait(IdleBeforeCommit - idle);
            return true;
        }
        BeginCommit(); // caught up: make the position durable now, beside whatever comes next
        _wake.Wait(TimeSpan.FromMilliseconds(_committing != null ? 10 : 250)); // while it runs, look for its end often
        return true;
    }

    /// <summary>A failed step: an index error (logged), a rebuild after a corruption or the third failure in a row, and a pause growing with the failures.</summary>
    private void Failed(Exception e, ref int failures)
    {
        failures++;
        _state = "Error";
        RecordError(null, "Indexing failed: " + e.Message);
        Logging.Log.IndexingFailed(_logger, e, Name);
        if (e is CorruptIndexException || failures >= 3)
            TryRebuild();
        int f = Math.Min(failures, 10); // 100·f² overflows an int past 4,634 failures in a row (hours of them)
        _wake.Wait(TimeSpan.FromMilliseconds(Math.Min(5000, 100 * f * f)));
    }

    /// <summary>
    /// Commits what is pending and waits for it (or, <paramref name="wait"/> false, finishes the commit that ran beside
    /// the worker); on a full disk waits for space (false: the worker goes on at once), any other failure is an index
    /// error (and the next idle moment tries again).
    /// </summary>
    private bool TryCommit(bool wait = true)
    {
        try
        {
            if (wait)
                CommitPending();
            else
                EndCommit(wait: false);
        }
        catch (Exception e) when (!_stopping && Storage.DiskFullException.IsDiskFull(e))
        {
            WaitForSpace(e);
            return false;
        }
        catch (Exception e) when (!_stopping)
        {
            RecordError(null, "Committing the index failed: " + e.Message);
            Logging.Log.IndexingFailed(_logger, e, Name);
        }
        return true;
    }

    /// <summary>
    /// After a batch or commit found the disk full: the index goes back to its last commit (a fresh writer, as after any
    /// failed batch; Lucene may have closed the old one), reports it once per episode (an index error, the log, the
    /// Paused status), and waits a second before the worker tries again. Never a rebuild: the files are intact.
    /// </summary>
    private void WaitForSpace(Exception e)
    {
        if (!_diskFull)
        {
            _diskFull = true;
            RecordError(null, "Indexing paused: the disk is full. The index serves queries as of its last commit and goes on by itself once space is freed. " + e.Message);
            Logging.Log.IndexingFailed(_logger, e, Name);
        }
        AbandonCommit();
        RollbackQuietly();
        _uncommitted = false;
        while (true)
        {
            // A second, not cut short by new documents (each would wake the worker into another attempt).
            for (int i = 0; i < 10 && !_stopping; i++)
                Thread.Sleep(100);
            if (_stopping)
                return;
            try
            {
                OpenWriterAndReader();
                return;
            }
            catch (IOException)
            {
                // Still no room for the new writer: wait again.
            }
        }
    }

    /// <summary>Indexes one batch; false when there was nothing to do.</summary>
    private bool IndexBatch()
    {
        var position = _snapshot.Position;
        var etags = new Dictionary<string, long>(position.LastEtags, StringComparer.OrdinalIgnoreCase);
        long lastTomb = position.LastTombstoneEtag;
        int budget = BatchDocuments;
        long bytes = 0;
        bool changed = false;
        using var dbTx = _db.Environment.ReadTransaction();
        var docs = dbTx.ReadTree(DocumentsStorage.DocsTree)!;
        var byCollection = dbTx.ReadTree(DocumentsStorage.CollectionEtagTree)!;
        var started = Stopwatch.GetTimestamp();
        var batchTime = _catchingUp ? CatchUpBatchTime : BatchTime;
        bool Spent() => budget <= 0 || bytes >= BatchBytes || Stopwatch.GetElapsedTime(started) >= batchTime;
        var lookup = new EntryLookup(_snapshot.Reader); // the worker's own reference: only the worker replaces it
        var terms = new HashSet<(string Field, string Term)>();
        var loader = DocumentLoaders.From(_db.Documents, dbTx);
        long attempts = 0, successes = 0;
        WriteTransaction? mapResultsTx = null; // map and reduce results, references: opened on the first change of the batch
        var dirtied = new Dictionary<string, MapReduceStore.KeyChange>(StringComparer.Ordinal);
        if (_reduceDirty && _mapReduce != null)
        {
            // Opened from a commit (start, or after a rollback): reduce again, from all their map results, the keys whose
            // reduce results may not be in the index.
            foreach (string hash in _mapReduce.Dirty(dbTx))
                dirtied[hash] = new MapReduceStore.KeyChange { Full = true };
            if (dirtied.Count > 0)
                mapResultsTx = _db.Environment.WriteTransaction();
            _reduceDirty = false;
        }
        // Maps one document (its map results, or its entry) and records what it loaded; false when the map failed.
        byte[]? jsonBuffer = null; // a compressed document's JSON
        bool MapDocument(ReadOnlySpan<byte> lowerId, ReadOnlySpan<byte> record, string collection, long etag)
        {
            var loaded = _references != null ? new HashSet<string>(StringComparer.Ordinal) : null;
            var json = DocumentRecord.Json(record, _db.Documents, ref jsonBuffer);
            bytes += json.Length;
            bool ok = _mapReduce != null
                ? WriteMapResults(mapResultsTx ??= _db.Environment.WriteTransaction(), lowerId, DocumentRecord.Id(record), collection, json, loader, dirtied, loaded)
                : Write(lowerId, DocumentRecord.Id(record), collection, etag, json, lookup, terms, loader, loaded);
            if (loaded != null)
                _references!.Replace(mapResultsTx ??= _db.Environment.WriteTransaction(), lowerId, loaded);
            return ok;
        }

        // Maps again the (already indexed) documents that loaded this one.
        void RemapSourcesOf(ReadOnlySpan<byte> lowerLoaded)
        {
            foreach (var source in _references!.SourcesOf(dbTx, lowerLoaded))
            {
                if (!docs.TryGet(source, out var sourceRecord))
                    continue;
                string sourceCollection = DocumentRecord.Collection(sourceRecord);
                long sourceEtag = DocumentRecord.Etag(sourceRecord);
                if (!Compiled.Collections.Contains(sourceCollection, StringComparer.OrdinalIgnoreCase) || sourceEtag > etags.GetValueOrDefault(sourceCollection))
                    continue;
                MapDocument(source, sourceRecord, Compiled.Collections.First(c => string.Equals(c, sourceCollection, StringComparison.OrdinalIgnoreCase)), sourceEtag);
            }
        }

        // Maps that may run anywhere (compiled C# or an auto index's paths; no loads; a simple map creates no fields):
        // documents are mapped a chunk at a time on the thread pool, up to MapChunksInFlight chunks ahead of this thread,
        // which stores their results in order — map-reduce results in storage, a simple map's Lucene documents (built by
        // the task) added to the IndexWriter here, so index order stays etag order.
        var mapping = _references == null && (_mapReduce != null ? Compiled.MapResultsRunOnAnyThread : Compiled.MapEntryRunsOnAnyThread)
            ? new Queue<Task<MappedDocument[]>>() : null;
        List<PendingDocument>? chunk = null;
        void StoreMapped(Task<MappedDocument[]> mapped)
        {
            foreach (var m in mapped.GetAwaiter().GetResult())
            {
                bytes += m.JsonBytes;
                if (m.Error == null)
                    successes++;
                else
                    RecordError(m.Id, m.Error);
                if (_mapReduce != null)
                    _mapReduce.Replace(mapResultsTx ??= _db.Environment.WriteTransaction(), m.LowerId, m.Groups!, dirtied);
                else
                    WriteEntry(Encoding.UTF8.GetString(m.LowerId), m.HasEntry, m.Entry);
            }
        }
        MappedDocument[] Map(List<PendingDocument> toMap) => _mapReduce != null ? MapChunk(toMap) : BuildChunk(toMap);
        void SendChunk(bool last = false)
        {
            if (chunk is not { Count: > 0 })
                return;
            var toMap = chunk;
            chunk = null;
            if (last && mapping!.Count == 0)
            {
                // The batch's only chunk (a few changes): mapped here, not handed to a thread-pool thread this thread
                // would wait for (waking one costs a single change more latency than mapping it here).
                StoreMapped(Task.FromResult(Map(toMap)));
                return;
            }
            mapping!.Enqueue(Task.Run(() => Map(toMap)));
            if (mapping.Count >= MapChunksInFlight)
                StoreMapped(mapping.Dequeue());
        }

        try
        {
            foreach (string collection in Compiled.Collections)
            {
                if (Spent())
                    break;
                var cursor = byCollection.CreateCursor();
                cursor.Prefix = DocumentsStorage.CollectionPrefix(collection);
                if (!cursor.Seek(DocumentsStorage.CollectionEtagKey(collection, etags.GetValueOrDefault(collection) + 1)))
                    continue;
                do
                {
                    long etag = BinaryPrimitives.ReadInt64BigEndian(cursor.Key[^8..]);
                    var lowerId = cursor.Value;
                    if (docs.TryGet(lowerId, out var record))
                    {
                        attempts++;
                        if (mapping != null)
                        {
                            (chunk ??= new List<PendingDocument>(MapChunkSize)).Add(
                                new PendingDocument(lowerId.ToArray(), record.ToArray(), collection, etag, _mapReduce == null && lookup.Has(lowerId)));
                            if (chunk.Count == MapChunkSize)
                                SendChunk();
                        }
                        else if (MapDocument(lowerId, record, collection, etag))
                            successes++;
                    }
                    etags[collection] = etag;
                    changed = true;
                }
                while (--budget > 0 && bytes < BatchBytes && ((budget & 255) != 0 || Stopwatch.GetElapsedTime(started) < batchTime) && cursor.MoveNext());
            }
            _catchingUp = Spent();
            if (mapping != null)
            {
                SendChunk(last: true);
                while (mapping.Count > 0)
                    StoreMapped(mapping.Dequeue());
            }
            if (_references != null && budget > 0)
            {
                // Documents changed since: map again the documents that loaded them (already indexed ones; later ones come in order).
                var changes = dbTx.ReadTree(DocumentsStorage.EtagTree)!.CreateCursor();
                if (changes.Seek(DocumentsStorage.EtagKey(etags.GetValueOrDefault(ReferencesKey) + 1)))
                {
                    do
                    {
                        RemapSourcesOf(changes.Value);
                        etags[ReferencesKey] = BinaryPrimitives.ReadInt64BigEndian(changes.Key);
                        changed = true;
                    }
                    while (--budget > 0 && changes.MoveNext());
                }
            }
            Interlocked.Add(ref _mapAttempts, attempts);
            Interlocked.Add(ref _mapSuccesses, successes);
            Interlocked.Add(ref _mapErrors, attempts - successes);
            var tombs = dbTx.ReadTree(DocumentsStorage.TombstoneTree)!.CreateCursor();
            if (budget > 0 && tombs.Seek(DocumentsStorage.EtagKey(lastTomb + 1)))
            {
                do
                {
                    long etag = BinaryPrimitives.ReadInt64BigEndian(tombs.Key);
                    var v = tombs.Value;
                    int colLen = BinaryPrimitives.ReadUInt16LittleEndian(v);
                    string collection = Encoding.UTF8.GetString(v.Slice(2, colLen));
                    var lowerId = v[(2 + colLen)..];
                    // A document re-created since (in one of this index's collections) is, or will be, indexed at its
                    // new etag: its entry must stay.
                    bool recreated = docs.TryGet(lowerId, out var live) && Compiled.Collections.Contains(DocumentRecord.Collection(live), StringComparer.OrdinalIgnoreCase);
                    if (!recreated && Compiled.Collections.Contains(collection, StringComparer.OrdinalIgnoreCase))
                    {
                        if (_mapReduce != null)
                            _mapReduce.Replace(mapResultsTx ??= _db.Environment.WriteTransaction(), lowerId, [], dirtied);
                        else
                            _writer.DeleteDocuments(new Term(IdField, Encoding.UTF8.GetString(lowerId)));
                    }
                    if (_references != null)
                        RemapSourcesOf(lowerId); // a loaded document deleted: its sources load null now
                    lastTomb = etag;
                    changed = true;
                }
                while (--budget > 0 && tombs.MoveNext());
            }
            if (mapResultsTx != null)
            {
                // Map and reduce results are durable before the index entries that come from them (the keys stay dirty until then).
                var reduced = _mapReduce != null ? ReduceKeys(mapResultsTx, dirtied) : [];
                // The journal write and fsync overlap the index update; the Lucene commit waits for them (CommitPending).
                _mapResultsDurable = mapResultsTx.CommitAsync(writeHereWhenIdle: false);
                mapResultsTx.Dispose();
                mapResultsTx = null;
                WriteReduced(reduced, terms);
                if (Definition.OutputReduceToCollection is { } output && reduced.Count > 0)
                    WriteArtificialDocuments(output, reduced);
                changed |= reduced.Count > 0;
            }
        }
        catch
        {
            while (mapping is { Count: > 0 })
                mapping.Dequeue().ContinueWith(_ => { }, TaskScheduler.Default).Wait(); // no mapping task outlives the batch
            mapResultsTx?.Dispose(); // not committed: rolled back
            AbandonCommit();
            _writer.Rollback(); // everything since the last commit is dropped; the writer is closed and reopened
            _uncommitted = false;
            OpenWriterAndReader();
            throw;
        }
        if (!changed)
            return false;
        _uncommitted = true;
        var current = _snapshot.Reader;
        var reopened = DirectoryReader.OpenIfChanged(current, _writer, applyAllDeletes: true);
        if (reopened == null)
        {
            current.IncRef(); // the same content under the new position
            reopened = current;
        }
        Publish(reopened, etags, lastTomb);
        Interlocked.Exchange(ref _lastIndexingTicks, DateTime.UtcNow.Ticks);
        Interlocked.Exchange(ref _advanced, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();
        if (Stopwatch.GetElapsedTime(_lastCommit) >= CommitInterval)
            BeginCommit(); // after publishing, and beside the next batches: they are not held up by its fsyncs
        return true;
    }

    /// <summary>
    /// Maps one document and writes its entry; false when the map failed (an index error; the document
    /// loses its entry). A document the published reader has no entry for is added without a delete-by-id
    /// (that lookup, applied to every segment at flush, was most of a first build's cost). Entries are
    /// written in etag order, so index order is etag order within a collection: unordered results and the ties of
    /// ordered ones come in that order (queries and tests rely on it; adding entries from several threads, a segment
    /// each, broke it). Maps that may run anywhere take the other path: <see cref="BuildChunk"/> maps and builds the
    /// Lucene documents on the thread pool, <see cref="WriteEntry"/> adds them here in order. (An earlier try at
    /// mapping on both cores, the whole batch first, was slower and took twice the memory.)
    /// </summary>
    private bool Write(ReadOnlySpan<byte> lowerId, string id, string collection, long etag, ReadOnlySpan<byte> json, EntryLookup lookup, HashSet<(string Field, string Term)> terms, DocumentLoader loader, HashSet<string>? loaded)
    {
        string key = Encoding.UTF8.GetString(lowerId);
        var (entry, error) = EntryOf(key, id, collection, etag, json, _fieldValues, terms, loader, loaded);
        if (error != null)
            RecordError(id, error);
        WriteEntry(key, lookup.Has(lowerId), entry);
        return error == null;
    }

    /// <summary>
    /// A simple map: one document's Lucene entry (null when it maps to nothing), or the reason its map failed (then no
    /// entry). <paramref name="fieldValues"/> and <paramref name="terms"/> are the caller's scratch space: the field
    /// values stay valid while the document is parsed, so the entry is built from them, not from its JSON parsed again.
    /// </summary>
    private (Document? Entry, string? Error) EntryOf(string lowerId, string id, string collection, long etag, ReadOnlySpan<byte> json,
        List<List<JsonElement>> fieldValues, HashSet<(string Field, string Term)> terms, DocumentLoader? loader, HashSet<string>? loaded)
    {
        MappedEntry mapped = default;
        JsonDocument? parsed = null;
        try
        {
            try
            {
                parsed = ParseForMap(json, collection);
                mapped = Compiled.MapEntry(parsed.RootElement, collection, id, fieldValues, loader, loaded);
            }
            catch (Exception e) when (e is JsonException or IndexMapException)
            {
                return (null, e.Message);
            }
            return (mapped.Json.Length > 0 ? Entry(lowerId, etag, mapped.Json, fieldValues, terms) : null, null);
        }
        finally
        {
            mapped.Dispose();
            parsed?.Dispose();
        }
    }

    /// <summary>
    /// A document parsed for the map of its collection: only the top-level properties the map reads when it says which
    /// (<see cref="CompiledIndex.ProjectionOf"/>), the whole document otherwise (or when the scan declines).
    /// </summary>
    private JsonDocument ParseForMap(ReadOnlySpan<byte> json, string collection)
    {
        if (Compiled.ProjectionOf(collection) is { } projection)
        {
            var buffer = t_projected ??= new System.Buffers.ArrayBufferWriter<byte>(1024);
            if (projection.TryProject(json, buffer))
            {
                var projected = new Utf8JsonReader(buffer.WrittenSpan);
                var document = JsonDocument.ParseValue(ref projected); // a copy: the buffer is the thread's scratch
                if (buffer.Capacity > 1 << 20)
                    t_projected = null; // a huge document's buffer is not kept
                return document;
            }
        }
        var reader = new Utf8JsonReader(json);
        return JsonDocument.ParseValue(ref reader);
    }

    /// <summary>The thread's scratch for <see cref="ParseForMap"/>.</summary>
    [ThreadStatic]
    private static System.Buffers.ArrayBufferWriter<byte>? t_projected;

    /// <summary>Map-reduce: one document's map results grouped by reduce key, or the reason its map failed (then none).</summary>
    private (List<(string KeyJson, byte[] Results)> Groups, string? Error) MapResultsOf(ReadOnlySpan<byte> json, string collection, string id, DocumentLoader? loader, HashSet<string>? loaded)
    {
        try
        {
            using var parsed = ParseForMap(json, collection);
            return (Compiled.MapResults(parsed.RootElement, collection, id, loader, loaded), null);
        }
        catch (Exception e) when (e is JsonException or IndexMapException)
        {
            return ([], e.Message);
        }
    }

    /// <summary>Documents mapped together on a thread-pool thread (maps that may run anywhere).</summary>
    private const int MapChunkSize = 256;

    /// <summary>Chunks being mapped ahead of the worker storing the results of the oldest.</summary>
    private const int MapChunksInFlight = 3;

    /// <summary>A document of the worker's snapshot (id and record copied) for a mapping task; <see cref="HasEntry"/>: the published index has an entry for it (simple maps).</summary>
    private sealed record PendingDocument(byte[] LowerId, byte[] Record, string Collection, long Etag, bool HasEntry);

    /// <summary>
    /// What a task made of one document: its map results grouped by reduce key (map-reduce), or its Lucene document
    /// (a simple map; null when it maps to nothing), and the reason its map failed (then no results, no entry).
    /// </summary>
    private sealed record MappedDocument(byte[] LowerId, string Id, List<(string KeyJson, byte[] Results)>? Groups, Document? Entry, bool HasEntry, int JsonBytes, string? Error);

    /// <summary>Map-reduce: maps documents (records of the worker's snapshot, copied) off the worker thread: no storage is written here.</summary>
    private MappedDocument[] MapChunk(List<PendingDocument> chunk)
    {
        var mapped = new MappedDocument[chunk.Count];
        byte[]? jsonBuffer = null;
        for (int i = 0; i < chunk.Count; i++)
        {
            var d = chunk[i];
            string id = DocumentRecord.Id(d.Record);
            var json = DocumentRecord.Json(d.Record, _db.Documents, ref jsonBuffer);
            var (groups, error) = MapResultsOf(json, d.Collection, id, loader: null, loaded: null);
            mapped[i] = new MappedDocument(d.LowerId, id, groups, null, false, json.Length, error);
        }
        return mapped;
    }

    /// <summary>
    /// A simple map: maps documents and builds their Lucene documents off the worker thread (each task with its own
    /// field values and terms); the worker adds them in order (<see cref="WriteEntry"/>).
    /// </summary>
    private MappedDocument[] BuildChunk(List<PendingDocument> chunk)
    {
        var built = new MappedDocument[chunk.Count];
        var fieldValues = Compiled.Fields.Select(_ => new List<JsonElement>()).ToList();
        var terms = new HashSet<(string Field, string Term)>();
        byte[]? jsonBuffer = null;
        for (int i = 0; i < chunk.Count; i++)
        {
            var d = chunk[i];
            string id = DocumentRecord.Id(d.Record);
            var json = DocumentRecord.Json(d.Record, _db.Documents, ref jsonBuffer);
            var (entry, error) = EntryOf(Encoding.UTF8.GetString(d.LowerId), id, d.Collection, d.Etag, json, fieldValues, terms, loader: null, loaded: null);
            built[i] = new MappedDocument(d.LowerId, id, null, entry, d.HasEntry, json.Length, error);
        }
        return built;
    }

    /// <summary>A simple map's entry for a document: added, replacing the published one, or (null) the published one deleted.</summary>
    private void WriteEntry(string lowerId, bool hasEntry, Document? entry)
    {
        if (entry != null && hasEntry)
            _writer.UpdateDocument(new Term(IdField, lowerId), entry);
        else if (entry != null)
            _writer.AddDocument(entry);
        else if (hasEntry)
            _writer.DeleteDocuments(new Term(IdField, lowerId));
    }

    /// <summary>Map-reduce: replaces one document's map results in storage (its keys become dirty); false when the map failed.</summary>
    private bool WriteMapResults(WriteTransaction tx, ReadOnlySpan<byte> lowerId, string id, string collection, ReadOnlySpan<byte> json, DocumentLoader loader, Dictionary<string, MapReduceStore.KeyChange> dirtied, HashSet<string>? loaded)
    {
        var (groups, error) = MapResultsOf(json, collection, id, loader, loaded);
        if (error != null)
            RecordError(id, error);
        _mapReduce!.Replace(tx, lowerId, groups, dirtied);
        return error == null;
    }

    /// <summary>
    /// Map-reduce: the new reduce results of each changed key (hash hex), stored in <paramref name="tx"/>: from the key's
    /// stored reduce results and its added map results when it only gained some, else from all its map results.
    /// </summary>
    private List<(string Hash, List<byte[]> Outputs)> ReduceKeys(WriteTransaction tx, Dictionary<string, MapReduceStore.KeyChange> changes)
    {
        var reduced = new List<(string, List<byte[]>)>(changes.Count);
        foreach (var (hash, change) in changes)
        {
            List<byte[]> outputs;
            try
            {
                var previous = change.Full ? null : _mapReduce!.Reduced(tx, hash);
                outputs = previous != null ? Compiled.Reduce([previous, .. change.Added]) : Compiled.Reduce(_mapReduce!.Results(tx, hash));
            }
            catch (IndexMapException e)
            {
                RecordError(null, e.Message);
                outputs = [];
            }
            _mapReduce!.SetReduced(tx, hash, outputs.Count == 0 ? null : CompiledIndex.JsonArray(outputs));
            reduced.Add((hash, outputs));
        }
        return reduced;
    }

    /// <summary>
    /// Map-reduce with OutputReduceToCollection: each changed key's reduce results as documents of that collection
    /// (<c>{collection}/{key hash}</c>, a suffix <c>/n</c> after the first of several; <c>@flags: Artificial, FromIndex</c>),
    /// deleted when the key is gone; written through the database's merger before the batch is published. A key that
    /// stays dirty after a crash is reduced and written again.
    /// </summary>
    private static readonly string[] ArtificialFlags = ["Artificial", "FromIndex"];

    private void WriteArtificialDocuments(string collection, List<(string Hash, List<byte[]> Outputs)> reduced)
    {
        var byKey = new List<(string Id, List<(string Id, byte[]? Json)> Outputs)>();
        foreach (var (hash, outputs) in reduced)
        {
            string id = collection + "/" + hash.ToLowerInvariant();
            var puts = new List<(string Id, byte[]? Json)>();
            byKey.Add((id, puts));
            if (outputs.Count == 0)
                puts.Add((id, null));
            for (int i = 0; i < outputs.Count; i++)
            {
                var buffer = new System.Buffers.ArrayBufferWriter<byte>(outputs[i].Length + 96);
                using (var w = new Utf8JsonWriter(buffer))
                using (var parsed = JsonDocument.Parse(outputs[i]))
                {
                    w.WriteStartObject();
                    foreach (var p in parsed.RootElement.EnumerateObject())
                        if (p.Name != "@metadata")
                            p.WriteTo(w);
                    w.WriteStartObject("@metadata");
                    w.WriteString("@collection", collection);
                    w.WriteEndObject();
                    w.WriteEndObject();
                }
                puts.Add((i == 0 ? id : id + "/" + i.ToString(CultureInfo.InvariantCulture), buffer.WrittenSpan.ToArray()));
            }
        }
        var pattern = Compiled.OutputReferences;
        string referencesCollection = Definition.PatternReferencesCollectionName ?? collection + "/References";
        var command = new TransactionMerger.DelegateCommand<int>(ctx =>
        {
            // Reference documents (PatternForOutputReduceToCollectionReferences): the outputs each lists, as changed here.
            var listed = new Dictionary<string, (HashSet<string> Add, HashSet<string> Remove)>(StringComparer.OrdinalIgnoreCase);
            void Reference(string? referenceId, string outputId, bool add)
            {
                if (referenceId == null)
                    return;
                if (!listed.TryGetValue(referenceId, out var change))
                    listed[referenceId] = change = (new(StringComparer.OrdinalIgnoreCase), new(StringComparer.OrdinalIgnoreCase));
                (add ? change.Add : change.Remove).Add(outputId);
                (add ? change.Remove : change.Add).Remove(outputId);
            }
            string? ReferenceOf(byte[] json)
            {
                using var parsed = JsonDocument.Parse(json);
                return pattern!.IdOf(parsed.RootElement);
            }
            void Remove(string id)
            {
                if (pattern != null && ctx.Get(id) is { } old)
                    Reference(ReferenceOf(old.Json), id, add: false);
                ctx.Delete(id, null);
            }
            foreach (var (key, outputs) in byKey)
            {
                for (int i = 0; i < outputs.Count; i++)
                {
                    var (id, json) = outputs[i];
                    if (json == null)
                    {
                        Remove(id);
                        continue;
                    }
                    if (pattern != null)
                    {
                        if (ctx.Get(id) is { } old && ReferenceOf(old.Json) is { } before)
                            Reference(before, id, add: false);
                        Reference(ReferenceOf(json), id, add: true);
                    }
                    ctx.PutFlagged(id, json, ArtificialFlags);
                }
                // A key with fewer outputs than before: the extra ones go.
                for (int i = Math.Max(outputs.Count, 1); ctx.Get(key + "/" + i.ToString(CultureInfo.InvariantCulture)) != null; i++)
                    Remove(key + "/" + i.ToString(CultureInfo.InvariantCulture));
            }
            foreach (var (referenceId, (add, remove)) in listed)
                WriteReference(ctx, referenceId, referencesCollection, add, remove);
            return byKey.Count;
        }, byKey.Sum(k => k.Outputs.Sum(p => (long)(p.Json?.Length ?? 0))));
        _db.Merger.EnqueueAsync(command).GetAwaiter().GetResult();
    }

    /// <summary>
    /// Deletes the documents the index wrote to its output collection (those flagged Artificial) and its reference
    /// documents: the index is deleted or reset (a rebuild writes the outputs again).
    /// </summary>
    internal void DeleteOutputDocuments()
    {
        if (Definition.OutputReduceToCollection is not { } collection)
            return;
        var ids = new List<string>();
        using (var tx = _db.Environment.ReadTransaction())
        {
            foreach (var doc in _db.Documents.Scan(tx, collection))
            {
                using var parsed = JsonDocument.Parse(doc.Json);
                if (parsed.RootElement.TryGetProperty("@metadata", out var meta) && meta.TryGetProperty("@flags", out var flags)
                    && flags.ValueKind == JsonValueKind.String && flags.GetString()!.Contains("Artificial", StringComparison.Ordinal))
                    ids.Add(doc.Id);
            }
            if (Definition.PatternForOutputReduceToCollectionReferences != null)
                ids.AddRange(_db.Documents.Scan(tx, Definition.PatternReferencesCollectionName ?? collection + "/References").Select(d => d.Id));
        }
        foreach (var chunk in ids.Chunk(1024))
            _db.Merger.EnqueueAsync(new TransactionMerger.DelegateCommand<int>(ctx =>
            {
                foreach (string id in chunk)
                    ctx.Delete(id, null);
                return chunk.Length;
            })).GetAwaiter().GetResult();
    }

    /// <summary>A reference document listing reduce outputs (<c>ReduceOutputs</c>): updated by the changes, deleted when it lists none.</summary>
    private static void WriteReference(Documents.DocumentsWriteContext ctx, string id, string collection, HashSet<string> add, HashSet<string> remove)
    {
        var outputs = new List<string>();
        if (ctx.Get(id) is { } existing)
        {
            using var parsed = JsonDocument.Parse(existing.Json);
            if (parsed.RootElement.TryGetProperty("ReduceOutputs", out var list) && list.ValueKind == JsonValueKind.Array)
                outputs.AddRange(list.EnumerateArray().Where(v => v.ValueKind == JsonValueKind.String).Select(v => v.GetString()!));
        }
        int before = outputs.Count;
        outputs.RemoveAll(remove.Contains);
        foreach (string o in add.Order(StringComparer.Ordinal))
            if (!outputs.Contains(o, StringComparer.OrdinalIgnoreCase))
                outputs.Add(o);
        if (outputs.Count == 0)
        {
            if (before > 0)
                ctx.Delete(id, null);
            return;
        }
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(64 + outputs.Sum(o => o.Length + 3));
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WriteStartArray("ReduceOutputs");
            foreach (string o in outputs)
                w.WriteStringValue(o);
            w.WriteEndArray();
            w.WriteStartObject("@metadata");
            w.WriteString("@collection", collection);
            w.WriteEndObject();
            w.WriteEndObject();
        }
        ctx.Put(id, buffer.WrittenSpan, null);
    }

    /// <summary>Map-reduce: replaces each key's entries with its reduce results (none: the key is gone).</summary>
    private void WriteReduced(List<(string Hash, List<byte[]> Outputs)> reduced, HashSet<(string Field, string Term)> terms)
    {
        foreach (var (hash, outputs) in reduced)
        {
            string key = "mr/" + hash.ToLowerInvariant();
            var id = new Term(IdField, key);
            _reducedSinceCommit.Add(hash);
            if (outputs.Count == 0)
            {
                _writer.DeleteDocuments(id);
                continue;
            }
            var documents = new List<Document>();
            foreach (var output in outputs)
            {
                using var entry = Compiled.EntryOfResult(output, _fieldValues);
                var doc = Entry(key, 0, entry.Json, _fieldValues, terms);
                doc.Add(new StoredField(ReduceResultField, output));
                documents.Add(doc);
            }
            _writer.UpdateDocuments(id, documents);
        }
    }

    /// <summary>Deletes the index's stored map and reduce results and references (the index is new, rebuilt or deleted).</summary>
    internal void DropMapResults()
    {
        if (_mapReduce == null && _references == null)
            return;
        using var tx = _db.Environment.WriteTransaction();
        _mapReduce?.Drop(tx);
        _references?.Drop(tx);
        tx.Commit();
    }

    /// <summary>
    /// Makes what the published reader shows durable, and waits for it: the commit running beside the worker (if any),
    /// then one of what was published since.
    /// </summary>
    private void CommitPending()
    {
        EndCommit(wait: true);
        if (!_uncommitted)
            return;
        BeginCommit();
        EndCommit(wait: true);
    }

    /// <summary>
    /// Starts a Lucene commit of what the published reader shows, beside the worker (unless one is running): its user
    /// data is the position of the last published batch; the map and reduce results behind it are made durable first;
    /// then the index folder is fsynced (Lucene.Net does not do that itself). Later batches go on meanwhile: Lucene's
    /// writer takes documents during a commit, and a commit that happens to hold some of them is harmless, as they are
    /// after its position and are indexed again (replacing their entries) if the index ever reopens from it.
    /// </summary>
    private void BeginCommit()
    {
        if (_committing != null || !_uncommitted)
            return;
        _writer.SetCommitData(CommitData(_snapshot.Position));
        _uncommitted = false;
        _lastCommit = Stopwatch.GetTimestamp();
        _committingReduced = _reducedSinceCommit.Count > 0 ? [.. _reducedSinceCommit] : null;
        _reducedSinceCommit.Clear();
        var writer = _writer;
        var mapResultsDurable = _mapResultsDurable;
        string folder = _luceneDir;
        _committing = Task.Run(() =>
        {
            mapResultsDurable?.GetAwaiter().GetResult(); // map and reduce results are durable before the entries made from them
            writer.Commit();
            new Storage.Platform.DiskFileSystem().SyncDirectory(folder);
        });
    }

    /// <summary>A commit's user data: the position (etags per collection, tombstone etag) and the dynamic fields so far.</summary>
    private Dictionary<string, string> CommitData(IndexPosition position)
    {
        var data = new Dictionary<string, string>();
        foreach (var (c, e) in position.LastEtags)
            data[EtagKeyPrefix + c.ToLowerInvariant()] = e.ToString(CultureInfo.InvariantCulture);
        data[TombstoneKey] = position.LastTombstoneEtag.ToString(CultureInfo.InvariantCulture);
        if (Compiled.DynamicFields is { Count: > 0 } dynamicFields)
            data[DynamicFieldsKey] = JsonSerializer.Serialize(dynamicFields.Select(f => new DynamicFieldRecord(f.Name, f.Indexing, f.Stored)));
        return data;
    }

    /// <summary>
    /// Finishes the commit started by <see cref="BeginCommit"/> once it is done (or waits for it): after a success, the
    /// map-reduce keys it made durable are no longer dirty (but those reduced again since); a failure is rethrown, and
    /// what it was to commit is pending again.
    /// </summary>
    private void EndCommit(bool wait)
    {
        var committing = _committing;
        if (committing == null || (!wait && !committing.IsCompleted))
            return;
        WaitQuietly(committing);
        _committing = null;
        var reduced = _committingReduced;
        _committingReduced = null;
        if (committing.Exception is { } failed)
        {
            _uncommitted = true;
            if (reduced != null)
                _reducedSinceCommit.UnionWith(reduced);
            System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw(failed.InnerException ?? failed);
        }
        _diskFull = false; // a commit went through: there is room again (a batch alone may not have written anything)
        if (_mapReduce != null && reduced != null)
        {
            reduced.ExceptWith(_reducedSinceCommit);
            if (reduced.Count > 0)
            {
                using var tx = _db.Environment.WriteTransaction();
                _mapReduce.Clean(tx, reduced);
                tx.Commit();
            }
        }
    }

    /// <summary>Before a rollback: waits for a running commit and forgets it (the reopened writer starts from the last commit there is).</summary>
    private void AbandonCommit()
    {
        if (_committing != null)
            WaitQuietly(_committing);
        _committing = null;
        _committingReduced = null;
    }

    /// <summary>Waits for <paramref name="task"/>; its failure, if any, is left in it.</summary>
    private static void WaitQuietly(Task task)
    {
        try
        {
            task.Wait();
        }
        catch (AggregateException)
        {
        }
    }

    /// <summary>Rolls the writer back to its last commit and closes it (releasing the index's lock); a no-op when Lucene closed it already.</summary>
    private void RollbackQuietly()
    {
        try
        {
            _writer.Rollback();
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException or InvalidOperationException)
        {
        }
    }

    /// <summary>The Lucene document of one entry: id, etag, sort keys and entry in one doc value; every term of its fields indexed.</summary>
    private Document Entry(string lowerId, long etag, byte[] entry, List<List<JsonElement>> fieldValues, HashSet<(string Field, string Term)> terms)
    {
        terms.Clear();
        var fields = Compiled.Fields;
        int idBytes = Encoding.UTF8.GetByteCount(lowerId);
        int header = 12 + idBytes + 8 * fields.Count;
        bool inline = header + entry.Length <= MaxDocValueBytes;
        var value = new byte[header + (inline ? entry.Length : 0)];
        BinaryPrimitives.WriteInt64LittleEndian(value, etag);
        BinaryPrimitives.WriteUInt16LittleEndian(value.AsSpan(8), (ushort)idBytes);
        Encoding.UTF8.GetBytes(lowerId, value.AsSpan(10));
        BinaryPrimitives.WriteUInt16LittleEndian(value.AsSpan(10 + idBytes), (ushort)fields.Count);
        // Every field's sort key, so a sorted query or a facet can rank and aggregate from this doc value alone.
        for (int i = 0; i < fields.Count; i++)
        {
            var field = fields[i];
            long sort = SortMissing;
            var values = i < fieldValues.Count ? fieldValues[i] : [];
            if (!field.Spatial && values.Count > 0)
            {
                if (values.Count > 1)
                    terms.Add((IndexKeys.FieldName(field.Id, IndexKeys.Multi), "")); // facets may count a segment without it from sort keys
                var first = values[0];
                sort = first.ValueKind switch
                {
                    JsonValueKind.Number => IndexKeys.SortableBits(first.GetDouble()),
                    JsonValueKind.Null => SortMissing,
                    _ => SortOther,
                };
            }
            BinaryPrimitives.WriteInt64LittleEndian(value.AsSpan(12 + idBytes + 8 * field.Id), sort);
        }
        if (inline)
            entry.CopyTo(value, header);
        var doc = new Document
        {
            new StringField(IdField, lowerId, Field.Store.NO),
            new BinaryDocValuesField(EntryField, new BytesRef(value)),
        };
        if (!inline)
            doc.Add(new StoredField(LargeEntryField, entry));
        for (int i = 0; i < fields.Count; i++)
        {
            var field = fields[i];
            var values = i < fieldValues.Count ? fieldValues[i] : [];
            if (values.Count == 0)
                continue;
            IndexKeys.TermsOf(field, values, terms);
            if (field.Indexing != FieldIndexing.Search)
                continue;
            // Search fields are also analyzed text (SearchAnalyzer, the writer's analyzer) for search().
            foreach (var v in values)
                if (v.ValueKind == JsonValueKind.String)
                    doc.Add(new TextField(SearchQuery.FieldName(field.Id), v.GetString()!, Field.Store.NO));
        }
        var tokens = new List<string>(terms.Count);
        foreach (var (field, term) in terms)
            tokens.Add(IndexKeys.TermText(field, term));
        doc.Add(new Field(IndexKeys.TermsField, new TermsTokenStream(tokens), TermsFieldType));
        return doc;
    }

    /// <summary>Makes <paramref name="reader"/> (holding the given positions) what queries see, and lets the previous one go once its queries are done.</summary>
    private void Publish(DirectoryReader reader, IReadOnlyDictionary<string, long> etags, long lastTomb)
    {
        var previous = _snapshot;
        _snapshot = new IndexSnapshot(reader, new IndexPosition(new Dictionary<string, long>(etags, StringComparer.OrdinalIgnoreCase), lastTomb, reader.NumDocs));
        if (previous != null && !_snapshotReleased)
            previous.Reader.DecRef();
        _snapshotReleased = false;
        _db.Documents.Changes.Publish(new Changes.ChangeEvent(Changes.ChangeKind.Index, "BatchCompleted", Name: Name));
    }

    private void RecordError(string? documentId, string message)
    {
        Interlocked.Increment(ref _errorCount);
        lock (_errorsLock)
        {
            _errors.Add(new IndexError(documentId, message, DateTime.UtcNow));
            if (_errors.Count > MaxRecordedErrors)
                _errors.RemoveAt(0);
        }
    }

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
        _directory = new NRTCachingDirectory(new PositionalReadDirectory(new DirectoryInfo(_luceneDir)), maxMergeSizeMB: 4, maxCachedMB: 32);
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
        foreach (string c in _references != null ? Compiled.Collections.Append(ReferencesKey) : Compiled.Collections)
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

/// <summary>A committed state of an index: a reader and the position its content reflects.</summary>
public sealed record IndexSnapshot(DirectoryReader Reader, IndexPosition Position);

/// <summary>An index's position: last indexed etag per collection, last processed tombstone etag, entry count.</summary>
public sealed record IndexPosition(IReadOnlyDictionary<string, long> LastEtags, long LastTombstoneEtag, long Entries);

/// <summary>A recorded indexing error.</summary>
public sealed record IndexError(string? DocumentId, string Error, DateTime Timestamp);
