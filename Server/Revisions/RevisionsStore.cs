using RavenLite.Server.Documents;
using RavenLite.Server.Formatting;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Revisions;

/// <summary>
/// Revisions of documents (docs/format/documents.md "Revisions"):
/// <list type="bullet">
/// <item><c>Revisions</c>: document key, 0x1E, etag (big endian) → a record in the <see cref="DocumentRecord"/> format
///   (its JSON is the document as it was, <c>@flags</c> with <c>Revision</c>; a deletion is a record whose JSON is only
///   <c>@metadata</c> with <c>DeleteRevision</c>). The etag is the version's own, so its change vector is the version's.
///   A revision keeps a reference to the content of each attachment its <c>@attachments</c> lists, released with it.</item>
/// <item><c>RevisionsByEtag</c>: etag (big endian) → the <c>Revisions</c> key (lookups by change vector).</item>
/// <item><c>RevisionsBin</c>: document key → etag of the deletion revision of a deleted document (the revisions bin).</item>
/// </list>
/// The configuration is <c>State/RevisionsConfiguration</c> (JSON). Static: every method works on the transaction it is given.
/// </summary>
public static class RevisionsStore
{
    internal const string TreeName = "Revisions";
    internal const string ByEtagTree = "RevisionsByEtag";
    internal const string BinTree = "RevisionsBin";
    private const byte Separator = ExtensionKeys.Separator;
    private static readonly byte[] ConfigurationKey = "RevisionsConfiguration"u8.ToArray();

    /// <summary>The stored configuration, or null.</summary>
    public static RevisionsConfiguration? LoadConfiguration(Transaction tx)
    {
        using var json = DocumentsStorage.ReadState(tx, ConfigurationKey);
        return json == null ? null : RevisionsConfiguration.Parse(json.RootElement);
    }

    /// <summary>Stores a configuration.</summary>
    public static void SaveConfiguration(WriteTransaction tx, RevisionsConfiguration configuration) =>
        DocumentsStorage.WriteState(tx, ConfigurationKey, configuration.Write);

    private static byte[] Key(ReadOnlySpan<byte> docKey, long etag)
    {
        var k = new byte[docKey.Length + 9];
        docKey.CopyTo(k);
        k[docKey.Length] = Separator;
        BinaryPrimitives.WriteInt64BigEndian(k.AsSpan(docKey.Length + 1), etag);
        return k;
    }

    /// <summary>
    /// Stores a revision record (<see cref="DocumentRecord"/> format) of the document keyed <paramref name="docKey"/> at
    /// <paramref name="etag"/>. A revision whose change vector is more than its etag's own entry (a version replicated
    /// here, or a local write of one) is also indexed by that change vector (<c>RevisionsByChangeVector</c>).
    /// </summary>
    public static void Add(WriteTransaction tx, ReadOnlySpan<byte> docKey, long etag, ReadOnlySpan<byte> record, DocumentsStorage documents)
    {
        ArgumentNullException.ThrowIfNull(documents);
        var key = Key(docKey, etag);
        tx.CreateTree(TreeName).Put(key, record);
        tx.CreateTree(ByEtagTree).Put(DocumentsStorage.EtagKey(etag), key);
        if (DocumentRecord.HasExplicitChangeVector(record))
            tx.CreateTree(ByChangeVectorTree).Put(Encoding.UTF8.GetBytes(DocumentRecord.ChangeVector(record, documents)), key);
    }

    internal const string ByChangeVectorTree = "RevisionsByChangeVector";

    /// <summary>True when the document has a revision at <paramref name="etag"/>.</summary>
    public static bool Exists(Transaction tx, ReadOnlySpan<byte> docKey, long etag) => tx.ReadTree(TreeName) is { } t && t.ContainsKey(Key(docKey, etag));

    /// <summary>
    /// Writes the record of a deletion revision: only <c>@metadata</c>, flagged <c>HasRevisions, DeleteRevision</c>; its
    /// header keeps <paramref name="changeVector"/> unless it is <paramref name="documents"/>' own one-entry vector of <paramref name="etag"/>.
    /// </summary>
    public static byte[] DeletionRecord(string id, string collection, long etag, string changeVector, DateTime when, DocumentsStorage documents)
    {
        ArgumentNullException.ThrowIfNull(documents);
        var buffer = new ArrayBufferWriter<byte>(256);
        DocumentRecord.WriteHeader(buffer, id, collection, etag, when, changeVector == documents.LocalChangeVector(etag) ? null : changeVector);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WriteStartObject("@metadata");
            if (!string.Equals(collection, Collections.Empty, StringComparison.Ordinal))
                w.WriteString("@collection", collection);
            w.WriteString("@id", id);
            w.WriteString("@change-vector", changeVector);
            w.WriteString("@last-modified", JsonDates.FormatDate(when));
            w.WriteString("@flags", "HasRevisions, DeleteRevision");
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    private static void Remove(WriteTransaction tx, byte[] key, DocumentsStorage documents)
    {
        // A revision holds references to its attachments' content (taken when it was made): they go with it.
        if (tx.ReadTree(TreeName) is { } t && t.TryGet(key, out var record))
        {
            if (DocumentExtras.Read(DocumentRecord.Json(record, documents)) is { Attachments.Count: > 0 } extras)
                Attachments.AttachmentsStore.ReleaseAll(tx, extras);
            if (DocumentRecord.HasExplicitChangeVector(record))
                tx.CreateTree(ByChangeVectorTree).Delete(Encoding.UTF8.GetBytes(DocumentRecord.ChangeVector(record, documents)));
        }
        tx.CreateTree(TreeName).Delete(key);
        tx.CreateTree(ByEtagTree).Delete(key.AsSpan(key.Length - 8));
    }

    private static List<(byte[] Key, DateTime Modified)> List(Transaction tx, ReadOnlySpan<byte> docKey)
    {
        var result = new List<(byte[], DateTime)>();
        if (tx.ReadTree(TreeName) is not { } t)
            return result;
        var c = t.CreateCursor();
        c.Prefix = ExtensionKeys.Prefix(docKey);
        for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
            result.Add((c.Key.ToArray(), new DateTime(BinaryPrimitives.ReadInt64LittleEndian(c.Value[8..]), DateTimeKind.Utc)));
        return result;
    }

    /// <summary>
    /// Removes the oldest revisions beyond the configuration's limits: a revision goes when there are more than
    /// <c>MinimumRevisionsToKeep</c> (if set) and it is older than <c>MinimumRevisionAgeToKeep</c> (if set), at most
    /// <c>MaximumRevisionsToDeleteUponDocumentUpdate</c> at a time (if set). The newest revision always stays.
    /// </summary>
    public static void Trim(WriteTransaction tx, ReadOnlySpan<byte> docKey, RevisionsCollectionConfiguration configuration, DateTime now, DocumentsStorage documents)
    {
        if (configuration.MinimumRevisionsToKeep == null && configuration.MinimumRevisionAgeToKeep == null)
            return;
        var all = List(tx, docKey);
        long count = all.Count;
        long budget = configuration.MaximumRevisionsToDeleteUponDocumentUpdate ?? long.MaxValue;
        for (int i = 0; i < all.Count - 1 && budget > 0; i++)
        {
            bool overCount = configuration.MinimumRevisionsToKeep is not { } keep || count > keep;
            bool overAge = configuration.MinimumRevisionAgeToKeep is not { } age || now - all[i].Modified > age;
            if (!overCount || !overAge)
                break;
            Remove(tx, all[i].Key, documents);
            count--;
            budget--;
        }
    }

    /// <summary>Removes every revision of a document (purge on delete).</summary>
    public static void DeleteAll(WriteTransaction tx, ReadOnlySpan<byte> docKey, DocumentsStorage documents)
    {
        foreach (var (key, _) in List(tx, docKey))
            Remove(tx, key, documents);
        if (tx.ReadTree(BinTree) is { Count: > 0 })
            tx.CreateTree(BinTree).Delete(docKey);
    }

    /// <summary>Lists a deleted document in the revisions bin.</summary>
    public static void AddToBin(WriteTransaction tx, ReadOnlySpan<byte> docKey, long etag)
    {
        Span<byte> v = stackalloc byte[8];
        BinaryPrimitives.WriteInt64BigEndian(v, etag);
        tx.CreateTree(BinTree).Put(docKey, v);
    }

    /// <summary>Takes a document out of the revisions bin (it exists again).</summary>
    public static void RemoveFromBin(WriteTransaction tx, ReadOnlySpan<byte> docKey)
    {
        if (tx.ReadTree(BinTree) is { Count: > 0 })
            tx.CreateTree(BinTree).Delete(docKey);
    }

    /// <summary>A document's revisions, newest first, skipping <paramref name="start"/>.</summary>
    public static List<StoredDocument> GetFor(Transaction tx, ReadOnlySpan<byte> docKey, int start, int pageSize, DocumentsStorage documents)
    {
        var result = new List<StoredDocument>();
        if (tx.ReadTree(TreeName) is not { } t)
            return result;
        var c = t.CreateCursor();
        var prefix = ExtensionKeys.Prefix(docKey);
        c.Prefix = prefix;
        var last = new byte[prefix.Length + 8];
        prefix.CopyTo(last, 0);
        last.AsSpan(prefix.Length).Fill(0xFF);
        bool ok = c.Seek(last) ? c.Key.SequenceEqual(last) || c.MovePrevious() : c.SeekToLast();
        for (; ok && result.Count < pageSize; ok = c.MovePrevious())
        {
            if (!c.Key.StartsWith(prefix))
                break;
            if (start > 0)
            {
                start--;
                continue;
            }
            result.Add(DocumentRecord.Read(c.Value, documents));
        }
        return result;
    }

    /// <summary>
    /// Revisions written after <paramref name="afterEtag"/>, in etag order, each with the revision of the same document
    /// just before it (null for its first): what a subscription on revisions sends. Lazy over <paramref name="tx"/>.
    /// </summary>
    public static IEnumerable<(StoredDocument Current, StoredDocument? Previous)> ScanAfter(Transaction tx, long afterEtag, DocumentsStorage documents)
    {
        if (tx.ReadTree(ByEtagTree) is not { } byEtag || tx.ReadTree(TreeName) is not { } revisions)
            yield break;
        var c = byEtag.CreateCursor();
        if (!c.Seek(DocumentsStorage.EtagKey(afterEtag + 1)))
            yield break;
        do
        {
            byte[] key = c.Value.ToArray();
            if (!revisions.TryGet(key, out var record))
                continue; // trimmed since
            var current = DocumentRecord.Read(record, documents);
            StoredDocument? previous = null;
            var p = revisions.CreateCursor();
            int docKeyLength = key.Length - 9;
            if (p.Seek(key) && p.MovePrevious() && p.Key.Length == key.Length && p.Key[..(docKeyLength + 1)].SequenceEqual(key.AsSpan(0, docKeyLength + 1)))
                previous = DocumentRecord.Read(p.Value, documents);
            yield return (current, previous);
        }
        while (c.MoveNext());
    }

    /// <summary>Number of revisions of a document.</summary>
    public static long Count(Transaction tx, ReadOnlySpan<byte> docKey) => List(tx, docKey).Count;

    /// <summary>Number of revisions in the database.</summary>
    public static long CountAll(Transaction tx) => tx.ReadTree(TreeName)?.Count ?? 0;

    /// <summary>
    /// The revision with this change vector, or null: a revision of a local write is found by this database's entry (its
    /// etag), one with more entries by the <c>RevisionsByChangeVector</c> index.
    /// </summary>
    public static StoredDocument? GetByChangeVector(Transaction tx, string changeVector, DocumentsStorage documents)
    {
        ArgumentNullException.ThrowIfNull(documents);
        if (tx.ReadTree(TreeName) is not { } revisions)
            return null;
        List<ChangeVectorEntry> entries;
        try
        {
            entries = ChangeVectors.Parse(changeVector);
        }
        catch (BadRequestException)
        {
            return null;
        }
        if (entries.Count == 1 && entries[0].DatabaseId == documents.DatabaseId)
        {
            if (tx.ReadTree(ByEtagTree) is not { } byEtag || !byEtag.TryGet(DocumentsStorage.EtagKey(entries[0].Etag), out var key))
                return null;
            return revisions.TryGet(key, out var v) && DocumentRecord.ChangeVector(v, documents) == changeVector ? DocumentRecord.Read(v, documents) : null;
        }
        string canonical = ChangeVectors.Join(entries);
        return tx.ReadTree(ByChangeVectorTree) is { } byChangeVector && byChangeVector.TryGet(Encoding.UTF8.GetBytes(canonical), out var at)
            && revisions.TryGet(at, out var record) ? DocumentRecord.Read(record, documents) : null;
    }

    /// <summary>The newest revision of a document written at or before <paramref name="before"/>, or null.</summary>
    public static StoredDocument? GetBefore(Transaction tx, ReadOnlySpan<byte> docKey, DateTime before, DocumentsStorage documents)
    {
        var tree = tx.ReadTree(TreeName);
        foreach (var (key, modified) in Enumerable.Reverse(List(tx, docKey)))
            if (modified <= before)
                return tree!.TryGet(key, out var v) ? DocumentRecord.Read(v, documents) : null;
        return null;
    }

    /// <summary>The deletion revisions of the documents in the bin, in id order, skipping <paramref name="start"/>.</summary>
    public static List<StoredDocument> Bin(Transaction tx, int start, int pageSize, DocumentsStorage documents)
    {
        var result = new List<StoredDocument>();
        if (tx.ReadTree(BinTree) is not { } bin)
            return result;
        var revisions = tx.ReadTree(TreeName)!;
        var c = bin.CreateCursor();
        for (bool ok = c.SeekToFirst(); ok && result.Count < pageSize; ok = c.MoveNext())
        {
            if (start > 0)
            {
                start--;
                continue;
            }
            if (revisions.TryGet(Key(c.Key, BinaryPrimitives.ReadInt64BigEndian(c.Value)), out var v))
                result.Add(DocumentRecord.Read(v, documents));
        }
        return result;
    }

    /// <summary>Keys of the documents that have revisions, in key order (for revert).</summary>
    public static List<byte[]> DocumentKeys(Transaction tx)
    {
        var result = new List<byte[]>();
        if (tx.ReadTree(TreeName) is not { } t)
            return result;
        var c = t.CreateCursor();
        byte[]? last = null;
        for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
        {
            var docKey = c.Key[..^9];
            if (last == null || !docKey.SequenceEqual(last))
                result.Add(last = docKey.ToArray());
        }
        return result;
    }

}
