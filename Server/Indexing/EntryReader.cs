using Lucene.Net.Index;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Reads entries of an index snapshot by document number from their doc values (column-stored,
/// uncompressed: a lookup costs no stored-fields block decompression): the lower-cased id, the etag the
/// document was mapped at and the entry JSON; an entry over <see cref="Index.MaxDocValueBytes"/> is read
/// from its stored field instead. Create one per query (doc values instances are per thread); not thread-safe.
/// </summary>
internal sealed class EntryReader(IndexReader reader)
{
    private static readonly ISet<string> LargeEntry = new HashSet<string> { Index.LargeEntryField };

    private readonly BinaryDocValues? _ids = MultiDocValues.GetBinaryValues(reader, Index.IdField);
    private readonly NumericDocValues? _etags = MultiDocValues.GetNumericValues(reader, Index.EtagField);
    private readonly BinaryDocValues? _entries = MultiDocValues.GetBinaryValues(reader, Index.EntryField);
    private readonly BytesRef _scratch = new();

    /// <summary>Entry <paramref name="doc"/>: lower-cased id (UTF-8), etag, entry JSON.</summary>
    public (byte[] LowerId, long Etag, byte[] Entry) Read(int doc)
    {
        if (_ids == null || _etags == null || _entries == null)
            throw new InvalidOperationException("The index snapshot has no entries.");
        _ids.Get(doc, _scratch);
        byte[] id = Copy(_scratch);
        long etag = _etags.Get(doc);
        _entries.Get(doc, _scratch);
        byte[] entry;
        if (_scratch.Length > 0)
        {
            entry = Copy(_scratch);
        }
        else
        {
            var stored = reader.Document(doc, LargeEntry).GetBinaryValue(Index.LargeEntryField);
            entry = Copy(stored);
        }
        return (id, etag, entry);
    }

    private static byte[] Copy(BytesRef b) => b.Bytes.AsSpan(b.Offset, b.Length).ToArray();
}
