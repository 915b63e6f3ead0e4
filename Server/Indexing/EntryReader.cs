using Lucene.Net.Index;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Reads entries of an index snapshot by document number from their binary doc value
/// (<see cref="Index.EntryField"/>: column-stored, no stored-fields block to decompress): the lower-cased
/// id, the etag the document was mapped at (the sort keys between are skipped) and the entry JSON (from <see cref="Index.LargeEntryField"/>
/// when it was too long for the doc value). Create one per query (doc values instances are per thread);
/// not thread-safe.
/// </summary>
internal sealed class EntryReader(IndexReader reader)
{
    private static readonly ISet<string> LargeEntry = new HashSet<string> { Index.LargeEntryField };

    private readonly BinaryDocValues? _values = MultiDocValues.GetBinaryValues(reader, Index.EntryField);
    private readonly BytesRef _scratch = new();

    /// <summary>Entry <paramref name="doc"/>: lower-cased id (UTF-8), etag, entry JSON.</summary>
    public (byte[] LowerId, long Etag, byte[] Entry) Read(int doc)
    {
        if (_values == null)
            throw new InvalidOperationException("The index snapshot has no entries.");
        _values.Get(doc, _scratch);
        var value = _scratch.Bytes.AsSpan(_scratch.Offset, _scratch.Length);
        long etag = BinaryPrimitives.ReadInt64LittleEndian(value);
        int idLength = BinaryPrimitives.ReadUInt16LittleEndian(value[8..]);
        byte[] id = value.Slice(10, idLength).ToArray();
        var rest = value[JsonOffset(value)..];
        byte[] entry;
        if (rest.Length > 0)
        {
            entry = rest.ToArray();
        }
        else
        {
            var stored = reader.Document(doc, LargeEntry).GetBinaryValue(Index.LargeEntryField);
            entry = stored.Bytes.AsSpan(stored.Offset, stored.Length).ToArray();
        }
        return (id, etag, entry);
    }

    /// <summary>Where an entry doc value's JSON starts (after etag, id and sort keys).</summary>
    internal static int JsonOffset(ReadOnlySpan<byte> value)
    {
        int idLength = BinaryPrimitives.ReadUInt16LittleEndian(value[8..]);
        int sortKeys = BinaryPrimitives.ReadUInt16LittleEndian(value[(10 + idLength)..]);
        return 12 + idLength + 8 * sortKeys;
    }

    /// <summary>Sort key <paramref name="field"/> of an entry doc value; <see cref="Index.SortMissing"/> when it has none.</summary>
    internal static long SortKey(ReadOnlySpan<byte> value, int field)
    {
        if (value.Length == 0)
            return Index.SortMissing;
        int idLength = BinaryPrimitives.ReadUInt16LittleEndian(value[8..]);
        int keys = BinaryPrimitives.ReadUInt16LittleEndian(value[(10 + idLength)..]);
        return field < keys ? BinaryPrimitives.ReadInt64LittleEndian(value[(12 + idLength + 8 * field)..]) : Index.SortMissing;
    }
}
