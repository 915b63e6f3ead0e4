using System.Collections.Concurrent;
using System.Runtime.CompilerServices;
using Lucene.Net.Index;

namespace RavenLite.Server.Indexing;

/// <summary>
/// The sort keys of an index field (in each entry's doc value, <see cref="Index.EntryField"/>) held in memory, one
/// array per segment and field, read once (a sequential pass over the segment's entries) and kept for the life
/// of the segment (keyed by its core, so a merged-away segment's arrays go with it). Lucene 4.8's doc values
/// are read from the index files on every lookup (a positioned read through NIOFSDirectory per miss), which
/// makes ranking many matches slow; an array costs 8 bytes per entry per queried field. Thread-safe.
/// </summary>
internal static class SortValues
{
    private static readonly ConditionalWeakTable<object, ConcurrentDictionary<ushort, long[]?>> BySegment = new();

    /// <summary>The field's values of one segment by segment-local document number, or null when the segment has none.</summary>
    public static long[]? Of(AtomicReader segment, ushort field)
    {
        var fields = BySegment.GetValue(segment.CoreCacheKey, _ => new ConcurrentDictionary<ushort, long[]?>());
        return fields.GetOrAdd(field, f =>
        {
            var entries = segment.GetBinaryDocValues(Index.EntryField);
            if (entries == null)
                return null;
            var array = new long[segment.MaxDoc];
            var scratch = new Lucene.Net.Util.BytesRef();
            for (int doc = 0; doc < array.Length; doc++)
            {
                entries.Get(doc, scratch);
                array[doc] = EntryReader.SortKey(scratch.Bytes.AsSpan(scratch.Offset, scratch.Length), f);
            }
            return array;
        });
    }

    /// <summary>A lookup by composite document number over every segment of <paramref name="reader"/>, or null when a segment lacks the field.</summary>
    public static Func<int, long>? Of(IndexReader reader, ushort field)
    {
        var leaves = reader.Leaves;
        var arrays = new long[leaves.Count][];
        var starts = new int[leaves.Count + 1];
        for (int i = 0; i < leaves.Count; i++)
        {
            if (Of(leaves[i].AtomicReader, field) is not { } a)
                return null;
            arrays[i] = a;
            starts[i] = leaves[i].DocBase;
        }
        starts[leaves.Count] = reader.MaxDoc;
        if (leaves.Count == 1)
        {
            var only = arrays[0];
            return doc => only[doc];
        }
        return doc =>
        {
            int i = ReaderUtil.SubIndex(doc, starts);
            return arrays[i][doc - starts[i]];
        };
    }
}
