using RavenLite.Server.Documents;

namespace RavenLite.Server.Queries;

/// <summary>
/// One candidate of a query: a document (scan), or an index entry and the document it came from.
/// Condition and ordering read <see cref="Values"/>: the document's path values for a scan, the
/// entry's field values for an index. The document is read only for rows that are kept.
/// </summary>
internal sealed class Row : IDisposable
{
    private JsonDocument? _entry, _document;
    private byte[]? _entryJson, _lowerId;
    private Storage.Trees.Tree? _docs;

    private Row()
    {
    }

    private StoredDocument? _loaded;
    private Documents.DocumentsStorage? _documents;

    /// <summary>
    /// The document: given, or read from the snapshot on first use once the row is bound
    /// (<see cref="Bind"/>); valid while the query's database transaction is open, and after (a copy).
    /// </summary>
    public StoredDocument? Document
    {
        get
        {
            if (_loaded == null && _documents != null && _docs != null && _docs.TryGet(_lowerId, out var record))
                _loaded = DocumentRecord.Read(record, _documents);
            return _loaded;
        }
        private set => _loaded = value;
    }

    public bool HasEntry => _entryJson != null;

    /// <summary>The index entry parsed on first use (a page ranked and counted from the index may never need it).</summary>
    private JsonDocument? Entry => _entry ??= _entryJson == null ? null : JsonDocument.Parse(_entryJson);

    public static Row ForDocument(StoredDocument doc) => new() { Document = doc };

    /// <summary>A row of an index entry; <paramref name="document"/> when already read, <paramref name="changed"/> when it changed since it was indexed.</summary>
    public static Row ForEntry(byte[] entry, byte[] lowerId, StoredDocument? document, bool changed, Storage.Trees.Tree docs, long entryNumber) =>
        new() { _entryJson = entry, _lowerId = lowerId, Document = document, _docs = docs, EntryNumber = changed ? -1 : entryNumber, IndexEntry = entryNumber };

    /// <summary>The index entry (the snapshot's document number) this row was read from, whether or not its document changed since; else -1.</summary>
    public long IndexEntry { get; private init; } = -1;

    /// <summary>The index entry (the snapshot's document number) this row was read from, when its document is unchanged since; else -1.</summary>
    public long EntryNumber { get; private init; } = -1;

    /// <summary>The document parsed (for projections, includes, scans).</summary>
    public JsonElement DocumentJson => (_document ??= JsonDocument.Parse(Document!.Json)).RootElement;

    /// <summary>Lets <see cref="Document"/> read the document on first use (the row is kept while the query's transaction is open).</summary>
    public Row Bind(Documents.DocumentsStorage documents)
    {
        _documents = documents;
        return this;
    }

    /// <summary>The values a path has: arrays flattened; none when missing.</summary>
    public List<JsonElement> Values(RqlPath path)
    {
        var result = new List<JsonElement>();
        if (path.IsId)
        {
            if (_loaded == null && _docs != null && _docs.TryGet(_lowerId, out var record))
                result.Add(JsonSerializer.SerializeToElement(DocumentRecord.Id(record)));
            else if (_loaded != null)
                result.Add(JsonSerializer.SerializeToElement(_loaded.Id));
            return result;
        }
        if (Entry is { } entry)
        {
            if (entry.RootElement.TryGetProperty(path.ToString(), out var values))
                foreach (var v in values.EnumerateArray())
                    result.Add(v);
            return result;
        }
        JsonPaths.Walk(DocumentJson, path.Parts, 0, result);
        return result;
    }

    public void Dispose()
    {
        _entry?.Dispose();
        _document?.Dispose();
    }
}
