using RavenLite.Storage;
using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Server.Documents;

/// <summary>
/// Documents on top of storage trees (docs/architecture.md; layout in docs/format/documents.md).
/// Invariants:
/// 1. Every document is in <c>Docs</c> under its lower-cased id, in <c>DocsByEtag</c> under its etag
///    and in <c>CollectionEtags</c> under (lower-cased collection, etag); the three agree.
/// 2. Etags grow by one per write (put or delete) across the database; <c>State/LastEtag</c> is the
///    largest one handed out, stored in the same transaction as the write.
/// 3. A delete leaves a tombstone under a fresh etag, so readers by etag (indexes) see it.
/// 4. <c>Collections</c> counts live documents per collection and keeps the first-seen casing.
/// 5. <c>TombstonesById</c> holds, per lower-cased id, the latest tombstone's etag, time, collection and change vector
///    (what replication sends and compares); <c>TransactionEnds</c> holds, per committed write transaction, its last
///    and first etag, so a reader by etag can stop at a transaction's end (replication batches never split one).
/// Reads work on any transaction; writes only through a <see cref="DocumentsWriteContext"/>
/// (one per storage write transaction, used by the merger thread only).
/// </summary>
public sealed partial class DocumentsStorage
{
    internal const string DocsTree = "Docs";
    internal const string EtagTree = "DocsByEtag";
    internal const string CollectionEtagTree = "CollectionEtags";
    internal const string TombstoneTree = "Tombstones";
    internal const string CollectionsTree = "Collections";
    internal const string StateTree = "State";
    internal const string IdentitiesTree = "Identities";
    internal const string TombstonesByIdTree = "TombstonesById";
    internal const string TransactionEndsTree = "TransactionEnds";
    private static readonly byte[] LastEtagKey = "LastEtag"u8.ToArray();
    private static readonly byte[] DatabaseIdKey = "DatabaseId"u8.ToArray();
    private static readonly byte[] NodeTagKey = "NodeTag"u8.ToArray();
    private static readonly byte[] ClusterTransactionIdKey = "ClusterTransactionId"u8.ToArray();
    private static readonly byte[] ReceivedChangeVectorKey = "ReceivedChangeVector"u8.ToArray();
    private static readonly byte[] LastClusterTransactionKey = "LastClusterTransactionIndex"u8.ToArray();
    private static readonly byte[] LastRecordChangeKey = "LastRecordChangeIndex"u8.ToArray();

    private readonly int _maxIdBytes;

    /// <summary>
    /// Opens the document layer over <paramref name="environment"/>, creating its trees, database id and node tag
    /// (<paramref name="nodeTag"/>, the server's) on first use. A database keeps the tag it was created with: its
    /// stored records' change vectors name it.
    /// </summary>
    public DocumentsStorage(StorageEnvironment environment, int maxIdBytes, string nodeTag = ChangeVectors.DefaultNodeTag)
    {
        Environment = environment;
        _maxIdBytes = maxIdBytes;
        using var tx = environment.WriteTransaction();
        foreach (string t in new[] { DocsTree, EtagTree, CollectionEtagTree, TombstoneTree, CollectionsTree, IdentitiesTree, TombstonesByIdTree, TransactionEndsTree })
            tx.CreateTree(t);
        var state = tx.CreateTree(StateTree);
        Compression = new DocumentCompression(tx);
        bool created = !state.TryGet(DatabaseIdKey, out var idBytes);
        DatabaseId = created ? ChangeVectors.NewDatabaseId() : Encoding.UTF8.GetString(idBytes);
        // Databases created before node tags were configurable have no stored tag: theirs was A.
        NodeTag = state.TryGet(NodeTagKey, out var tagBytes) ? Encoding.UTF8.GetString(tagBytes) : created ? nodeTag : ChangeVectors.DefaultNodeTag;
        bool hasClusterId = state.TryGet(ClusterTransactionIdKey, out var clusterIdBytes);
        ClusterTransactionId = hasClusterId ? Encoding.UTF8.GetString(clusterIdBytes) : ChangeVectors.NewDatabaseId();
        if (created)
            state.Put(DatabaseIdKey, Encoding.UTF8.GetBytes(DatabaseId));
        if (!hasClusterId)
            state.Put(ClusterTransactionIdKey, Encoding.UTF8.GetBytes(ClusterTransactionId));
        if (created || tagBytes.IsEmpty || !hasClusterId)
        {
            state.Put(NodeTagKey, Encoding.UTF8.GetBytes(NodeTag));
            tx.Commit();
        }
        else
        {
            tx.Dispose();
        }
    }

    /// <summary>The node tag of this database's own change-vector entries (the server's tag when the database was created).</summary>
    public string NodeTag { get; }

    /// <summary>The one-entry change vector of a local write at <paramref name="etag"/>.</summary>
    public string LocalChangeVector(long etag) => ChangeVectors.Format(NodeTag, etag, DatabaseId);

    /// <summary>
    /// The database's change vector as of <paramref name="tx"/>: every entry it has received by replication merged with
    /// its own last etag — what RavenDB reports as <c>DatabaseChangeVector</c>.
    /// </summary>
    public string DatabaseChangeVector(Transaction tx)
    {
        long last = LastEtag(tx);
        string received = ReceivedChangeVector(tx);
        return last == 0 ? received : ChangeVectors.WithEntry(received, NodeTag, last, DatabaseId);
    }

    /// <summary>The entries of other database instances this one has received (merged), "" when none.</summary>
    internal static string ReceivedChangeVector(Transaction tx) =>
        tx.ReadTree(StateTree) is { } t && t.TryGet(ReceivedChangeVectorKey, out var v) ? Encoding.UTF8.GetString(v) : "";

    internal static void WriteReceivedChangeVector(WriteTransaction tx, string changeVector) =>
        tx.CreateTree(StateTree).Put(ReceivedChangeVectorKey, Encoding.UTF8.GetBytes(changeVector));

    /// <summary>The storage environment under this database.</summary>
    public StorageEnvironment Environment { get; }

    /// <summary>The changes API's feed of this database's committed changes.</summary>
    public Changes.ChangeFeed Changes { get; } = new();

    /// <summary>The compression dictionaries of stored documents.</summary>
    internal DocumentCompression Compression { get; }

    /// <summary>This database's id, the suffix of its change vectors.</summary>
    public string DatabaseId { get; }

    /// <summary>
    /// The id of the RAFT entries its cluster-wide transactions add to change vectors (<see cref="ChangeVectors.RaftTag"/>):
    /// its own, distinct from <see cref="DatabaseId"/>, so the entry never replaces the writer's.
    /// </summary>
    public string ClusterTransactionId { get; private set; }

    /// <summary>
    /// Set while the database is an instance of a group: its identities (ids ending in <c>|</c>) come from the cluster,
    /// asked before a write is queued (PUTs and batches), so a write that would take one in its own transaction — a
    /// bulk insert, a patch's <c>put()</c> — is refused rather than hand out a value another member also hands out.
    /// </summary>
    public bool IdentitiesFromCluster { get; set; }

    /// <summary>
    /// Takes the cluster transaction id of the database's group (in <paramref name="tx"/>): every member's cluster-wide
    /// writes then carry the same <c>RAFT:</c> entry, which is what lets replication compare them.
    /// </summary>
    public void AdoptClusterTransactionId(WriteTransaction tx, string id)
    {
        ArgumentNullException.ThrowIfNull(tx);
        tx.CreateTree(StateTree).Put(ClusterTransactionIdKey, Encoding.UTF8.GetBytes(id));
        ClusterTransactionId = id;
    }

    /// <summary>The Raft index of the last cluster-wide transaction of the database's group this instance applied (0: none).</summary>
    public static long LastClusterTransaction(Transaction tx) => ReadIndex(tx, LastClusterTransactionKey);

    /// <summary>Records that this instance applied its group's cluster-wide transactions up to <paramref name="index"/>.</summary>
    public static void WriteLastClusterTransaction(WriteTransaction tx, long index) => WriteIndex(tx, LastClusterTransactionKey, index);

    /// <summary>The Raft index of the last change of the database group's record this instance applied (0: none).</summary>
    public static long LastRecordChange(Transaction tx) => ReadIndex(tx, LastRecordChangeKey);

    /// <summary>Records that this instance applied its group's record changes up to <paramref name="index"/>.</summary>
    public static void WriteLastRecordChange(WriteTransaction tx, long index) => WriteIndex(tx, LastRecordChangeKey, index);

    private static long ReadIndex(Transaction tx, byte[] key) =>
        tx.ReadTree(StateTree) is { } t && t.TryGet(key, out var v) ? BinaryPrimitives.ReadInt64LittleEndian(v) : 0;

    private static void WriteIndex(WriteTransaction tx, byte[] key, long index)
    {
        ArgumentNullException.ThrowIfNull(tx);
        Span<byte> value = stackalloc byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(value, index);
        tx.CreateTree(StateTree).Put(key, value);
    }

    private IDocumentExtension[] _extensions = [];

    /// <summary>The registered extensions, in registration order (the order <see cref="DocumentsWriteContext"/> calls them).</summary>
    internal IDocumentExtension[] Extensions => _extensions;

    /// <summary>
    /// Registers <paramref name="extension"/>: from now on every put and delete calls it. Register every extension while
    /// opening the database, before the first write.
    /// </summary>
    public void Register(IDocumentExtension extension)
    {
        ArgumentNullException.ThrowIfNull(extension);
        _extensions = [.. _extensions, extension];
    }

    /// <summary>The registered extension of type <typeparamref name="T"/>.</summary>
    /// <exception cref="InvalidOperationException">None is registered (a document layer opened without its database).</exception>
    public T Extension<T>() where T : class, IDocumentExtension
    {
        foreach (var extension in _extensions) // a handful, and asked for on write paths: no LINQ
            if (extension is T found)
                return found;
        throw new InvalidOperationException($"No {typeof(T).Name} is registered with this database's documents.");
    }

    /// <summary>Reads a JSON value of the <c>State</c> tree (a configuration an extension stores); null when absent.</summary>
    public static JsonDocument? ReadState(Transaction tx, byte[] key) =>
        tx.ReadTree(StateTree) is { } t && t.TryGet(key, out var v) ? JsonDocument.Parse(v.ToArray()) : null;

    /// <summary>Writes a JSON value of the <c>State</c> tree, as <paramref name="write"/> writes it.</summary>
    public static void WriteState(WriteTransaction tx, byte[] key, Action<Utf8JsonWriter> write)
    {
        ArgumentNullException.ThrowIfNull(write);
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
            write(w);
        tx.CreateTree(StateTree).Put(key, buffer.WrittenSpan);
    }

    /// <summary>Lower-cases an id for use as a key, after checking it (400 when empty, too long or holding a key separator, <see cref="ValidateId"/>).</summary>
    public byte[] KeyOf(string id)
    {
        ValidateId(id);
        return Encoding.UTF8.GetBytes(id.ToLowerInvariant());
    }

    /// <summary>
    /// <see cref="KeyOf(string)"/> into <paramref name="scratch"/> (grown when too small) instead of a new
    /// array; returns the key's length. The merger's per-document path: no allocation per key.
    /// </summary>
    internal int KeyOf(string id, ref byte[] scratch)
    {
        ValidateId(id);
        if (scratch.Length < id.Length * 3)
            scratch = new byte[Math.Max(id.Length * 3, scratch.Length * 2)];
        if (id.Length <= 512)
        {
            Span<char> lower = stackalloc char[id.Length];
            id.AsSpan().ToLowerInvariant(lower);
            return Encoding.UTF8.GetBytes(lower, scratch);
        }
        return Encoding.UTF8.GetBytes(id.ToLowerInvariant(), scratch);
    }

    /// <summary>
    /// 400 for an id that is empty, longer than the limit or holds NUL, U+001E or U+001F — the separators of the storage's
    /// composite keys (a document's counters and series, references). Other control characters are stored, as RavenDB does.
    /// </summary>
    public void ValidateId(string id)
    {
        if (string.IsNullOrEmpty(id))
            throw new BadRequestException("Document id must not be empty.");
        int bytes = Encoding.UTF8.GetByteCount(id);
        if (bytes > _maxIdBytes)
            throw new BadRequestException($"Document id is {bytes} UTF-8 bytes long; the limit is {_maxIdBytes}.");
        foreach (char ch in id)
            if (ch is '\0' or '\u001e' or '\u001f')
                throw new BadRequestException($"Document ids may not contain U+{(int)ch:X4} (RavenLite's storage separates the parts of its keys with NUL, U+001E and U+001F).");
    }

    /// <summary>
    /// Checks an id a write names (PUT, batch PUT, bulk insert): <c>""</c> (a GUID), <c>prefix/</c> and
    /// <c>prefix|</c> ask the server to generate it (<see cref="DocumentsWriteContext.ResolveId"/>); a bare
    /// <c>/</c> or <c>|</c> names no prefix (400); anything else as <see cref="ValidateId"/>.
    /// </summary>
    public void ValidateIdToWrite(string id)
    {
        if (id.Length == 0)
            return;
        if (id.TrimEnd('/', '|').Length == 0)
            throw new BadRequestException($"Document id '{id}' has no prefix before the server-generated part.");
        ValidateId(id);
    }

    /// <summary>The largest etag written, as of <paramref name="tx"/>.</summary>
    public static long LastEtag(Transaction tx) =>
        tx.ReadTree(StateTree) is { } t && t.TryGet(LastEtagKey, out var v) ? BinaryPrimitives.ReadInt64LittleEndian(v) : 0;

    /// <summary>The document with this id (any casing), or null.</summary>
    public StoredDocument? Get(Transaction tx, string id)
    {
        var docs = tx.ReadTree(DocsTree)!;
        return docs.TryGet(KeyOf(id), out var value) ? DocumentRecord.Read(value, this) : null;
    }

    /// <summary>The current change vector of a document, or null when it does not exist.</summary>
    public string? ChangeVectorOf(Transaction tx, string id)
    {
        var docs = tx.ReadTree(DocsTree)!;
        return docs.TryGet(KeyOf(id), out var value) ? DocumentRecord.ChangeVector(value, this) : null;
    }

    /// <summary>Documents with etag greater than <paramref name="afterEtag"/>, ascending, skipping <paramref name="start"/>.</summary>
    public List<StoredDocument> GetAfterEtag(Transaction tx, long afterEtag, int start, int pageSize)
    {
        var c = tx.ReadTree(EtagTree)!.CreateCursor();
        return Page(tx, c, c.Seek(EtagKey(afterEtag + 1)), backwards: false, start, pageSize);
    }

    /// <summary>The most recently written documents first (RavenDB's <c>GET /docs?start=&amp;pageSize=</c>).</summary>
    public List<StoredDocument> GetLatest(Transaction tx, int start, int pageSize)
    {
        var c = tx.ReadTree(EtagTree)!.CreateCursor();
        return Page(tx, c, c.SeekToLast(), backwards: true, start, pageSize);
    }

    /// <summary>Documents of one collection (any casing) in etag order, skipping <paramref name="start"/>.</summary>
    public List<StoredDocument> GetByCollection(Transaction tx, string collection, int start, int pageSize)
    {
        var c = tx.ReadTree(CollectionEtagTree)!.CreateCursor();
        c.Prefix = CollectionPrefix(collection);
        return Page(tx, c, c.SeekToFirst(), backwards: false, start, pageSize);
    }

    /// <summary>
    /// Every document of <paramref name="collection"/> (any casing; null: every document) in etag
    /// order, after <paramref name="afterEtag"/>, one at a time (nothing is retained: a scan of any size runs in constant memory).
    /// Each <see cref="StoredDocument"/> is a copy, valid after the transaction ends.
    /// </summary>
    public IEnumerable<StoredDocument> Scan(Transaction tx, string? collection, long afterEtag = 0)
    {
        var cursor = collection == null ? tx.ReadTree(EtagTree)!.CreateCursor() : tx.ReadTree(CollectionEtagTree)!.CreateCursor();
        if (collection != null)
            cursor.Prefix = CollectionPrefix(collection);
        bool positioned = afterEtag <= 0 ? cursor.SeekToFirst()
            : cursor.Seek(collection == null ? EtagKey(afterEtag + 1) : CollectionEtagKey(collection, afterEtag + 1));
        if (!positioned)
            yield break;
        var docs = tx.ReadTree(DocsTree)!;
        do
        {
            if (docs.TryGet(cursor.Value, out var value))
                yield return DocumentRecord.Read(value, this);
        }
        while (cursor.MoveNext());
    }

    /// <summary>
    /// Documents whose id starts with <paramref name="prefix"/> (any casing) in id order (lower-cased, ordinal),
    /// after the id <paramref name="startAfter"/> when given; of those whose id tail (after the prefix) passes
    /// <paramref name="keep"/>, skips <paramref name="start"/> and returns at most <paramref name="pageSize"/>.
    /// </summary>
    public List<StoredDocument> GetStartingWith(Transaction tx, string prefix, Func<string, bool> keep, string? startAfter, int start, int pageSize) =>
        ScanStartingWith(tx, prefix, keep, startAfter).Skip(start).Take(pageSize).ToList();

    /// <summary>
    /// <see cref="GetStartingWith"/> one document at a time (nothing retained: constant memory however many match);
    /// each is a copy, valid after the transaction ends.
    /// </summary>
    public IEnumerable<StoredDocument> ScanStartingWith(Transaction tx, string prefix, Func<string, bool> keep, string? startAfter)
    {
        var docs = tx.ReadTree(DocsTree)!;
        var cursor = docs.CreateCursor();
        byte[] prefixKey = Encoding.UTF8.GetBytes(prefix.ToLowerInvariant());
        cursor.Prefix = prefixKey;
        byte[]? after = startAfter == null ? null : Encoding.UTF8.GetBytes(startAfter.ToLowerInvariant());
        bool positioned = after != null && after.AsSpan().SequenceCompareTo(prefixKey) > 0 ? cursor.Seek(after) : cursor.SeekToFirst();
        for (; positioned; positioned = cursor.MoveNext())
        {
            if (after != null && cursor.Key.SequenceEqual(after))
                continue;
            var value = cursor.Value;
            string id = DocumentRecord.Id(value);
            if (keep(id[Math.Min(prefix.Length, id.Length)..]))
                yield return DocumentRecord.Read(value, this);
        }
    }

    /// <summary>Every document, the most recently written first, one at a time (constant memory; copies).</summary>
    public IEnumerable<StoredDocument> ScanLatest(Transaction tx)
    {
        var cursor = tx.ReadTree(EtagTree)!.CreateCursor();
        if (!cursor.SeekToLast())
            yield break;
        var docs = tx.ReadTree(DocsTree)!;
        do
        {
            if (docs.TryGet(cursor.Value, out var value))
                yield return DocumentRecord.Read(value, this);
        }
        while (cursor.MovePrevious());
    }

    /// <summary>Loads the documents an index cursor (values = lower-cased ids) names, from its position, skipping <paramref name="start"/>.</summary>
    private List<StoredDocument> Page(Transaction tx, TreeCursor cursor, bool positioned, bool backwards, int start, int pageSize)
    {
        var result = new List<StoredDocument>();
        if (!positioned)
            return result;
        var docs = tx.ReadTree(DocsTree)!;
        do
        {
            if (start > 0)
            {
                start--;
                continue;
            }
            if (result.Count >= pageSize)
                break;
            if (docs.TryGet(cursor.Value, out var value))
                result.Add(DocumentRecord.Read(value, this));
        }
        while (backwards ? cursor.MovePrevious() : cursor.MoveNext());
        return result;
    }

    /// <summary>Live documents per collection (stored casing), in name order.</summary>
    public static SortedDictionary<string, long> CollectionCounts(Transaction tx)
    {
        var result = new SortedDictionary<string, long>(StringComparer.OrdinalIgnoreCase);
        var c = tx.ReadTree(CollectionsTree)!.CreateCursor();
        if (!c.SeekToFirst())
            return result;
        do
        {
            long count = BinaryPrimitives.ReadInt64LittleEndian(c.Value);
            if (count > 0)
                result[Encoding.UTF8.GetString(c.Value[8..])] = count;
        }
        while (c.MoveNext());
        return result;
    }

    /// <summary>The Identities tree's key of an identity name: lower-cased, without a trailing <c>|</c>.</summary>
    internal static byte[] IdentityKey(string name) => Encoding.UTF8.GetBytes(name.TrimEnd('|').ToLowerInvariant());

    /// <summary>Every identity and its last value, named as RavenDB lists them (<c>users|</c>), in name order.</summary>
    public static List<(string Name, long Value)> Identities(Transaction tx)
    {
        var result = new List<(string, long)>();
        var c = tx.ReadTree(IdentitiesTree)!.CreateCursor();
        for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
            result.Add((Encoding.UTF8.GetString(c.Key) + "|", BinaryPrimitives.ReadInt64LittleEndian(c.Value)));
        return result;
    }

    /// <summary>Number of live documents.</summary>
    public static long CountDocuments(Transaction tx) => tx.ReadTree(DocsTree)!.Count;

    /// <summary>Number of tombstones.</summary>
    public static long CountTombstones(Transaction tx) => tx.ReadTree(TombstoneTree)!.Count;

    internal static byte[] CollectionPrefix(string collection)
    {
        string lower = collection.ToLowerInvariant();
        var prefix = new byte[Encoding.UTF8.GetByteCount(lower) + 1];
        Encoding.UTF8.GetBytes(lower, prefix);
        return prefix; // trailing 0 separates the name from the etag
    }

    internal static byte[] CollectionEtagKey(string collection, long etag)
    {
        var prefix = CollectionPrefix(collection);
        var key = new byte[prefix.Length + 8];
        prefix.CopyTo(key, 0);
        BinaryPrimitives.WriteInt64BigEndian(key.AsSpan(prefix.Length), etag);
        return key;
    }

    internal static byte[] EtagKey(long etag)
    {
        var key = new byte[8];
        BinaryPrimitives.WriteInt64BigEndian(key, etag);
        return key;
    }

    /// <summary>Starts writing documents in <paramref name="tx"/>; call <see cref="DocumentsWriteContext.Complete"/> before committing.</summary>
    public DocumentsWriteContext BeginWrite(WriteTransaction tx) => new(this, tx, _writeScratch);

    // Reused by every write context: there is one write transaction at a time (the storage writer lock).
    private readonly DocumentsWriteContext.Scratch _writeScratch = new();

    /// <summary>Reads the persisted etag counter.</summary>
    internal static long ReadLastEtag(WriteTransaction tx) => LastEtag(tx);

    internal static void WriteLastEtag(WriteTransaction tx, long etag)
    {
        Span<byte> v = stackalloc byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(v, etag);
        tx.CreateTree(StateTree).Put(LastEtagKey, v);
    }

    internal string FormatServerId(string prefix, long n) => prefix + n.ToString("D19", CultureInfo.InvariantCulture) + "-" + NodeTag;

    internal static JsonElement EmptyObject { get; } = JsonDocument.Parse("{}").RootElement.Clone();

    internal static Tree Docs(Transaction tx) => tx.ReadTree(DocsTree)!;
}
