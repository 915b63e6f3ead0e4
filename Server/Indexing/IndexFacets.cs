using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;
using RavenLite.Server.Queries;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Facet counting from an index snapshot instead of from rows (the Facet package is not served):
/// a field facet walks the field's terms in <see cref="IndexKeys.TermsField"/> segment by segment and counts
/// each term's postings that are matches; a numeric range facet does the same over the field's number terms
/// that fall in the range (a match counted once per range); aggregations read the fields' sort doc values
/// (<see cref="Index.EntryField"/>: the first value when it is a number). Used only when the matches are known
/// exactly (the index is not behind and the where clause's candidates are exact), so the counts equal the
/// row-by-row ones (<see cref="FacetAccumulator"/>). Fields it cannot count exactly — Search and Exact fields,
/// spatial fields, text terms that may have been cut at 256 bytes, text and number terms naming the same
/// value in one segment, ranges that are not numeric — make <see cref="CanCount"/> false. A segment's term
/// texts, frequencies and that check are computed once per segment and kept for its life. One instance per query; not
/// thread-safe.
/// </summary>
internal sealed class IndexFacets(IndexReader reader, CompiledIndex index, FixedBitSet? matches)
{
    private readonly IBits? _live = MultiFields.GetLiveDocs(reader);
    private readonly Dictionary<string, Func<int, long>?> _sortKeys = new(StringComparer.Ordinal);

    /// <summary>True when every part of <paramref name="plan"/> can be counted from the index.</summary>
    public bool CanCount(FacetPlan plan, Func<RqlValue, JsonElement> resolve)
    {
        if (plan.Aggregations.Any(a => SortKeys(a.Field) == null))
            return false;
        if (plan.Ranges.Count > 0)
            return Plain(plan.RangeField!) != null && plan.Ranges.All(r => NumericRange(r.Condition, resolve) != null);
        return plan.Field == null || (Plain(plan.Field) is { } f && TermsAreWhole(f));
    }

    /// <summary>A Default (lower-cased whole values), non-spatial field of the index, or null.</summary>
    private IndexField? Plain(RqlPath path) =>
        !path.IsId && index.Field(path.ToString()) is { Indexing: FieldIndexing.Default, Spatial: false } f ? f : null;

    /// <summary>The field's sort doc values (first numeric value), or null when the field or its doc values are missing.</summary>
    public Func<int, long>? SortKeys(RqlPath path)
    {
        string key = path.ToString();
        if (!_sortKeys.TryGetValue(key, out var values))
        {
            values = !path.IsId && index.Field(key) is { Spatial: false } f ? SortValues.Of(reader, f.Id) : null;
            _sortKeys[key] = values;
        }
        return values;
    }

    /// <summary>No text term may have been cut, and no text term spells a number or boolean term of the field.</summary>
    private bool TermsAreWhole(IndexField f)
    {
        // A value counted twice needs one entry holding it as text and as a number (or boolean): one segment.
        foreach (var leaf in reader.Leaves)
            if (!Wholeness.GetValue(leaf.AtomicReader.CoreCacheKey, _ => new System.Collections.Concurrent.ConcurrentDictionary<ushort, bool>())
                    .GetOrAdd(f.Id, _ => SegmentTermsAreWhole(leaf.AtomicReader, f)))
                return false;
        return true;
    }

    private static readonly System.Runtime.CompilerServices.ConditionalWeakTable<object, System.Collections.Concurrent.ConcurrentDictionary<ushort, bool>> Wholeness = new();

    private static bool SegmentTermsAreWhole(AtomicReader segment, IndexField f)
    {
        BytesRef Prefix(char kind) => new(IndexKeys.TermText(IndexKeys.FieldName(f.Id, kind), ""));
        var texts = new HashSet<string>(StringComparer.Ordinal);
        foreach (string text in SegmentTermCounts(segment, Prefix(IndexKeys.Text), IndexKeys.Text).Texts)
        {
            if (Encoding.UTF8.GetByteCount(text) >= IndexKeys.MaxTermBytes - 3 || text.Contains('\u0001'))
                return false;
            texts.Add(text);
        }
        return !SegmentTermCounts(segment, Prefix(IndexKeys.Number), IndexKeys.Number).Texts
            .Concat(SegmentTermCounts(segment, Prefix(IndexKeys.Bool), IndexKeys.Bool).Texts).Any(texts.Contains);
    }

    /// <summary>An inclusive-or-exclusive numeric interval of a range condition, or null when it is not one.</summary>
    public static (double Low, bool LowIn, double High, bool HighIn)? NumericRange(RqlExpression e, Func<RqlValue, JsonElement> resolve)
    {
        double? Num(RqlValue v) => resolve(v) is { ValueKind: JsonValueKind.Number } n ? n.GetDouble() : null;
        switch (e)
        {
            case RqlCompare c when Num(c.Value) is { } v:
                return c.Op switch
                {
                    "<" => (double.NegativeInfinity, true, v, false),
                    "<=" => (double.NegativeInfinity, true, v, true),
                    ">" => (v, false, double.PositiveInfinity, true),
                    ">=" => (v, true, double.PositiveInfinity, true),
                    _ => null,
                };
            case RqlBetween b when Num(b.Low) is { } lo && Num(b.High) is { } hi:
                return (lo, true, hi, true);
            case RqlBinary { IsAnd: true } a when NumericRange(a.Left, resolve) is { } l && NumericRange(a.Right, resolve) is { } r:
            {
                var (low, lowIn) = l.Low > r.Low || (l.Low == r.Low && !l.LowIn) ? (l.Low, l.LowIn) : (r.Low, r.LowIn);
                var (high, highIn) = l.High < r.High || (l.High == r.High && !l.HighIn) ? (l.High, l.HighIn) : (r.High, r.HighIn);
                return (low, lowIn, high, highIn);
            }
            default:
                return null;
        }
    }

    /// <summary>Every match (global document numbers).</summary>
    public IEnumerable<int> AllMatches()
    {
        if (matches != null)
        {
            for (int doc = matches.NextSetBit(0); doc >= 0 && doc != DocIdSetIterator.NO_MORE_DOCS; doc = doc + 1 < matches.Length ? matches.NextSetBit(doc + 1) : -1)
                yield return doc;
            yield break;
        }
        for (int doc = 0; doc < reader.MaxDoc; doc++)
            if (_live == null || _live.Get(doc))
                yield return doc;
    }

    /// <summary>
    /// For each range, the matches with a number of the field in it (each match once per range). A segment where
    /// no entry has several values of the field (no <c>M</c> term) is counted from the in-memory sort values (one
    /// value per entry: numbers, decoded once); any other segment by one pass over the field's number terms,
    /// each term's postings read once.
    /// </summary>
    /// <param name="path">The field.</param>
    /// <param name="ranges">The intervals.</param>
    /// <param name="counts">Per range, the number of matches in it.</param>
    /// <param name="listDocs">Also list the matches per range (for aggregations); else the lists stay empty.</param>
    public List<int>[] RangeDocs(RqlPath path, IReadOnlyList<(double Low, bool LowIn, double High, bool HighIn)> ranges, long[] counts, bool listDocs)
    {
        var f = Plain(path)!;
        var result = ranges.Select(_ => new List<int>()).ToArray();
        int n = ranges.Count;
        var lo = ranges.Select(r => r.Low).ToArray();
        var hi = ranges.Select(r => r.High).ToArray();
        var loIn = ranges.Select(r => r.LowIn).ToArray();
        var hiIn = ranges.Select(r => r.HighIn).ToArray();
        var prefix = new BytesRef(IndexKeys.TermText(IndexKeys.FieldName(f.Id, IndexKeys.Number), ""));
        var multi = new Term(IndexKeys.TermsField, IndexKeys.TermText(IndexKeys.FieldName(f.Id, IndexKeys.Multi), ""));
        var hit = new List<int>(ranges.Count);
        foreach (var leaf in reader.Leaves)
        {
            var segment = leaf.AtomicReader;
            if (segment.DocFreq(multi) == 0 && SortValues.Of(segment, f.Id) is { } values)
            {
                var live = segment.LiveDocs;
                for (int d = 0; d < values.Length; d++)
                {
                    long v = values[d];
                    if (v == Index.SortMissing || v == Index.SortOther || (live != null && !live.Get(d)) || (matches != null && !matches.Get(leaf.DocBase + d)))
                        continue;
                    double x = IndexKeys.FromSortableBits(v);
                    for (int r = 0; r < n; r++)
                    {
                        if ((x > lo[r] || (x == lo[r] && loIn[r])) && (x < hi[r] || (x == hi[r] && hiIn[r])))
                        {
                            counts[r]++;
                            if (listDocs)
                                result[r].Add(leaf.DocBase + d);
                        }
                    }
                }
                continue;
            }
            var seen = ranges.Select(_ => new FixedBitSet(Math.Max(1, segment.MaxDoc))).ToArray();
            DocsEnum? reuse = null;
            foreach (var te in IndexKeys.SegmentTerms(segment, prefix))
            {
                var term = te.Term;
                double x = IndexKeys.NumberOfTerm(term.Bytes.AsSpan(term.Offset + prefix.Length, term.Length - prefix.Length));
                hit.Clear();
                for (int r = 0; r < n; r++)
                    if ((x > lo[r] || (x == lo[r] && loIn[r])) && (x < hi[r] || (x == hi[r] && hiIn[r])))
                        hit.Add(r);
                if (hit.Count == 0)
                    continue;
                reuse = te.Docs(segment.LiveDocs, reuse, DocsFlags.NONE);
                int d;
                while ((d = reuse.NextDoc()) != DocIdSetIterator.NO_MORE_DOCS)
                {
                    if (matches != null && !matches.Get(leaf.DocBase + d))
                        continue;
                    foreach (int r in hit)
                    {
                        if (seen[r].Get(d))
                            continue;
                        seen[r].Set(d);
                        counts[r]++;
                        if (listDocs)
                            result[r].Add(leaf.DocBase + d);
                    }
                }
            }
        }
        return result;
    }

    /// <summary>
    /// (facet text, matches, count) for every value of the field per segment: text terms, numbers as
    /// <see cref="Queries.FieldTerms.NumberText"/>, booleans. With <paramref name="countsOnly"/>, where every live
    /// entry matches and a segment has no deleted entries, the term's document frequency is the count and its
    /// matches are not listed (Count ≥ 0); otherwise Count is -1 and Docs lists them.
    /// </summary>
    public IEnumerable<(string Text, IEnumerable<int> Docs, int Count)> Terms(RqlPath path, bool countsOnly)
    {
        var f = Plain(path)!;
        foreach (char kind in new[] { IndexKeys.Text, IndexKeys.Number, IndexKeys.Bool })
            foreach (var t in KindTerms(f, kind, withDocs: true, countsOnly && matches == null))
                yield return t;
    }

    /// <summary>The field's terms of one kind, per segment, each with its matching documents (global numbers).</summary>
    private IEnumerable<(string Text, IEnumerable<int> Docs, int Count)> KindTerms(IndexField f, char kind, bool withDocs, bool countsOnly = false)
    {
        var prefix = new BytesRef(IndexKeys.TermText(IndexKeys.FieldName(f.Id, kind), ""));
        foreach (var leaf in reader.Leaves)
        {
            var segment = leaf.AtomicReader;
            if (countsOnly && segment.LiveDocs == null)
            {
                // Every entry of a segment without deletions matches: its terms' texts and frequencies never change.
                var (texts, freqs) = SegmentTermCounts(segment, prefix, kind);
                for (int i = 0; i < texts.Length; i++)
                    yield return (texts[i], [], freqs[i]);
                continue;
            }
            foreach (var te in IndexKeys.SegmentTerms(segment, prefix))
                yield return (TextOf(te.Term, prefix.Length, kind), withDocs ? Postings(te.Docs(segment.LiveDocs, null, DocsFlags.NONE), leaf.DocBase) : [], -1);
        }
    }

    private static readonly System.Runtime.CompilerServices.ConditionalWeakTable<object, System.Collections.Concurrent.ConcurrentDictionary<string, (string[] Texts, int[] Freqs)>> TermCounts = new();

    /// <summary>
    /// A segment's terms of one field kind as facet texts with their document frequencies, computed once per
    /// segment core and kept for its life (a facet over a whole index then enumerates no terms and makes no
    /// strings per query).
    /// </summary>
    private static (string[] Texts, int[] Freqs) SegmentTermCounts(AtomicReader segment, BytesRef prefix, char kind)
    {
        var bySegment = TermCounts.GetValue(segment.CoreCacheKey, _ => new System.Collections.Concurrent.ConcurrentDictionary<string, (string[], int[])>(StringComparer.Ordinal));
        return bySegment.GetOrAdd(prefix.Utf8ToString(), _ =>
        {
            var texts = new List<string>();
            var freqs = new List<int>();
            foreach (var te in IndexKeys.SegmentTerms(segment, prefix))
            {
                texts.Add(TextOf(te.Term, prefix.Length, kind));
                freqs.Add(te.DocFreq);
            }
            return ([.. texts], [.. freqs]);
        });
    }

    /// <summary>A term's facet text: the text itself, a number as <see cref="Queries.FieldTerms.NumberText"/>, a boolean as true/false.</summary>
    private static string TextOf(BytesRef term, int prefixLength, char kind)
    {
        var value = term.Bytes.AsSpan(term.Offset + prefixLength, term.Length - prefixLength);
        return kind switch
        {
            IndexKeys.Number => Queries.FieldTerms.NumberText(IndexKeys.NumberOfTerm(value)),
            IndexKeys.Bool => value.SequenceEqual("1"u8) ? "true" : "false",
            _ => Encoding.UTF8.GetString(value),
        };
    }

    private IEnumerable<int> Postings(DocsEnum docs, int docBase)
    {
        int d;
        while ((d = docs.NextDoc()) != DocIdSetIterator.NO_MORE_DOCS)
            if (matches == null || matches.Get(docBase + d))
                yield return docBase + d;
    }
}
