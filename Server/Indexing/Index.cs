using System.Buffers;
using System.Buffers.Binary;
using System.Text;
using System.Text.Json;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Storage;
using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Server.Indexing;

/// <summary>
/// One index: its own storage environment in its own folder beside the database's storage
/// (<c>{db}/Indexes/{folder}/storage</c>, layout in docs/format/indexes.md) and one background worker.
/// The worker opens a database read transaction (a snapshot), reads the documents of the index's
/// collections with etag above its last indexed etag, and the tombstones above its last tombstone
/// etag, in bounded batches; maps them; writes entries and postings; and commits the new
/// positions in the same index transaction, so content and position move together (a crash
/// leaves both at the last commit). Writers are never blocked: the worker only reads the database.
/// Queries read the index through its own read transactions (snapshots).
/// Thread-safety: public members are thread-safe.
/// </summary>
public sealed class Index : IDisposable
{
    internal const string EntriesTree = "Entries", EntryIdsTree = "EntryIds", PostingsTree = "Postings", MetaTree = "Meta";
    private const int BatchDocuments = 16384;
    private const int MaxRecordedErrors = 500;
    private static readonly byte[] TombstoneKey = "tombstone"u8.ToArray(), NextEntryKey = "next-entry"u8.ToArray();

    private readonly Database _db;
    private readonly string _storageDir;
    private readonly ILogger _logger;
    private readonly SemaphoreSlim _wake = new(0);
    private readonly object _errorsLock = new();
    private readonly List<IndexError> _errors = [];
    private StorageEnvironment _env;
    private Thread? _worker;
    private volatile bool _stopping, _blocked, _disposed;
    private volatile IndexPosition _position;
    private TaskCompletionSource _advanced = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _leases;
    private long _mapAttempts, _mapSuccesses, _mapErrors, _errorCount;
    private long _lastIndexingTicks, _lastQueryingTicks;
    private volatile string _state = "Normal";

    internal Index(Database db, IndexDefinition definition, CompiledIndex compiled, string folder, ILogger logger)
    {
        _db = db;
        Definition = definition;
        Compiled = compiled;
        Folder = folder;
        _logger = logger;
        _storageDir = Path.Combine(folder, "storage");
        _env = OpenOrRebuild();
        _position = ReadPosition();
    }

    /// <summary>The definition as stored.</summary>
    public IndexDefinition Definition { get; }

    /// <summary>Name.</summary>
    public string Name => Definition.Name;

    /// <summary>Collections, fields and the map.</summary>
    public CompiledIndex Compiled { get; }

    /// <summary>The index's folder.</summary>
    public string Folder { get; }

    /// <summary>How far the index has got, as of its last commit.</summary>
    public IndexPosition Position => _position;

    /// <summary>Normal, or Error while the worker is failing (it retries).</summary>
    public string State => _state;

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

    /// <summary>Starts the background worker.</summary>
    internal void Start()
    {
        _worker = new Thread(Work) { IsBackground = true, Name = "index " + Name };
        _worker.Start();
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

    /// <summary>A snapshot of the index (use under a lease).</summary>
    public ReadTransaction ReadTransaction() => _env.ReadTransaction();

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
        var tomb = dbTx.ReadTree(DocumentsStorage.TombstoneTree)!.CreateCursor();
        long lastTomb = tomb.SeekToLast() ? BinaryPrimitives.ReadInt64BigEndian(tomb.Key) : 0;
        return new IndexPosition(etags, lastTomb, 0);
    }

    /// <summary>Stale: the database snapshot holds documents or tombstones this index position has not processed.</summary>
    public static bool IsBehind(IndexPosition index, IndexPosition target) =>
        index.LastTombstoneEtag < target.LastTombstoneEtag
        || target.LastEtags.Any(kv => index.LastEtags.GetValueOrDefault(kv.Key) < kv.Value);

    /// <summary>The position stored in an index snapshot.</summary>
    public IndexPosition PositionIn(Transaction indexTx)
    {
        var meta = indexTx.ReadTree(MetaTree);
        var etags = new Dictionary<string, long>(StringComparer.OrdinalIgnoreCase);
        foreach (string c in Compiled.Collections)
            etags[c] = meta != null && meta.TryGet(EtagKey(c), out var v) ? BinaryPrimitives.ReadInt64LittleEndian(v) : 0;
        long tomb = meta != null && meta.TryGet(TombstoneKey, out var t) ? BinaryPrimitives.ReadInt64LittleEndian(t) : 0;
        long entries = indexTx.ReadTree(EntriesTree)?.Count ?? 0;
        return new IndexPosition(etags, tomb, entries);
    }

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
            if (!IsBehind(_position, target))
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

    /// <summary>Reads one entry: the lower-cased document id, the etag it was mapped at, and its field values (JSON).</summary>
    internal static bool TryReadEntry(Tree entryIds, long entryId, out ReadOnlySpan<byte> lowerId, out long etag, out ReadOnlySpan<byte> entryJson)
    {
        var key = new byte[8];
        BinaryPrimitives.WriteInt64BigEndian(key, entryId);
        if (!entryIds.TryGet(key, out var value))
        {
            lowerId = default;
            entryJson = default;
            etag = 0;
            return false;
        }
        etag = BinaryPrimitives.ReadInt64LittleEndian(value);
        int idLen = BinaryPrimitives.ReadUInt16LittleEndian(value[8..]);
        lowerId = value.Slice(10, idLen);
        entryJson = value[(10 + idLen)..];
        return true;
    }

    private void Work()
    {
        int failures = 0;
        while (!_stopping)
        {
            if (_paused)
            {
                _wake.Wait(TimeSpan.FromMilliseconds(250));
                continue;
            }
            bool worked;
            try
            {
                worked = IndexBatch();
                failures = 0;
                _state = "Normal";
            }
            catch (Exception e) when (!_stopping)
            {
                failures++;
                _state = "Error";
                RecordError(null, "Indexing failed: " + e.Message);
                Hosting.Log.IndexingFailed(_logger, e, Name);
                if (e is StorageCorruptionException || failures >= 3)
                    TryRebuild();
                _wake.Wait(TimeSpan.FromMilliseconds(Math.Min(5000, 100 * failures * failures)));
                continue;
            }
            if (!worked)
                _wake.Wait(TimeSpan.FromMilliseconds(250));
        }
    }

    /// <summary>Indexes one batch; false when there was nothing to do.</summary>
    private bool IndexBatch()
    {
        var position = _position;
        var etags = new Dictionary<string, long>(position.LastEtags, StringComparer.OrdinalIgnoreCase);
        long lastTomb = position.LastTombstoneEtag;
        int budget = BatchDocuments;
        bool changed = false;
        long attempts = 0, successes = 0;
        using var dbTx = _db.Environment.ReadTransaction();
        using var tx = _env.WriteTransaction();
        var entries = tx.CreateTree(EntriesTree);
        var entryIds = tx.CreateTree(EntryIdsTree);
        var postings = tx.CreateTree(PostingsTree);
        var meta = tx.CreateTree(MetaTree);
        long nextEntry = meta.TryGet(NextEntryKey, out var ne) ? BinaryPrimitives.ReadInt64LittleEndian(ne) : 1;
        var docs = dbTx.ReadTree(DocumentsStorage.DocsTree)!;
        var byCollection = dbTx.ReadTree(DocumentsStorage.CollectionEtagTree)!;
        var terms = new HashSet<byte[]>(ByteArrayComparer.Instance);
        byte[] buffer = ArrayPool<byte>.Shared.Rent(64 * 1024);
        try
        {
            foreach (string collection in Compiled.Collections)
            {
                if (budget <= 0)
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
                        RemoveEntry(entries, entryIds, postings, lowerId, long.MaxValue, terms);
                        var json = DocumentRecord.Json(record);
                        if (json.Length > buffer.Length)
                        {
                            ArrayPool<byte>.Shared.Return(buffer);
                            buffer = ArrayPool<byte>.Shared.Rent(json.Length);
                        }
                        json.CopyTo(buffer);
                        string id = DocumentRecord.Id(record);
                        byte[] entry;
                        try
                        {
                            using var doc = JsonDocument.Parse(buffer.AsMemory(0, json.Length));
                            entry = Compiled.MapEntry(doc.RootElement, collection, id);
                            successes++;
                        }
                        catch (Exception e) when (e is JsonException or ArgumentException or InvalidOperationException or NotSupportedException)
                        {
                            RecordError(id, e.Message);
                            entry = [];
                        }
                        if (entry.Length > 0)
                            AddEntry(entries, entryIds, postings, lowerId, etag, nextEntry++, entry, terms);
                    }
                    etags[collection] = etag;
                    changed = true;
                }
                while (--budget > 0 && cursor.MoveNext());
            }
            var tombs = dbTx.ReadTree(DocumentsStorage.TombstoneTree)!.CreateCursor();
            if (budget > 0 && tombs.Seek(DocumentsStorage.EtagKey(lastTomb + 1)))
            {
                do
                {
                    long etag = BinaryPrimitives.ReadInt64BigEndian(tombs.Key);
                    var v = tombs.Value;
                    int colLen = BinaryPrimitives.ReadUInt16LittleEndian(v);
                    string collection = Encoding.UTF8.GetString(v.Slice(2, colLen));
                    if (Compiled.Collections.Contains(collection, StringComparer.OrdinalIgnoreCase))
                        RemoveEntry(entries, entryIds, postings, v[(2 + colLen)..], etag, terms);
                    lastTomb = etag;
                    changed = true;
                }
                while (--budget > 0 && tombs.MoveNext());
            }
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
        if (!changed)
            return false;
        Span<byte> v8 = stackalloc byte[8];
        foreach (var (c, e) in etags)
        {
            BinaryPrimitives.WriteInt64LittleEndian(v8, e);
            meta.Put(EtagKey(c), v8);
        }
        BinaryPrimitives.WriteInt64LittleEndian(v8, lastTomb);
        meta.Put(TombstoneKey, v8);
        BinaryPrimitives.WriteInt64LittleEndian(v8, nextEntry);
        meta.Put(NextEntryKey, v8);
        long count = entries.Count;
        tx.Commit();
        Interlocked.Add(ref _mapAttempts, attempts);
        Interlocked.Add(ref _mapSuccesses, successes);
        Interlocked.Add(ref _mapErrors, attempts - successes);
        Interlocked.Exchange(ref _lastIndexingTicks, DateTime.UtcNow.Ticks);
        _position = new IndexPosition(etags, lastTomb, count);
        Interlocked.Exchange(ref _advanced, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();
        return true;
    }

    private void AddEntry(Tree entries, Tree entryIds, Tree postings, ReadOnlySpan<byte> lowerId, long etag, long entryId, byte[] entry, HashSet<byte[]> terms)
    {
        Span<byte> idKey = stackalloc byte[8];
        BinaryPrimitives.WriteInt64BigEndian(idKey, entryId);
        entries.Put(lowerId, idKey);
        var value = new byte[10 + lowerId.Length + entry.Length];
        BinaryPrimitives.WriteInt64LittleEndian(value, etag);
        BinaryPrimitives.WriteUInt16LittleEndian(value.AsSpan(8), (ushort)lowerId.Length);
        lowerId.CopyTo(value.AsSpan(10));
        entry.CopyTo(value, 10 + lowerId.Length);
        entryIds.Put(idKey, value);
        terms.Clear();
        CollectTerms(entry, terms);
        foreach (var t in terms)
            postings.Put(IndexKeys.Posting(t, entryId), ReadOnlySpan<byte>.Empty);
    }

    /// <summary>Removes a document's entry when it was mapped before <paramref name="beforeEtag"/> (a tombstone must not remove a later re-creation).</summary>
    private void RemoveEntry(Tree entries, Tree entryIds, Tree postings, ReadOnlySpan<byte> lowerId, long beforeEtag, HashSet<byte[]> terms)
    {
        if (!entries.TryGet(lowerId, out var idBytes))
            return;
        long entryId = BinaryPrimitives.ReadInt64BigEndian(idBytes);
        if (!TryReadEntry(entryIds, entryId, out _, out long etag, out var json))
            throw new StorageCorruptionException($"Index '{Name}': entry {entryId} of a document is missing.");
        if (etag >= beforeEtag)
            return;
        terms.Clear();
        CollectTerms(json.ToArray(), terms);
        foreach (var t in terms)
            postings.Delete(IndexKeys.Posting(t, entryId));
        Span<byte> idKey = stackalloc byte[8];
        BinaryPrimitives.WriteInt64BigEndian(idKey, entryId);
        entryIds.Delete(idKey);
        entries.Delete(lowerId);
    }

    private void CollectTerms(byte[] entry, HashSet<byte[]> terms)
    {
        using var doc = JsonDocument.Parse(entry);
        foreach (var p in doc.RootElement.EnumerateObject())
            if (Compiled.Field(p.Name) is { } field)
                IndexKeys.TermsOf(field, p.Value, terms);
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

    private static byte[] EtagKey(string collection) => Encoding.UTF8.GetBytes("etag:" + collection.ToLowerInvariant());

    private IndexPosition ReadPosition()
    {
        using var tx = _env.ReadTransaction();
        return PositionIn(tx);
    }

    /// <summary>Opens the index storage; when it cannot be opened (corrupted), deletes it and starts empty (a rebuild from the documents).</summary>
    private StorageEnvironment OpenOrRebuild()
    {
        try
        {
            var env = Open();
            using (var tx = env.ReadTransaction())
                _ = PositionIn(tx);
            return env;
        }
        catch (Exception e) when (e is StorageCorruptionException or IOException or InvalidDataException or StorageFailedException)
        {
            Hosting.Log.IndexRebuilt(_logger, Name, e.Message);
            RecordError(null, "Index storage could not be opened and is rebuilt from the documents: " + e.Message);
            Directory.Delete(_storageDir, recursive: true);
            return Open();
        }
    }

    private StorageEnvironment Open() => StorageEnvironment.Open(new StorageOptions
    {
        Directory = _storageDir,
        // Buffered: an index survives a process crash at its last commit; after a power loss it may
        // go back further (never inconsistent: journal records are checksummed) and re-indexes.
        Durability = DurabilityMode.Buffered,
        InitialMapSize = 8L << 30,
    });

    /// <summary>Throws away everything indexed and starts again from the first document (RavenDB's reset).</summary>
    public void Reset()
    {
        StopWorker();
        _env.Dispose();
        Directory.Delete(_storageDir, recursive: true);
        _env = Open();
        _position = ReadPosition();
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
            _env.Dispose();
            Directory.Delete(_storageDir, recursive: true);
            _env = Open();
            _position = ReadPosition();
            Hosting.Log.IndexRebuilt(_logger, Name, "the worker failed repeatedly");
        }
        catch (Exception e)
        {
            Hosting.Log.IndexingFailed(_logger, e, Name);
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

    private void StopWorker()
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
        _env.Dispose();
        _advanced.TrySetResult();
    }
}

/// <summary>An index's position: last indexed etag per collection, last processed tombstone etag, entry count.</summary>
public sealed record IndexPosition(IReadOnlyDictionary<string, long> LastEtags, long LastTombstoneEtag, long Entries);

/// <summary>A recorded indexing error.</summary>
public sealed record IndexError(string? DocumentId, string Error, DateTime Timestamp);
