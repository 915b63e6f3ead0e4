using Lucene.Net.Documents;
using Lucene.Net.Index;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
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
public sealed partial class Index : IDisposable
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

    /// <summary>An auto index a query created and no query has yet seen caught up (<see cref="IndexStore.GetOrCreateAuto"/>).</summary>
    public bool FirstBuildPending { get => _firstBuildPending; set => _firstBuildPending = value; }
    private volatile bool _firstBuildPending;
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

    /// <summary>The position key of the last compare-exchange change examined (maps that read compare-exchange values).</summary>
    internal const string CompareExchangeKey = "@cmpxchg";
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
        // Loaded documents and read compare-exchange keys (ScriptContext.CompareExchangeMarker + key) are references alike.
        _references = compiled.UsesLoad || compiled.UsesCompareExchange ? new ReferenceStore(definition.StoreId ?? definition.Name) : null;
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

    /// <summary>Errors since the index was opened (or its errors were last cleared).</summary>
    public long ErrorCount => Interlocked.Read(ref _errorCount);

    /// <summary>Forgets the recorded errors (<c>DELETE indexes/errors</c>); the next failing document records anew.</summary>
    public void ClearErrors()
    {
        lock (_errorsLock)
        {
            _errors.Clear();
            Interlocked.Exchange(ref _errorCount, 0);
        }
    }

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

    /// <summary>
    /// The keys of the index's position: its collections (documents), or the change log of its counters or time series;
    /// and <see cref="ReferencesKey"/> when its maps load documents.
    /// </summary>
    private IEnumerable<string> PositionKeys
    {
        get
        {
            IEnumerable<string> keys = Compiled.SourceType == IndexSourceType.Documents ? Compiled.Collections : [IndexItems.PositionKey(Compiled.SourceType)];
            if (Compiled.UsesLoad)
                keys = keys.Append(ReferencesKey);
            return Compiled.UsesCompareExchange ? keys.Append(CompareExchangeKey) : keys;
        }
    }

    /// <summary>The last etags of the index's collections and of tombstones in a database snapshot.</summary>
    public IndexPosition TargetOf(Transaction dbTx)
    {
        var etags = new Dictionary<string, long>(StringComparer.OrdinalIgnoreCase);
        var byCollection = dbTx.ReadTree(DocumentsStorage.CollectionEtagTree)!;
        if (Compiled.SourceType != IndexSourceType.Documents)
            etags[IndexItems.PositionKey(Compiled.SourceType)] = IndexItems.LastEtag(dbTx, Compiled.SourceType);
        foreach (string c in Compiled.SourceType == IndexSourceType.Documents ? Compiled.Collections : [])
        {
            if (c == CompiledIndex.AllDocuments)
            {
                var all = dbTx.ReadTree(DocumentsStorage.EtagTree)!.CreateCursor();
                etags[c] = all.SeekToLast() ? BinaryPrimitives.ReadInt64BigEndian(all.Key) : 0;
                continue;
            }
            var cursor = byCollection.CreateCursor();
            cursor.Prefix = DocumentsStorage.CollectionPrefix(c);
            etags[c] = cursor.SeekToLast() ? BinaryPrimitives.ReadInt64BigEndian(cursor.Key[^8..]) : 0;
        }
        if (Compiled.UsesLoad)
        {
            var all = dbTx.ReadTree(DocumentsStorage.EtagTree)!.CreateCursor();
            etags[ReferencesKey] = all.SeekToLast() ? BinaryPrimitives.ReadInt64BigEndian(all.Key) : 0;
        }
        if (Compiled.UsesCompareExchange)
            etags[CompareExchangeKey] = CompareExchange.CompareExchangeStore.LastChange(dbTx);
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

    /// <summary>The thread's scratch for <see cref="ParseForMap"/>.</summary>
    [ThreadStatic]
    private static System.Buffers.ArrayBufferWriter<byte>? t_projected;

    /// <summary>Documents mapped together on a thread-pool thread (maps that may run anywhere).</summary>
    private const int MapChunkSize = 256;

    /// <summary>Chunks being mapped ahead of the worker storing the results of the oldest.</summary>
    private const int MapChunksInFlight = 3;

    /// <summary>
    /// Map-reduce with OutputReduceToCollection: each changed key's reduce results as documents of that collection
    /// (<c>{collection}/{key hash}</c>, a suffix <c>/n</c> after the first of several; <c>@flags: Artificial, FromIndex</c>),
    /// deleted when the key is gone; written through the database's merger before the batch is published. A key that
    /// stays dirty after a crash is reduced and written again.
    /// </summary>
    private static readonly string[] ArtificialFlags = ["Artificial", "FromIndex"];

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

}

/// <summary>A committed state of an index: a reader and the position its content reflects.</summary>
public sealed record IndexSnapshot(DirectoryReader Reader, IndexPosition Position);

/// <summary>An index's position: last indexed etag per collection, last processed tombstone etag, entry count.</summary>
public sealed record IndexPosition(IReadOnlyDictionary<string, long> LastEtags, long LastTombstoneEtag, long Entries);

/// <summary>A recorded indexing error.</summary>
public sealed record IndexError(string? DocumentId, string Error, DateTime Timestamp);
