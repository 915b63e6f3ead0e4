using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Server.Documents;

/// <summary>
/// Document writes inside one storage write transaction: assigns etags, keeps the trees of
/// <see cref="DocumentsStorage"/> in step, checks expected change vectors. Not thread-safe: the
/// merger thread owns it for the life of the transaction. Persist the etag counter with
/// <see cref="Complete"/> before the transaction commits.
/// </summary>
public sealed class DocumentsWriteContext
{
    private readonly DocumentsStorage _storage;
    private readonly Tree _docs, _byEtag, _byCollection, _tombstones, _tombstonesById, _collections, _identities;
    private long _lastEtag;
    private string _received; // the entries of other database instances received so far (DocumentsStorage.ReceivedChangeVector)
    private bool _receivedChanged;
    private Dictionary<string, ChangeVectorEntry>? _receivedEntries;
    private bool? _anyConflicts; // whether the Conflicts tree holds anything, once asked in this transaction // _received parsed, while replicated versions arrive (joined on demand)
    private readonly Dictionary<string, long> _countDeltas = new(StringComparer.OrdinalIgnoreCase); // per collection, written by Complete

    private readonly Scratch _scratch;
    private readonly DocumentCompression.Writer _compression;

    /// <summary>
    /// Buffers for the per-document path (key, record, index keys, metadata writer), owned by the
    /// storage and reused by each write context in turn, so a write allocates no per-document arrays.
    /// </summary>
    internal sealed class Scratch
    {
        public byte[] Key = new byte[256];
        public readonly ArrayBufferWriter<byte> Record = new(16 * 1024);
        public readonly ArrayBufferWriter<byte> Prepared = new(16 * 1024);
        public readonly ArrayBufferWriter<byte> Rewrite = new(16 * 1024);
        public readonly ArrayBufferWriter<byte> Revision = new(16 * 1024);
        public readonly ArrayBufferWriter<byte> Compressed = new(16 * 1024);
        public byte[]? Json;
        public readonly Utf8JsonWriter MetadataWriter = DocumentJson.CreateMetadataWriter();
        public readonly Dictionary<string, byte[]> CollectionPrefixes = new(StringComparer.Ordinal);
    }

    internal DocumentsWriteContext(DocumentsStorage storage, WriteTransaction tx, Scratch scratch)
    {
        _storage = storage;
        _scratch = scratch;
        Transaction = tx;
        _docs = tx.CreateTree(DocumentsStorage.DocsTree);
        _byEtag = tx.CreateTree(DocumentsStorage.EtagTree);
        _byCollection = tx.CreateTree(DocumentsStorage.CollectionEtagTree);
        _tombstones = tx.CreateTree(DocumentsStorage.TombstoneTree);
        _tombstonesById = tx.CreateTree(DocumentsStorage.TombstonesByIdTree);
        _received = DocumentsStorage.ReceivedChangeVector(tx);
        _collections = tx.CreateTree(DocumentsStorage.CollectionsTree);
        _identities = tx.CreateTree(DocumentsStorage.IdentitiesTree);
        _lastEtag = DocumentsStorage.ReadLastEtag(tx);
        StartEtag = _lastEtag;
        _compression = storage.Compression.BeginWrite(tx);
        Changes = storage.Changes.Listening ? [] : null;
    }

    /// <summary>The changes this transaction made, for the changes API; null when nobody listens (nothing is recorded).</summary>
    internal List<Changes.ChangeEvent>? Changes { get; private set; }

    /// <summary>The recorded changes (published once the transaction is durable); the context records no more.</summary>
    internal List<Changes.ChangeEvent>? TakeChanges()
    {
        var changes = Changes;
        Changes = null;
        return changes is { Count: > 0 } ? changes : null;
    }

    /// <summary>The collection of document <paramref name="id"/> (any casing) without reading its JSON; null when it does not exist.</summary>
    public string? CollectionOf(string id)
    {
        int keyLength = _storage.KeyOf(id, ref _scratch.Key);
        return _docs.TryGet(_scratch.Key.AsSpan(0, keyLength), out var value) ? DocumentRecord.Collection(value) : null;
    }

    /// <summary>The storage transaction written to.</summary>
    public WriteTransaction Transaction { get; }

    /// <summary>The etag counter when this context began.</summary>
    public long StartEtag { get; }

    /// <summary>The largest etag handed out so far.</summary>
    public long LastEtag => _lastEtag;

    /// <summary>
    /// The index of the cluster-wide transaction this context writes for (0: none). Its writes' change vectors carry
    /// the transaction's RAFT entry, which makes them win conflicts (docs/replication.md "Conflicts").
    /// </summary>
    public long ClusterTransactionIndex { get; set; }

    /// <summary>Database id, for change vectors.</summary>
    public string DatabaseId => _storage.DatabaseId;

    /// <summary>A record as stored: compressed with its collection's dictionary when that is smaller (valid until the next call).</summary>
    private ReadOnlySpan<byte> Compressed(ReadOnlySpan<byte> record, string collection) => _compression.Encode(record, collection, _scratch.Compressed);

    /// <summary>Persists the etag counter, the transaction's etag bounds, the received change vector and the collection counts; call once, before commit.</summary>
    public void Complete()
    {
        if (_lastEtag != StartEtag)
        {
            DocumentsStorage.WriteLastEtag(Transaction, _lastEtag);
            DocumentsStorage.WriteTransactionEnd(Transaction, StartEtag + 1, _lastEtag);
        }
        if (_receivedChanged)
            DocumentsStorage.WriteReceivedChangeVector(Transaction, Received);
        _receivedChanged = false;
        foreach (var (collection, delta) in _countDeltas)
            if (delta != 0)
                WriteCollectionCount(collection, delta);
        _countDeltas.Clear();
        _compression.Complete();
    }

    /// <summary>The storage key of an id (lower-cased UTF-8), after checking it (<see cref="DocumentsStorage.KeyOf(string)"/>).</summary>
    public byte[] KeyOf(string id) => _storage.KeyOf(id);

    /// <summary>The documents layer written to.</summary>
    public DocumentsStorage Storage => _storage;

    /// <summary>The stored document under this id (any casing), or null.</summary>
    public StoredDocument? Get(string id) => _storage.Get(Transaction, id);

    /// <summary>The id in its stored casing and the change vector of document <paramref name="id"/> (any casing), without reading its JSON; null when it does not exist.</summary>
    public (string Id, string ChangeVector)? Find(string id)
    {
        int keyLength = _storage.KeyOf(id, ref _scratch.Key);
        return _docs.TryGet(_scratch.Key.AsSpan(0, keyLength), out var value)
            ? (DocumentRecord.Id(value), DocumentRecord.ChangeVector(value, _storage))
            : null;
    }

    /// <summary>
    /// Turns a server-generated id request into an id: <c>prefix/</c> becomes
    /// <c>prefix/{19-digit etag}-A</c>, <c>prefix|</c> becomes <c>prefix/{n}</c> with a per-prefix
    /// identity counter, and an empty id becomes a new GUID, as RavenDB does (docs/protocol.md §4.2).
    /// Other ids are returned as they are.
    /// </summary>
    public string ResolveId(string id)
    {
        if (id.Length == 0)
            return Guid.NewGuid().ToString();
        if (id.EndsWith('|'))
        {
            if (_storage.IdentitiesFromCluster)
                throw new BadRequestException($"'{id}' asks for an identity, which a database on a group of nodes takes from the cluster: store it with a PUT or a batch (session), not a bulk insert or a patch.");
            string prefix = id[..^1];
            return prefix + "/" + NextIdentity(prefix).ToString(System.Globalization.CultureInfo.InvariantCulture);
        }
        if (id.EndsWith('/'))
            return _storage.FormatServerId(id, _lastEtag + 1);
        return id;
    }

    /// <summary>The next value of the identity <paramref name="name"/> (any casing; a trailing <c>|</c> is ignored), from 1.</summary>
    public long NextIdentity(string name)
    {
        var key = DocumentsStorage.IdentityKey(name);
        long n = _identities.TryGet(key, out var v) ? BinaryPrimitives.ReadInt64LittleEndian(v) + 1 : 1;
        WriteIdentity(key, n);
        return n;
    }

    /// <summary>
    /// Sets the identity <paramref name="name"/> to <paramref name="value"/> when that is larger than its value, or
    /// always when <paramref name="force"/> (RavenDB's seed); returns its value afterwards.
    /// </summary>
    public long SeedIdentity(string name, long value, bool force)
    {
        var key = DocumentsStorage.IdentityKey(name);
        long current = _identities.TryGet(key, out var v) ? BinaryPrimitives.ReadInt64LittleEndian(v) : 0;
        if (!force && current >= value)
            return current;
        WriteIdentity(key, value);
        return value;
    }

    private void WriteIdentity(byte[] key, long value)
    {
        Span<byte> nv = stackalloc byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(nv, value);
        _identities.Put(key, nv);
    }

    /// <summary>
    /// Stores the document <paramref name="json"/> (validated and prepared here, <see cref="DocumentPreparer"/>) under
    /// <paramref name="id"/> after checking <paramref name="expectedChangeVector"/> (null: no check; "": must not
    /// exist; else must match — 409). An update keeps the stored id casing and may not move the document to
    /// another collection (400).
    /// </summary>
    public WriteResult Put(string id, ReadOnlySpan<byte> json, string? expectedChangeVector)
    {
        var prepared = _scratch.Prepared;
        prepared.ResetWrittenCount();
        int prefixLength = DocumentPreparer.Current.Prepare(json, prepared, out string collection);
        return Put(id, collection, prepared.WrittenSpan, prefixLength, expectedChangeVector);
    }

    /// <summary>
    /// <see cref="Put(string, ReadOnlySpan{byte}, string?)"/> of a document the server writes with its own <c>@flags</c>
    /// (<paramref name="flags"/>, such as <c>Artificial</c> and <c>FromIndex</c> for map-reduce output), which clients cannot set.
    /// </summary>
    public WriteResult PutFlagged(string id, ReadOnlySpan<byte> json, IEnumerable<string> flags)
    {
        var prepared = _scratch.Prepared;
        prepared.ResetWrittenCount();
        int prefixLength = DocumentPreparer.Current.Prepare(json, prepared, out string collection);
        var extras = Get(id) is { } old ? DocumentExtras.Read(old.Json)?.Clone() ?? new DocumentExtras() : new DocumentExtras();
        extras.OtherFlags.Clear();
        extras.OtherFlags.UnionWith(flags);
        return Put(id, collection, prepared.WrittenSpan, prefixLength, null, replaceExtras: true, extras.IsEmpty ? null : extras);
    }

    /// <summary>
    /// Stores a version another database instance wrote (replication): <paramref name="json"/> as that instance stored
    /// it, under <paramref name="changeVector"/> and <paramref name="lastModified"/> as they are (no entry of this
    /// database is added), at a new local etag so it flows on to this database's own destinations. The caller has
    /// decided it wins (<see cref="ChangeVectors.Compare"/>); its change vector's entries join the database's.
    /// </summary>
    public WriteResult PutVersion(string id, ReadOnlySpan<byte> json, string changeVector, DateTime lastModified)
    {
        var prepared = _scratch.Prepared;
        prepared.ResetWrittenCount();
        int prefixLength = DocumentPreparer.Current.Prepare(json, prepared, out string collection);
        var extras = DocumentExtras.Read(json);
        Receive(changeVector);
        return Put(id, collection, prepared.WrittenSpan, prefixLength, null, replaceExtras: true, extras, (changeVector, lastModified));
    }

    /// <summary>
    /// Records a delete another database instance made (replication): removes the document when it exists and leaves a
    /// tombstone with <paramref name="changeVector"/> (a tombstone is kept even when there was no document, so the
    /// delete flows on and later versions compare against it).
    /// </summary>
    public WriteResult DeleteVersion(string id, string collection, string changeVector, DateTime deleted)
    {
        Receive(changeVector);
        return Delete(id, null, (changeVector, deleted), collection);
    }

    /// <summary>
    /// Keeps versions of <paramref name="id"/> in conflict (<see cref="DocumentConflicts"/>): the document held now, if
    /// any, leaves the documents (a tombstone under its own change vector lets indexes drop it; its attachments, counters
    /// and revisions stay) and joins <paramref name="versions"/> in the <c>Conflicts</c> tree.
    /// </summary>
    public void KeepConflict(string id, IEnumerable<ConflictedVersion> versions)
    {
        ArgumentNullException.ThrowIfNull(versions);
        var key = _storage.KeyOf(id);
        if (Get(id) is { } held)
        {
            DocumentConflicts.Add(Transaction, key, new ConflictedVersion(held.Collection, held.ChangeVector, held.LastModified, held.Json));
            _anyConflicts = true;
            Delete(id, null, (held.ChangeVector, DateTime.UtcNow), held.Collection, runExtensions: false);
        }
        foreach (var v in versions)
        {
            Receive(v.ChangeVector);
            DocumentConflicts.Add(Transaction, key, v);
            _anyConflicts = true;
        }
    }

    /// <summary>The versions of <paramref name="id"/> in conflict (empty when none).</summary>
    public List<ConflictedVersion> ConflictsOf(string id) => DocumentConflicts.Of(Transaction, _storage.KeyOf(id));

    /// <summary>Removes the versions of <paramref name="id"/> in conflict (a replicated version newer than all of them replaces them).</summary>
    public void ClearConflicts(string id) => DocumentConflicts.Clear(Transaction, _storage.KeyOf(id));

    /// <summary>The merged change vector of the versions of <paramref name="key"/> in conflict, removing them; null when there were none.</summary>
    private string? ResolveConflicts(ReadOnlySpan<byte> key)
    {
        // Asked on every new document's put: the Conflicts tree is looked up once per transaction.
        if (!(_anyConflicts ??= DocumentConflicts.Any(Transaction)))
            return null;
        var conflicts = DocumentConflicts.Clear(Transaction, key);
        return conflicts.Count == 0 ? null : conflicts.Aggregate("", (cv, c) => ChangeVectors.Merge(cv, c.ChangeVector));
    }

    /// <summary>
    /// Merges the entries of another instance's change vector into what this database has received (kept parsed for
    /// the rest of the transaction: a batch of replicated versions merges each without re-parsing the whole).
    /// </summary>
    private void Receive(string changeVector)
    {
        if (_receivedEntries == null)
        {
            _receivedEntries = new Dictionary<string, ChangeVectorEntry>(StringComparer.Ordinal);
            foreach (var e in ChangeVectors.Parse(_received))
                _receivedEntries[e.DatabaseId] = e;
        }
        foreach (var e in ChangeVectors.Parse(changeVector))
        {
            // RAFT entries stay with the versions that descend from their transaction: a new document is not one.
            if (e.DatabaseId == DatabaseId || e.Tag == ChangeVectors.RaftTag || (_receivedEntries.TryGetValue(e.DatabaseId, out var held) && held.Etag >= e.Etag))
                continue;
            _receivedEntries[e.DatabaseId] = e;
            _receivedChanged = true;
            _receivedStale = true;
        }
    }

    private bool _receivedStale;

    /// <summary>What this database has received, as a change vector.</summary>
    private string Received
    {
        get
        {
            if (_receivedStale)
            {
                _received = ChangeVectors.Join(_receivedEntries!.Values);
                _receivedStale = false;
            }
            return _received;
        }
    }

    /// <summary>The latest tombstone of <paramref name="id"/> (any casing), or null.</summary>
    public Tombstone? GetTombstone(string id) => _storage.GetTombstone(Transaction, id);

    /// <summary>
    /// <see cref="Put(string, ReadOnlySpan{byte}, string?)"/> for a document already validated and prepared by
    /// <see cref="DocumentPreparer"/> (<paramref name="prepared"/>, prefix of <paramref name="prefixLength"/>
    /// bytes) whose <c>@metadata.@collection</c> is <paramref name="collection"/>.
    /// </summary>
    public WriteResult Put(string id, string collection, ReadOnlySpan<byte> prepared, int prefixLength, string? expectedChangeVector) =>
        Put(id, collection, prepared, prefixLength, expectedChangeVector, replaceExtras: false, null);

    /// <summary>
    /// The document put: with <paramref name="replaceExtras"/> false an update keeps the stored document's
    /// <see cref="DocumentExtras"/>; with it true they become <paramref name="extras"/>. A local write's change vector is
    /// the replaced version's (or, for a new document, what the database has received) with this database's entry set
    /// to the new etag; a <paramref name="version"/> from another instance keeps its own.
    /// </summary>
    private WriteResult Put(string id, string collection, ReadOnlySpan<byte> prepared, int prefixLength, string? expectedChangeVector,
        bool replaceExtras, DocumentExtras? extras, (string ChangeVector, DateTime LastModified)? version = null)
    {
        int keyLength = _storage.KeyOf(id, ref _scratch.Key);
        ReadOnlySpan<byte> key = _scratch.Key.AsSpan(0, keyLength);
        long oldEtag = 0;
        string? oldCollection = null;
        string? oldChangeVector = null; // only when it is not the old etag's own one-entry vector
        (long?, long?) oldDates = default;
        if (_docs.TryGet(key, out var existing))
        {
            oldEtag = DocumentRecord.Etag(existing);
            oldCollection = DocumentRecord.Collection(existing);
            if (DocumentRecord.HasExplicitChangeVector(existing))
                oldChangeVector = DocumentRecord.ChangeVector(existing, _storage);
            var existingJson = DocumentRecord.Json(existing, _storage, ref _scratch.Json);
            if (!replaceExtras)
                extras = DocumentExtras.Read(existingJson);
            oldDates = MetadataDates.Read(existingJson);
        }
        CheckExpected(id, expectedChangeVector, oldEtag, oldChangeVector);
        // A HiLo state document (Raven/Hilo/{tag}) keeps the collection it was created with whatever a
        // client writes over it: the clients rewrite it with their own type's collection (RavenDB's HiLo tests do).
        // A version from another instance may move the document: it was deleted and re-created there in another collection.
        bool moved = version != null && oldCollection != null && !string.Equals(oldCollection, collection, StringComparison.OrdinalIgnoreCase);
        if (oldCollection != null && !moved && !string.Equals(oldCollection, collection, StringComparison.OrdinalIgnoreCase) && !Collections.IsHiLoId(id))
            throw new BadRequestException($"Changing '{id}' from '{oldCollection}' to '{collection}' via update is not supported. Delete it and recreate the document {id}.", RavenExceptionTypes.DocumentCollectionMismatch);
        long etag = ++_lastEtag;
        var now = version?.LastModified ?? DateTime.UtcNow;
        // A write of an id in conflict resolves it: the new version descends from every conflicted one.
        string? conflicted = oldEtag == 0 ? ResolveConflicts(key) : null;
        string? explicitCv = version?.ChangeVector ?? LocalChangeVector(oldEtag == 0 ? ChangeVectors.Merge(conflicted, Received) : oldChangeVector, etag);
        string cv = explicitCv ?? _storage.LocalChangeVector(etag);
        string storedCollection = moved ? collection : oldCollection ?? collection;
        foreach (var extension in _storage.Extensions)
            extras = extension.BeforePut(storedCollection, extras);
        var record = _scratch.Record;
        record.ResetWrittenCount();
        DocumentRecord.WriteHeader(record, id, storedCollection, etag, now, explicitCv);
        DocumentJson.WriteStored(record, _scratch.MetadataWriter, prepared, prefixLength, id, storedCollection, cv, now, extras);
        Span<byte> etagKey = stackalloc byte[8];
        if (oldEtag != 0)
        {
            BinaryPrimitives.WriteInt64BigEndian(etagKey, oldEtag);
            _byEtag.Delete(etagKey);
            _byCollection.Delete(CollectionEtagKey(oldCollection!, oldEtag));
            if (moved)
            {
                AdjustCollectionCount(oldCollection!, -1);
                AdjustCollectionCount(collection, +1);
            }
        }
        else
        {
            AdjustCollectionCount(collection, +1);
        }
        _docs.Put(key, Compressed(record.WrittenSpan, storedCollection));
        BinaryPrimitives.WriteInt64BigEndian(etagKey, etag);
        _byEtag.Put(etagKey, key);
        _byCollection.Put(CollectionEtagKey(storedCollection, etag), key);
        var put = new DocumentPut
        {
            Key = key, Id = id, Collection = storedCollection, Etag = etag, ChangeVector = cv, LastModified = now,
            Prepared = prepared, PrefixLength = prefixLength, Extras = extras, IsNew = oldEtag == 0,
            DatesBefore = oldDates, Dates = MetadataDates.Read(prepared[prefixLength..]),
        };
        foreach (var extension in _storage.Extensions)
            extension.AfterPut(this, put);
        Changes?.Add(new(RavenLite.Server.Changes.ChangeKind.Document, "Put", id, storedCollection, ChangeVector: cv));
        return new WriteResult(id, storedCollection, etag, cv, now, Deleted: false);
    }

    /// <summary>
    /// The stored record of a version (header, then its JSON with <paramref name="extras"/> in the metadata), encoded as
    /// the documents tree stores records: for extensions that keep versions of their own (revisions). Valid until the
    /// next call.
    /// </summary>
    internal ReadOnlySpan<byte> EncodeVersion(string id, string collection, long etag, string changeVector, DateTime lastModified,
        ReadOnlySpan<byte> prepared, int prefixLength, DocumentExtras? extras)
    {
        var version = _scratch.Revision;
        version.ResetWrittenCount();
        DocumentRecord.WriteHeader(version, id, collection, etag, lastModified, changeVector == _storage.LocalChangeVector(etag) ? null : changeVector);
        DocumentJson.WriteStored(version, _scratch.MetadataWriter, prepared, prefixLength, id, collection, changeVector, lastModified, extras);
        return Compressed(version.WrittenSpan, collection);
    }

    /// <summary>The stored record of a version whose JSON is already complete (<paramref name="json"/>, as exported), encoded as the other overload does.</summary>
    internal ReadOnlySpan<byte> EncodeVersion(string id, string collection, long etag, DateTime lastModified, ReadOnlySpan<byte> json, string? changeVector = null)
    {
        var version = _scratch.Revision;
        version.ResetWrittenCount();
        DocumentRecord.WriteHeader(version, id, collection, etag, lastModified, changeVector == null || changeVector == _storage.LocalChangeVector(etag) ? null : changeVector);
        version.Write(json);
        return Compressed(version.WrittenSpan, collection);
    }

    /// <summary>Takes the next etag of this database (for an item an extension stores under an etag of its own).</summary>
    internal long NextEtag() => ++_lastEtag;

    /// <summary>
    /// Takes an etag for an item kept beside a document version — a revision, an attachment or its removal — so versions
    /// are numbered as RavenDB numbers them: there each such item has an etag of its own, taken between the versions'
    /// (a document's change vector after a revision or an attachment is two on, not one). Here the item needs only the
    /// number; answers the change vector at it, from <paramref name="basis"/> (the document's).
    /// </summary>
    internal string TakeItemEtag(string? basis) => ChangeVectors.WithEntry(basis, _storage.NodeTag, NextEtag(), DatabaseId);

    /// <summary>
    /// Rewrites the document <paramref name="id"/> (any casing) with its <see cref="DocumentExtras"/> changed by
    /// <paramref name="change"/> (which returns false when it changed nothing): a new etag and change vector,
    /// as any change of the document. Null when the document does not exist or nothing changed.
    /// </summary>
    public WriteResult? UpdateExtras(string id, Func<DocumentExtras, bool> change)
    {
        var stored = Get(id);
        if (stored == null)
            return null;
        var extras = DocumentExtras.Read(stored.Json) ?? new DocumentExtras();
        if (!change(extras))
            return null;
        var buffer = _scratch.Rewrite;
        buffer.ResetWrittenCount();
        int prefix = DocumentPreparer.Current.Prepare(stored.Json, buffer, out string collection);
        return Put(stored.Id, collection, buffer.WrittenSpan, prefix, null, replaceExtras: true, extras.IsEmpty ? null : extras);
    }

    /// <summary>
    /// True when <paramref name="id"/> holds exactly the document a <see cref="Put(string, string, ReadOnlySpan{byte}, int, string?)"/>
    /// of <paramref name="prepared"/> would store, apart from its change vector and last-modified time (the same
    /// collection, fields and client metadata, byte for byte): bulk insert's <c>skipOverwriteIfUnchanged</c>.
    /// </summary>
    public bool IsUnchanged(string id, string collection, ReadOnlySpan<byte> prepared, int prefixLength)
    {
        int keyLength = _storage.KeyOf(id, ref _scratch.Key);
        if (!_docs.TryGet(_scratch.Key.AsSpan(0, keyLength), out var existing))
            return false;
        var old = DocumentRecord.Read(existing, _storage);
        if (!string.Equals(old.Collection, collection, StringComparison.OrdinalIgnoreCase))
            return false;
        var record = _scratch.Record;
        record.ResetWrittenCount();
        DocumentJson.WriteStored(record, _scratch.MetadataWriter, prepared, prefixLength, old.Id, old.Collection, old.ChangeVector, old.LastModified,
            DocumentExtras.Read(old.Json));
        return record.WrittenSpan.SequenceEqual(old.Json);
    }

    /// <summary>
    /// Deletes a document, leaving a tombstone. <paramref name="expectedChangeVector"/> as for
    /// <see cref="Put(string, ReadOnlySpan{byte}, string?)"/>. Returns a result with <c>Deleted=false</c> when there was nothing to delete.
    /// </summary>
    public WriteResult Delete(string id, string? expectedChangeVector) => Delete(id, expectedChangeVector, null, null);

    private WriteResult Delete(string id, string? expectedChangeVector, (string ChangeVector, DateTime Deleted)? version, string? collection, bool runExtensions = true)
    {
        var key = _storage.KeyOf(id);
        if (!_docs.TryGet(key, out var existing))
        {
            CheckExpected(id, expectedChangeVector, 0, null);
            var conflicts = version == null ? DocumentConflicts.Clear(Transaction, key) : [];
            if (conflicts.Count > 0)
            {
                // Deleting an id in conflict resolves it to a delete that descends from every conflicted version.
                long resolvedEtag = ++_lastEtag;
                string merged = conflicts.Aggregate("", (cv, c) => ChangeVectors.Merge(cv, c.ChangeVector));
                string resolvedCv = LocalChangeVector(merged, resolvedEtag)!;
                var now = DateTime.UtcNow;
                WriteTombstone(key, conflicts[0].Collection, resolvedEtag, resolvedCv, now);
                return new WriteResult(id, conflicts[0].Collection, resolvedEtag, resolvedCv, now, Deleted: true);
            }
            if (version is not { } v)
                return new WriteResult(id, Collections.Empty, 0, "", DateTime.UtcNow, Deleted: false);
            long tombEtag = ++_lastEtag;
            WriteTombstone(key, collection ?? Collections.Empty, tombEtag, v.ChangeVector, v.Deleted);
            return new WriteResult(id, collection ?? Collections.Empty, tombEtag, v.ChangeVector, v.Deleted, Deleted: false);
        }
        var old = DocumentRecord.Read(existing, _storage);
        string? oldExplicit = DocumentRecord.HasExplicitChangeVector(existing) ? old.ChangeVector : null;
        CheckExpected(id, expectedChangeVector, old.Etag, oldExplicit);
        long etag = ++_lastEtag;
        var when = version?.Deleted ?? DateTime.UtcNow;
        string cv = version?.ChangeVector ?? LocalChangeVector(oldExplicit, etag) ?? _storage.LocalChangeVector(etag);
        _docs.Delete(key);
        _byEtag.Delete(DocumentsStorage.EtagKey(old.Etag));
        _byCollection.Delete(DocumentsStorage.CollectionEtagKey(old.Collection, old.Etag));
        AdjustCollectionCount(old.Collection, -1);
        WriteTombstone(key, old.Collection, etag, cv, when);
        var deleted = new DocumentDelete
        {
            Key = key, Document = old, Etag = etag, ChangeVector = cv, Extras = DocumentExtras.Read(old.Json), Dates = MetadataDates.Read(old.Json),
        };
        if (runExtensions)
            foreach (var extension in _storage.Extensions)
                extension.AfterDelete(this, deleted);
        Changes?.Add(new(RavenLite.Server.Changes.ChangeKind.Document, "Delete", old.Id, old.Collection, ChangeVector: cv));
        return new WriteResult(old.Id, old.Collection, etag, cv, when, Deleted: true);
    }

    /// <summary>
    /// A local write's change vector at <paramref name="etag"/> when it is more than the etag's one-entry vector:
    /// <paramref name="basis"/> (the replaced version's entries, or what the database received) with this database's
    /// entry set; null when <paramref name="basis"/> is empty (the common single-node case: nothing to store).
    /// </summary>
    private string? LocalChangeVector(string? basis, long etag)
    {
        if (ClusterTransactionIndex > 0)
            basis = ChangeVectors.WithEntry(basis, ChangeVectors.RaftTag, ClusterTransactionIndex, _storage.ClusterTransactionId);
        return string.IsNullOrEmpty(basis) ? null : ChangeVectors.WithEntry(basis, _storage.NodeTag, etag, DatabaseId);
    }

    /// <summary>Writes a tombstone: by etag (what indexes read) and by id (its time and change vector).</summary>
    private void WriteTombstone(byte[] key, string collection, long etag, string changeVector, DateTime deleted)
    {
        var colBytes = Encoding.UTF8.GetBytes(collection);
        var tomb = new byte[2 + colBytes.Length + key.Length];
        BinaryPrimitives.WriteUInt16LittleEndian(tomb, (ushort)colBytes.Length);
        colBytes.CopyTo(tomb, 2);
        key.CopyTo(tomb, 2 + colBytes.Length);
        _tombstones.Put(DocumentsStorage.EtagKey(etag), tomb);
        _tombstonesById.Put(key, TombstoneRecord.Write(etag, deleted, collection, changeVector));
    }

    /// <summary>The CollectionEtag tree's key (lower-cased collection, 0, big-endian etag) in a per-collection cached array; valid until the next call.</summary>
    private ReadOnlySpan<byte> CollectionEtagKey(string collection, long etag)
    {
        if (!_scratch.CollectionPrefixes.TryGetValue(collection, out var buffer))
        {
            var prefix = DocumentsStorage.CollectionPrefix(collection);
            buffer = new byte[prefix.Length + 8];
            prefix.CopyTo(buffer, 0);
            if (_scratch.CollectionPrefixes.Count > 1024)
                _scratch.CollectionPrefixes.Clear(); // many collections: keep the cache bounded
            _scratch.CollectionPrefixes[collection] = buffer;
        }
        BinaryPrimitives.WriteInt64BigEndian(buffer.AsSpan(buffer.Length - 8), etag);
        return buffer;
    }

    /// <summary>409 unless the document's current change vector (its <paramref name="explicitChangeVector"/>, or its etag's own one) is <paramref name="expected"/>.</summary>
    private void CheckExpected(string id, string? expected, long currentEtag, string? explicitChangeVector)
    {
        if (expected == null)
            return;
        if (expected.Length == 0)
        {
            if (currentEtag != 0)
                throw new ConcurrencyException($"Document {id} has change vector {explicitChangeVector ?? _storage.LocalChangeVector(currentEtag)}, but the write expected it not to exist.");
            return;
        }
        if (currentEtag == 0)
            throw new ConcurrencyException($"Document {id} does not exist, but the write expected change vector {expected}.");
        string current = explicitChangeVector ?? _storage.LocalChangeVector(currentEtag);
        if (!string.Equals(current, expected, StringComparison.Ordinal))
            throw new ConcurrencyException($"Document {id} has change vector {current}, but the write expected {expected}.");
    }

    /// <summary>Counts a document into or out of its collection; the counts tree is updated once per collection by <see cref="Complete"/>.</summary>
    private void AdjustCollectionCount(string collection, int delta) =>
        System.Runtime.InteropServices.CollectionsMarshal.GetValueRefOrAddDefault(_countDeltas, collection, out _) += delta;

    private void WriteCollectionCount(string collection, long delta)
    {
        var key = Encoding.UTF8.GetBytes(collection.ToLowerInvariant());
        long count = 0;
        string name = collection;
        if (_collections.TryGet(key, out var v))
        {
            count = BinaryPrimitives.ReadInt64LittleEndian(v);
            name = Encoding.UTF8.GetString(v[8..]);
        }
        count += delta;
        var nameBytes = Encoding.UTF8.GetBytes(name);
        var value = new byte[8 + nameBytes.Length];
        BinaryPrimitives.WriteInt64LittleEndian(value, count);
        nameBytes.CopyTo(value, 8);
        _collections.Put(key, value);
    }
}
