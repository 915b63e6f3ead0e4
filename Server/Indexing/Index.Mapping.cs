using Lucene.Net.Documents;
using Lucene.Net.Index;
using Lucene.Net.Util;
using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Indexing;

/// <summary>Mapping documents: entries of a simple map (on this thread or on the thread pool, in chunks), map results of a map-reduce.</summary>
public sealed partial class Index
{
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
            return (mapped.Json.Length > 0 ? Entry(lowerId, etag, mapped.Json, fieldValues, terms, mapped.Boosts) : null, null);
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
    /// Counters and time series: maps the items of one document that the index reads (<see cref="IndexItems"/>) and
    /// replaces the document's entries — one per map output, each storing the output as the answer — or, map-reduce,
    /// its map results; false when the map failed (an index error; the document loses its entries).
    /// </summary>
    private bool WriteItems(Transaction dbTx, WriteTransaction? mapResultsTx, ReadOnlySpan<byte> lowerId, string id, string collection, long etag, ReadOnlySpan<byte> json,
        DocumentLoader loader, Dictionary<string, MapReduceStore.KeyChange> dirtied, HashSet<(string Field, string Term)> terms, HashSet<string>? loaded)
    {
        List<byte[]> results;
        List<(string KeyJson, byte[] Results)> groups = [];
        string? error = null;
        try
        {
            using var document = JsonDocument.Parse(json.ToArray());
            var items = new List<(Scripting.ScriptMap Map, byte[] Item)>();
            foreach (var map in Compiled.ItemMaps(collection))
                foreach (var (_, item) in IndexItems.Of(dbTx, map.Source, lowerId, id, document.RootElement))
                    items.Add((map, item));
            results = Compiled.ItemResults(items, id, loader, loaded);
            if (_mapReduce != null)
                groups = Compiled.GroupByReduceKey(results);
        }
        catch (Exception e) when (e is JsonException or IndexMapException)
        {
            error = e.Message;
            results = [];
            groups = [];
        }
        if (error != null)
            RecordError(id, error);
        if (_mapReduce != null)
        {
            _mapReduce.Replace(mapResultsTx!, lowerId, groups, dirtied);
            return error == null;
        }
        string key = Encoding.UTF8.GetString(lowerId);
        var entries = new List<Document>(results.Count);
        foreach (var output in results)
        {
            using var entry = Compiled.EntryOfResult(output, _fieldValues);
            var doc = Entry(key, etag, entry.Json, _fieldValues, terms, null);
            doc.Add(new StoredField(ReduceResultField, output));
            entries.Add(doc);
        }
        _writer.UpdateDocuments(new Term(IdField, key), entries);
        return error == null;
    }

    /// <summary>The Lucene document of one entry: id, etag, sort keys and entry in one doc value; every term of its fields indexed.</summary>
    private Document Entry(string lowerId, long etag, byte[] entry, List<List<JsonElement>> fieldValues, HashSet<(string Field, string Term)> terms, float[]? boosts)
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
            // Search fields are also analyzed text (SearchAnalyzer, the writer's analyzer) for search(); a boost
            // (.Boost(n) in the map) goes into the field's norm, so Lucene scores its matches that much higher.
            float boost = boosts != null && i < boosts.Length ? boosts[i] : 1;
            foreach (var v in values)
                if (v.ValueKind == JsonValueKind.String)
                    doc.Add(new TextField(SearchQuery.FieldName(field.Id), v.GetString()!, Field.Store.NO) { Boost = boost });
        }
        var tokens = new List<string>(terms.Count);
        foreach (var (field, term) in terms)
            tokens.Add(IndexKeys.TermText(field, term));
        doc.Add(new Field(IndexKeys.TermsField, new TermsTokenStream(tokens), TermsFieldType));
        return doc;
    }
}
