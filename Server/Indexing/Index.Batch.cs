using Lucene.Net.Index;
using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Server.Indexing;

public sealed partial class Index
{
    /// <summary>
    /// One indexing batch: from one database snapshot, the documents of the index's collections after its position (then
    /// the documents that loaded changed ones, then the tombstones), until the batch's budget of documents, bytes or time
    /// is spent. Map-reduce results and references go to one storage write transaction, opened on the first change;
    /// a simple map's entries go to the IndexWriter. Used once, on the worker thread.
    /// </summary>
    private sealed class Batch : IDisposable
    {
        private readonly Index _index;
        private readonly Transaction _dbTx;
        private readonly Tree _docs;
        private readonly long _started = Stopwatch.GetTimestamp();
        private readonly TimeSpan _batchTime;
        private readonly EntryLookup _lookup;
        private readonly DocumentLoader _loader;
        private readonly Dictionary<string, MapReduceStore.KeyChange> _dirtied = new(StringComparer.Ordinal);
        private int _budget = BatchDocuments;
        private long _bytes;
        private long _attempts, _successes;
        private WriteTransaction? _mapResultsTx; // map and reduce results, references: opened on the first change of the batch
        private byte[]? _jsonBuffer; // a compressed document's JSON

        // Maps that may run anywhere (compiled C# or an auto index's paths; no loads; a simple map creates no fields):
        // documents are mapped a chunk at a time on the thread pool, up to MapChunksInFlight chunks ahead of this thread,
        // which stores their results in order — map-reduce results in storage, a simple map's Lucene documents (built by
        // the task) added to the IndexWriter here, so index order stays etag order.
        private readonly Queue<Task<MappedDocument[]>>? _mapping;
        private List<PendingDocument>? _chunk;

        public Batch(Index index)
        {
            _index = index;
            var position = index._snapshot.Position;
            Etags = new Dictionary<string, long>(position.LastEtags, StringComparer.OrdinalIgnoreCase);
            LastTombstone = position.LastTombstoneEtag;
            _dbTx = index._db.Environment.ReadTransaction();
            _docs = _dbTx.ReadTree(DocumentsStorage.DocsTree)!;
            _batchTime = index._catchingUp ? CatchUpBatchTime : BatchTime;
            _lookup = new EntryLookup(index._snapshot.Reader); // the worker's own reference: only the worker replaces it
            _loader = DocumentLoaders.From(index._db.Documents, _dbTx);
            _mapping = index._references == null && index.Compiled.SourceType == IndexSourceType.Documents && (index._mapReduce != null ? index.Compiled.MapResultsRunOnAnyThread : index.Compiled.MapEntryRunsOnAnyThread)
                ? new Queue<Task<MappedDocument[]>>() : null;
        }

        /// <summary>The position reached per collection (and <see cref="ReferencesKey"/>).</summary>
        public Dictionary<string, long> Etags { get; }

        /// <summary>The last tombstone etag reached.</summary>
        public long LastTombstone { get; private set; }

        /// <summary>True once the batch moved the position or changed the index.</summary>
        public bool Changed { get; private set; }

        /// <summary>The terms of the entries written (for the index's term counts).</summary>
        public HashSet<(string Field, string Term)> Terms { get; } = [];

        /// <summary>True when the batch stopped on its budget rather than on the end of the work.</summary>
        public bool Spent => _budget <= 0 || _bytes >= BatchBytes || Stopwatch.GetElapsedTime(_started) >= _batchTime;

        /// <summary>Runs the batch; throws (after <see cref="Abort"/>-able state) when a step fails.</summary>
        public void Run()
        {
            // JavaScript maps' loadAttachment() and cmpxchg() read through this batch's snapshot (the maps run on this thread).
            using var attachments = Scripting.ScriptContext.EnterAttachments(AttachmentLoaders.From(_dbTx));
            using var compareExchange = Scripting.ScriptContext.EnterCompareExchange(key => CompareExchange.CompareExchangeStore.GetObject(_dbTx, key));
            if (_index._reduceDirty && _index._mapReduce != null)
            {
                // Opened from a commit (start, or after a rollback): reduce again, from all their map results, the keys whose
                // reduce results may not be in the index.
                foreach (string hash in _index._mapReduce.Dirty(_dbTx))
                    _dirtied[hash] = new MapReduceStore.KeyChange { Full = true };
                if (_dirtied.Count > 0)
                    _mapResultsTx = _index._db.Environment.WriteTransaction();
                _index._reduceDirty = false;
            }
            if (_index.Compiled.SourceType == IndexSourceType.Documents)
                MapCollections();
            else
                MapItemChanges();
            _index._catchingUp = Spent;
            if (_mapping != null)
            {
                SendChunk(last: true);
                while (_mapping.Count > 0)
                    StoreMapped(_mapping.Dequeue());
            }
            if (_index.Compiled.UsesLoad && _budget > 0)
                RemapLoadersOfChanged();
            if (_index.Compiled.UsesCompareExchange && _budget > 0)
                RemapReadersOfChangedCompareExchange();
            Interlocked.Add(ref _index._mapAttempts, _attempts);
            Interlocked.Add(ref _index._mapSuccesses, _successes);
            Interlocked.Add(ref _index._mapErrors, _attempts - _successes);
            RemoveTombstoned();
            if (_mapResultsTx != null)
                Reduce();
        }

        /// <summary>After a failed step: waits out the mapping tasks and rolls the storage transaction back.</summary>
        public void Abort()
        {
            while (_mapping is { Count: > 0 })
                _mapping.Dequeue().ContinueWith(_ => { }, TaskScheduler.Default).Wait(); // no mapping task outlives the batch
            _mapResultsTx?.Dispose(); // not committed: rolled back
            _mapResultsTx = null;
        }

        public void Dispose()
        {
            _mapResultsTx?.Dispose();
            _dbTx.Dispose();
        }

        private WriteTransaction MapResultsTx => _mapResultsTx ??= _index._db.Environment.WriteTransaction();

        /// <summary>The documents of each collection after the position, in etag order.</summary>
        private void MapCollections()
        {
            var byCollection = _dbTx.ReadTree(DocumentsStorage.CollectionEtagTree)!;
            foreach (string source in _index.Compiled.Collections)
            {
                if (Spent)
                    break;
                // An all-documents map (from doc in docs) reads every document in etag order; its position is one etag.
                bool all = source == CompiledIndex.AllDocuments;
                var cursor = all ? _dbTx.ReadTree(DocumentsStorage.EtagTree)!.CreateCursor() : byCollection.CreateCursor();
                if (!all)
                    cursor.Prefix = DocumentsStorage.CollectionPrefix(source);
                if (!cursor.Seek(all ? DocumentsStorage.EtagKey(Etags.GetValueOrDefault(source) + 1) : DocumentsStorage.CollectionEtagKey(source, Etags.GetValueOrDefault(source) + 1)))
                    continue;
                do
                {
                    long etag = BinaryPrimitives.ReadInt64BigEndian(cursor.Key[^8..]);
                    var lowerId = cursor.Value;
                    if (_docs.TryGet(lowerId, out var record))
                    {
                        string collection = all ? DocumentRecord.Collection(record) : source;
                        _attempts++;
                        if (_mapping != null)
                        {
                            (_chunk ??= new List<PendingDocument>(MapChunkSize)).Add(
                                new PendingDocument(lowerId.ToArray(), record.ToArray(), collection, etag, _index._mapReduce == null && _lookup.Has(lowerId)));
                            if (_chunk.Count == MapChunkSize)
                                SendChunk();
                        }
                        else if (MapDocument(lowerId, record, collection, etag))
                        {
                            _successes++;
                        }
                    }
                    Etags[source] = etag;
                    Changed = true;
                }
                while (--_budget > 0 && _bytes < BatchBytes && ((_budget & 255) != 0 || Stopwatch.GetElapsedTime(_started) < _batchTime) && cursor.MoveNext());
            }
        }

        /// <summary>
        /// Counters and time series: the documents whose items changed after the position (the change log of their kind,
        /// in etag order), each mapped again with all the items the index reads; a document seen once per batch.
        /// </summary>
        private void MapItemChanges()
        {
            var kind = _index.Compiled.SourceType;
            string key = IndexItems.PositionKey(kind);
            var seen = new HashSet<string>(StringComparer.Ordinal);
            foreach (var (etag, docKey) in IndexItems.ChangedAfter(_dbTx, kind, Etags.GetValueOrDefault(key)))
            {
                if (Spent)
                    break;
                if (seen.Add(Encoding.UTF8.GetString(docKey)) && _docs.TryGet(docKey, out var record)
                    && _index.Compiled.SourceOf(DocumentRecord.Collection(record)) != null)
                {
                    _attempts++;
                    if (MapDocument(docKey, record, DocumentRecord.Collection(record), DocumentRecord.Etag(record)))
                        _successes++;
                }
                Etags[key] = etag;
                Changed = true;
                _budget--;
            }
        }

        /// <summary>Maps one document (its map results, or its entry, or its items' entries) and records what it loaded; false when the map failed.</summary>
        private bool MapDocument(ReadOnlySpan<byte> lowerId, ReadOnlySpan<byte> record, string collection, long etag)
        {
            var loaded = _index._references != null ? new HashSet<string>(StringComparer.Ordinal) : null;
            var json = DocumentRecord.Json(record, _index._db.Documents, ref _jsonBuffer);
            _bytes += json.Length;
            bool ok = _index.Compiled.SourceType != IndexSourceType.Documents
                ? _index.WriteItems(_dbTx, _index._mapReduce != null ? MapResultsTx : null, lowerId, DocumentRecord.Id(record), collection, etag, json, _loader, _dirtied, Terms, loaded)
                : _index._mapReduce != null
                ? _index.WriteMapResults(MapResultsTx, lowerId, DocumentRecord.Id(record), collection, json, _loader, _dirtied, loaded)
                : _index.Write(lowerId, DocumentRecord.Id(record), collection, etag, json, _lookup, Terms, _loader, loaded);
            if (loaded != null)
                _index._references!.Replace(MapResultsTx, lowerId, loaded);
            return ok;
        }

        private void StoreMapped(Task<MappedDocument[]> mapped)
        {
            foreach (var m in mapped.GetAwaiter().GetResult())
            {
                _bytes += m.JsonBytes;
                if (m.Error == null)
                    _successes++;
                else
                    _index.RecordError(m.Id, m.Error);
                if (_index._mapReduce != null)
                    _index._mapReduce.Replace(MapResultsTx, m.LowerId, m.Groups!, _dirtied);
                else
                    _index.WriteEntry(Encoding.UTF8.GetString(m.LowerId), m.HasEntry, m.Entry);
            }
        }

        private MappedDocument[] Map(List<PendingDocument> toMap) => _index._mapReduce != null ? _index.MapChunk(toMap) : _index.BuildChunk(toMap);

        private void SendChunk(bool last = false)
        {
            if (_chunk is not { Count: > 0 })
                return;
            var toMap = _chunk;
            _chunk = null;
            if (last && _mapping!.Count == 0)
            {
                // The batch's only chunk (a few changes): mapped here, not handed to a thread-pool thread this thread
                // would wait for (waking one costs a single change more latency than mapping it here).
                StoreMapped(Task.FromResult(Map(toMap)));
                return;
            }
            _mapping!.Enqueue(Task.Run(() => Map(toMap)));
            if (_mapping.Count >= MapChunksInFlight)
                StoreMapped(_mapping.Dequeue());
        }

        /// <summary>Documents changed since the position: map again the (already indexed) documents that loaded them.</summary>
        private void RemapLoadersOfChanged()
        {
            var changes = _dbTx.ReadTree(DocumentsStorage.EtagTree)!.CreateCursor();
            if (!changes.Seek(DocumentsStorage.EtagKey(Etags.GetValueOrDefault(ReferencesKey) + 1)))
                return;
            do
            {
                RemapSourcesOf(changes.Value);
                Etags[ReferencesKey] = BinaryPrimitives.ReadInt64BigEndian(changes.Key);
                Changed = true;
            }
            while (--_budget > 0 && changes.MoveNext());
        }

        /// <summary>Compare-exchange values changed since the position: map again the (already indexed) documents that read them.</summary>
        private void RemapReadersOfChangedCompareExchange()
        {
            foreach (var (number, key) in CompareExchange.CompareExchangeStore.ChangedAfter(_dbTx, Etags.GetValueOrDefault(CompareExchangeKey)))
            {
                RemapSourcesOf(Encoding.UTF8.GetBytes(Scripting.ScriptContext.CompareExchangeMarker + key));
                Etags[CompareExchangeKey] = number;
                Changed = true;
                if (--_budget <= 0)
                    break;
            }
        }

        /// <summary>Maps again the (already indexed) documents that loaded this one.</summary>
        private void RemapSourcesOf(ReadOnlySpan<byte> lowerLoaded)
        {
            var collections = _index.Compiled.Collections;
            foreach (var source in _index._references!.SourcesOf(_dbTx, lowerLoaded))
            {
                if (!_docs.TryGet(source, out var sourceRecord))
                    continue;
                string sourceCollection = DocumentRecord.Collection(sourceRecord);
                long sourceEtag = DocumentRecord.Etag(sourceRecord);
                string? position = _index.Compiled.SourceOf(sourceCollection);
                // A document not indexed yet (after the position) is mapped when the position reaches it; items indexes
                // follow their change log, so a source of theirs is always mapped again.
                if (position == null || (_index.Compiled.SourceType == IndexSourceType.Documents && sourceEtag > Etags.GetValueOrDefault(position)))
                    continue;
                MapDocument(source, sourceRecord, position == CompiledIndex.AllDocuments ? sourceCollection : position, sourceEtag);
            }
        }

        /// <summary>Tombstones after the position: their entries (or map results) go, unless the document was re-created since.</summary>
        private void RemoveTombstoned()
        {
            var tombs = _dbTx.ReadTree(DocumentsStorage.TombstoneTree)!.CreateCursor();
            if (_budget <= 0 || !tombs.Seek(DocumentsStorage.EtagKey(LastTombstone + 1)))
                return;
            var collections = _index.Compiled.Collections;
            do
            {
                long etag = BinaryPrimitives.ReadInt64BigEndian(tombs.Key);
                var v = tombs.Value;
                int colLen = BinaryPrimitives.ReadUInt16LittleEndian(v);
                string collection = Encoding.UTF8.GetString(v.Slice(2, colLen));
                var lowerId = v[(2 + colLen)..];
                // A document re-created since (in one of this index's collections) is, or will be, indexed at its
                // new etag: its entry must stay.
                bool recreated = _docs.TryGet(lowerId, out var live) && _index.Compiled.SourceOf(DocumentRecord.Collection(live)) != null;
                if (!recreated && _index.Compiled.SourceOf(collection) != null)
                {
                    if (_index._mapReduce != null)
                        _index._mapReduce.Replace(MapResultsTx, lowerId, [], _dirtied);
                    else
                        _index._writer.DeleteDocuments(new Term(IdField, Encoding.UTF8.GetString(lowerId)));
                }
                if (_index._references != null)
                    RemapSourcesOf(lowerId); // a loaded document deleted: its sources load null now
                LastTombstone = etag;
                Changed = true;
            }
            while (--_budget > 0 && tombs.MoveNext());
        }

        /// <summary>Reduces the changed keys, commits map and reduce results (overlapping the index update), writes the reduce output.</summary>
        private void Reduce()
        {
            var tx = _mapResultsTx!;
            // Map and reduce results are durable before the index entries that come from them (the keys stay dirty until then).
            var reduced = _index._mapReduce != null ? _index.ReduceKeys(tx, _dirtied) : [];
            // The journal write and fsync overlap the index update; the Lucene commit waits for them (CommitPending).
            _index._mapResultsDurable = tx.CommitAsync(writeHereWhenIdle: false);
            tx.Dispose();
            _mapResultsTx = null;
            _index.WriteReduced(reduced, Terms);
            if (_index.Definition.OutputReduceToCollection is { } output && reduced.Count > 0)
                _index.WriteArtificialDocuments(output, reduced);
            Changed |= reduced.Count > 0;
        }
    }

    /// <summary>Runs one <see cref="Batch"/> and publishes what it changed; false when there was nothing to do.</summary>
    private bool IndexBatch()
    {
        using var batch = new Batch(this);
        try
        {
            batch.Run();
        }
        catch
        {
            batch.Abort();
            AbandonCommit();
            _writer.Rollback(); // everything since the last commit is dropped; the writer is closed and reopened
            _uncommitted = false;
            OpenWriterAndReader();
            throw;
        }
        if (!batch.Changed)
            return false;
        _uncommitted = true;
        var current = _snapshot.Reader;
        var reopened = DirectoryReader.OpenIfChanged(current, _writer, applyAllDeletes: true);
        if (reopened == null)
        {
            current.IncRef(); // the same content under the new position
            reopened = current;
        }
        Publish(reopened, batch.Etags, batch.LastTombstone);
        Interlocked.Exchange(ref _lastIndexingTicks, DateTime.UtcNow.Ticks);
        Interlocked.Exchange(ref _advanced, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();
        if (Stopwatch.GetElapsedTime(_lastCommit) >= CommitInterval)
            BeginCommit(); // after publishing, and beside the next batches: they are not held up by its fsyncs
        return true;
    }
}
