using System.Collections.Concurrent;
using System.Runtime.CompilerServices;
using Lucene.Net.Index;

namespace RavenLite.Server.Indexing;

/// <summary>
/// The sort doc values of an index field (<see cref="Index.SortField"/>) held in memory, one array per segment
/// and field, read once and kept for the life of the segment (keyed by its core, so a merged-away segment's
/// arrays go with it). Lucene 4.8's doc values are read from the index files on every lookup (a positioned
/// read through NIOFSDirectory per miss), which made ranking 1,000 matches cost 2 ms; an array costs 8 bytes
/// per entry per queried field. Thread-safe.
/// </summary>
internal static class SortValues
{
    private static readonly ConditionalWeakTable<object, ConcurrentDictionary<string, long[]?>> BySegment = new();

    /// <summary>The field's values of one segment by segment-local document number, or null when the segment has none.</summary>
    public static long[]? Of(AtomicReader segment, string field)
    {
        var fields = BySegment.GetValue(segment.CoreCacheKey, _ => new ConcurrentDictionary<string, long[]?>(StringComparer.Ordinal));
        return fields.GetOrAdd(field, f =>
        {
            var values = segment.GetNumericDocValues(f);
            if (values == null)
                return null;
            var array = new long[segment.MaxDoc];
            for (int doc = 0; doc < array.Length; doc++)
                array[doc] = values.Get(doc);
            return array;
        });
    }

    /// <summary>A lookup by composite document number over every segment of <paramref name="reader"/>, or null when a segment lacks the field.</summary>
    public static Func<int, long>? Of(IndexReader reader, string field)
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
