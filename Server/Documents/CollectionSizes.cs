namespace RavenLite.Server.Documents;

/// <summary>
/// RavenDB's detailed collection statistics: per collection its documents, and the bytes its documents, tombstones and
/// revisions take as stored (record bytes, after compression; keys and tree overhead not counted), read from one
/// snapshot by walking those trees once.
/// </summary>
public static class CollectionSizes
{
    /// <summary>One collection's figures.</summary>
    public sealed class Details(string name)
    {
        public string Name { get; } = name;
        public long Documents { get; set; }
        public long DocumentsBytes { get; set; }
        public long TombstonesBytes { get; set; }
        public long RevisionsBytes { get; set; }
    }

    /// <summary>Every collection with documents, tombstones or revisions, by name.</summary>
    public static SortedDictionary<string, Details> Of(Storage.Transactions.Transaction tx)
    {
        var result = new SortedDictionary<string, Details>(StringComparer.OrdinalIgnoreCase);
        Details Get(string collection) => result.TryGetValue(collection, out var d) ? d : result[collection] = new Details(collection);
        var docs = tx.ReadTree(DocumentsStorage.DocsTree)!.CreateCursor();
        if (docs.SeekToFirst())
        {
            do
            {
                var d = Get(DocumentRecord.Collection(docs.Value));
                d.Documents++;
                d.DocumentsBytes += docs.Value.Length;
            }
            while (docs.MoveNext());
        }
        var tombs = tx.ReadTree(DocumentsStorage.TombstoneTree)!.CreateCursor();
        if (tombs.SeekToFirst())
        {
            do
            {
                var v = tombs.Value;
                int length = System.Buffers.Binary.BinaryPrimitives.ReadUInt16LittleEndian(v);
                Get(Encoding.UTF8.GetString(v.Slice(2, length))).TombstonesBytes += v.Length;
            }
            while (tombs.MoveNext());
        }
        if (tx.ReadTree(Revisions.RevisionsStore.TreeName)?.CreateCursor() is { } revisions && revisions.SeekToFirst())
        {
            do
                Get(DocumentRecord.Collection(revisions.Value)).RevisionsBytes += revisions.Value.Length;
            while (revisions.MoveNext());
        }
        return result;
    }
}
