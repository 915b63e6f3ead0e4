using System.Collections.Concurrent;
using System.Runtime.CompilerServices;
using Lucene.Net.Index;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>
/// One segment's number terms of one index field, held in memory for counting ranges: the distinct values in order
/// (<see cref="IndexKeys.SortableBits"/>) and, for each, how many entries hold it or a smaller one, read once (a
/// pass over the field's number terms) and kept for the life of the segment (keyed by its core, as
/// <see cref="SortValues"/>). Counts are document frequencies, which include deleted entries: use them only for a
/// segment without deletions. 12 bytes per distinct value. Thread-safe.
/// </summary>
internal sealed class NumberTermCounts
{
    private static readonly ConditionalWeakTable<object, ConcurrentDictionary<ushort, NumberTermCounts>> BySegment = new();

    private readonly long[] _values;
    private readonly int[] _upTo; // entries holding _values[0..i]

    private NumberTermCounts(long[] values, int[] upTo, bool severalValues) => (_values, _upTo, SeveralValues) = (values, upTo, severalValues);

    /// <summary>True when an entry of the segment has several values of the field (<see cref="IndexKeys.Multi"/>).</summary>
    public bool SeveralValues { get; }

    /// <summary>The field's number terms of one segment.</summary>
    public static NumberTermCounts Of(AtomicReader segment, ushort field) =>
        BySegment.GetValue(segment.CoreCacheKey, _ => new ConcurrentDictionary<ushort, NumberTermCounts>()).GetOrAdd(field, f => Read(segment, f));

    private static NumberTermCounts Read(AtomicReader segment, ushort field)
    {
        bool several = segment.DocFreq(new Term(IndexKeys.TermsField, IndexKeys.TermText(IndexKeys.FieldName(field, IndexKeys.Multi), ""))) > 0;
        var prefix = new BytesRef(IndexKeys.TermText(IndexKeys.FieldName(field, IndexKeys.Number), ""));
        var values = new List<long>();
        var upTo = new List<int>();
        int total = 0;
        foreach (var te in IndexKeys.SegmentTerms(segment, prefix))
        {
            var term = te.Term;
            values.Add(ValueOf(term, prefix.Length));
            upTo.Add(total += te.DocFreq);
        }
        return new NumberTermCounts([.. values], [.. upTo], several);
    }

    /// <summary>The value (<see cref="IndexKeys.SortableBits"/>) a number term spells; <paramref name="prefixLength"/> bytes of field name come first.</summary>
    public static long ValueOf(BytesRef term, int prefixLength) =>
        (long)IndexKeys.NumberBitsOfTerm(term.Bytes.AsSpan(term.Offset + prefixLength, term.Length - prefixLength)) ^ long.MinValue;

    /// <summary>Entries (deleted ones included) holding a value in [<paramref name="low"/>, <paramref name="high"/>] (sortable bits).</summary>
    public long Count(long low, long high)
    {
        if (low > high)
            return 0;
        int from = LowerBound(low), to = high == long.MaxValue ? _values.Length : LowerBound(high + 1); // values in [from, to)
        if (to <= from)
            return 0;
        return _upTo[to - 1] - (from == 0 ? 0 : _upTo[from - 1]);
    }

    /// <summary>The first index whose value is at least <paramref name="value"/>.</summary>
    private int LowerBound(long value)
    {
        int i = Array.BinarySearch(_values, value);
        return i >= 0 ? i : ~i;
    }
}
