using RavenLite.Server.Indexing;

namespace RavenLite.Server.Queries;

/// <summary>Ordering of <see cref="QueryRunner"/>: sort keys, the bounded heap of a sorted page, ranking from sort keys.</summary>
public sealed partial class QueryRunner
{
    /// <summary>Sorted pages up to this many rows are collected in a bounded heap; longer ones are sorted whole.</summary>
    private const int TopRowsLimit = 100_000;

    /// <summary>
    /// The best rows by the query's order seen so far, at most a limit (a heap whose root is the worst kept):
    /// each offered row is kept, displacing the worst, or let go. Ties keep arrival (index/etag) order, as the
    /// stable full sort. Disposes every row it lets go of, and on Dispose those still held (unless taken by <see cref="Ranked"/>).
    /// </summary>
    private sealed class TopRows(QueryRunner runner, int limit) : IDisposable
    {
        private readonly Func<Row, SortKey>[] _keys = runner.SortSelectors();
        private readonly PriorityQueue<(Row Row, SortKey[] Keys, long Seq), (SortKey[] Keys, long Seq)> _heap =
            new(Comparer<(SortKey[] Keys, long Seq)>.Create((a, b) => -runner.CompareKeys(a.Keys, a.Seq, b.Keys, b.Seq)));
        private long _seq;
        private bool _taken;

        public void Offer(Row row)
        {
            if (limit == 0)
            {
                row.Dispose();
                return;
            }
            var keys = new SortKey[_keys.Length];
            for (int k = 0; k < keys.Length; k++)
                keys[k] = _keys[k](row);
            long seq = _seq++;
            if (_heap.Count < limit)
            {
                _heap.Enqueue((row, keys, seq), (keys, seq));
                return;
            }
            var worst = _heap.Peek();
            if (runner.CompareKeys(keys, seq, worst.Keys, worst.Seq) >= 0)
            {
                row.Dispose();
                return;
            }
            _heap.EnqueueDequeue((row, keys, seq), (keys, seq)).Row.Dispose();
        }

        /// <summary>The kept rows, best first (the caller owns them now).</summary>
        public List<Row> Ranked()
        {
            _taken = true;
            var list = new List<Row>(_heap.Count);
            while (_heap.Count > 0)
                list.Add(_heap.Dequeue().Row);
            list.Reverse();
            return list;
        }

        public void Dispose()
        {
            if (_taken)
                return;
            while (_heap.Count > 0)
                _heap.Dequeue().Row.Dispose();
        }
    }

    /// <summary>
    /// The page of a sorted query ranked from the fields' sort doc values (<see cref="Indexing.Index.EntryField"/>),
    /// keeping only the best skip+take matches (never sorting them all), ties in index order as the full sort;
    /// null when a key is not a field ordered by number (Default, long, double) or a match's value is not a
    /// number (text sorts through the full path).
    /// </summary>
    private (long Total, List<long> Page)? TopByDocValues(CompiledIndex compiled, Lucene.Net.Index.IndexReader reader, List<long>? candidates)
    {
        if (_query.OrderBy.Count == 0)
            return null;
        var keys = new List<(Func<int, long> Values, bool Descending)>();
        foreach (var o in _query.OrderBy)
        {
            if (o.Field is not { IsId: false } path || o.Type is not (RqlOrderType.Default or RqlOrderType.Long or RqlOrderType.Double)
                || compiled.Field(path.ToString()) is not { Spatial: false } field
                || SortValues.Of(reader, field.Id) is not { } values)
                return null;
            keys.Add((values, o.Descending));
        }
        long limit = Math.Min((long)_skip + _take, int.MaxValue);
        // A max-heap of the best `limit` so far: the root is the worst kept, replaced by anything better.
        var heap = new PriorityQueue<(long[] Key, long Doc), (long[] Key, long Doc)>(Comparer<(long[] Key, long Doc)>.Create((a, b) => -Better(a, b)));
        long total = 0;
        var live = Lucene.Net.Index.MultiFields.GetLiveDocs(reader);
        IEnumerable<long> docs = candidates ?? AllEntryIds(reader);
        foreach (long doc in docs)
        {
            if (candidates == null && live != null && !live.Get((int)doc))
                continue;
            var key = new long[keys.Count];
            for (int k = 0; k < keys.Count; k++)
            {
                long v = keys[k].Values((int)doc);
                if (v == Indexing.Index.SortOther)
                    return null;
                key[k] = v;
            }
            total++;
            if (limit == 0)
                continue;
            if (heap.Count < limit)
                heap.Enqueue((key, doc), (key, doc));
            else if (Better((key, doc), heap.Peek()) < 0)
                heap.EnqueueDequeue((key, doc), (key, doc));
        }
        var best = new List<(long[] Key, long Doc)>(heap.Count);
        while (heap.Count > 0)
            best.Add(heap.Dequeue());
        best.Reverse();
        return (total, best.Skip(_skip).Select(b => b.Doc).ToList());

        // Negative when a ranks before b: keys in their directions (missing first ascending), then index order.
        int Better((long[] Key, long Doc) a, (long[] Key, long Doc) b)
        {
            for (int k = 0; k < keys.Count; k++)
            {
                int c = a.Key[k].CompareTo(b.Key[k]);
                if (c != 0)
                    return keys[k].Descending ? -c : c;
            }
            return a.Doc.CompareTo(b.Doc);
        }
    }

    /// <summary>
    /// The page of a number range ordered by its own field — <c>where F between lo and hi order by F</c> (or
    /// <c>F &gt;= lo</c>, <c>F &lt;= hi</c>, <c>F = v</c>; ascending; default, long or double order) — read from the
    /// field's number terms, which each segment keeps in numeric order: a segment's first skip+take entries in
    /// (value, entry) order come from the postings of its first terms in range, and the rest are only counted
    /// (from the segment's <see cref="NumberTermCounts"/>, or its live postings where it has deletions). No candidate
    /// set, no sort key lookups. Null when the query has another shape, or when a segment has an entry with several values of the
    /// field (its sort key is its first value, not necessarily the term it matched by); the caller must only use it
    /// for an index in step with the query's snapshot (the terms are then the matches).
    /// </summary>
    private (long Total, List<long> Page)? TopByNumberTerms(CompiledIndex compiled, Lucene.Net.Index.IndexReader reader)
    {
        if (_query.OrderBy is not [{ Field: { IsId: false } path, Descending: false, Type: RqlOrderType.Default or RqlOrderType.Long or RqlOrderType.Double }]
            || compiled.Field(path.Text) is not { Spatial: false } field)
            return null;
        (RqlPath On, RqlValue? Low, RqlValue? High)? range = _query.Where switch
        {
            RqlBetween b => (b.Field, b.Low, b.High),
            RqlCompare { Op: "=" } c => (c.Field, c.Value, c.Value),
            RqlCompare { Op: ">=" } c => (c.Field, c.Value, null),
            RqlCompare { Op: "<=" } c => (c.Field, null, c.Value),
            _ => null,
        };
        if (range is not { } r || r.On.IsId || r.On.Text != path.Text)
            return null;
        double? low = null, high = null;
        foreach (var (value, isLow) in new[] { (r.Low, true), (r.High, false) })
        {
            if (value == null)
                continue;
            var v = Resolve(value);
            if (v.ValueKind != JsonValueKind.Number)
                return null;
            if (isLow)
                low = v.GetDouble();
            else
                high = v.GetDouble();
        }
        string numbers = IndexKeys.FieldName(field.Id, IndexKeys.Number);
        var prefix = new Lucene.Net.Util.BytesRef(IndexKeys.TermText(numbers, ""));
        var start = new Lucene.Net.Util.BytesRef(IndexKeys.TermText(numbers, low is { } l ? IndexKeys.NumberTerm(l) : ""));
        var end = high is { } h ? new Lucene.Net.Util.BytesRef(IndexKeys.TermText(numbers, IndexKeys.NumberTerm(h))) : null;
        long lowBits = low is { } lo ? IndexKeys.SortableBits(lo) : long.MinValue, highBits = high is { } hi ? IndexKeys.SortableBits(hi) : long.MaxValue;
        int limit = (int)Math.Min((long)_skip + _take, int.MaxValue);
        long total = 0;
        var best = new List<(long Key, long Doc)>();
        foreach (var leaf in reader.Leaves)
        {
            var segment = leaf.AtomicReader;
            var counts = NumberTermCounts.Of(segment, field.Id);
            if (counts.SeveralValues)
                return null;
            var live = segment.LiveDocs;
            // Without deletions the segment's matches are counted from its term counts; else while reading postings.
            bool counted = live == null;
            if (counted)
                total += counts.Count(lowBits, highBits);
            int kept = 0;
            if (counted && limit == 0)
                continue;
            Lucene.Net.Index.DocsEnum? docs = null;
            foreach (var te in IndexKeys.SegmentTerms(segment, prefix, start, term => end != null && term.CompareTo(end) > 0))
            {
                long key = NumberTermCounts.ValueOf(te.Term, prefix.Length);
                docs = te.Docs(live, docs, Lucene.Net.Index.DocsFlags.NONE);
                int doc;
                while ((doc = docs.NextDoc()) != Lucene.Net.Search.DocIdSetIterator.NO_MORE_DOCS)
                {
                    if (kept < limit)
                    {
                        best.Add((key, leaf.DocBase + doc));
                        kept++;
                    }
                    else if (counted)
                        break;
                    if (!counted)
                        total++;
                }
                if (counted && kept >= limit)
                    break;
            }
        }
        // Each segment's first `limit` in (value, entry) order; the page is the first `limit` of them all.
        best.Sort();
        return (total, best.Skip(_skip).Take(_take).Select(b => b.Doc).ToList());
    }

    private List<Row> Sort(List<Row> matches)
    {
        var selectors = SortSelectors();
        var keyed = matches.Select((m, i) => (Row: m, Keys: selectors.Select(f => f(m)).ToArray(), Seq: (long)i)).ToList();
        keyed.Sort((a, b) => CompareKeys(a.Keys, a.Seq, b.Keys, b.Seq));
        return keyed.Select(k => k.Row).ToList();
    }

    /// <summary>One key function per order-by key (random keys are drawn per row in arrival order).</summary>
    private Func<Row, SortKey>[] SortSelectors()
    {
        var result = new List<Func<Row, SortKey>>();
        foreach (var key in _query.OrderBy)
        {
            if (key.Type == RqlOrderType.Score)
            {
                // As RavenDB (Lucene's relevance sort): score() puts the best match first, score() desc the worst.
                result.Add(m => new SortKey(1, -Score(m), null));
            }
            else if (key.Type == RqlOrderType.Distance)
            {
                var from = ShapeOf(key.DistanceFrom!, key.DistanceOf!).Center;
                double round = key.RoundFactor is { } rf && Resolve(rf) is { ValueKind: JsonValueKind.Number } r && r.GetDouble() > 0 ? r.GetDouble() : 0;
                result.Add(m =>
                {
                    var shapes = ShapesOf(key.DistanceOf!, m);
                    if (shapes.Count == 0)
                        return new SortKey(0, 0, null);
                    double d = shapes.Min(x => DistanceBetween(key.DistanceOf!, from, x.Center));
                    return new SortKey(1, round > 0 ? Math.Round(d / round) * round : d, null);
                });
            }
            else if (key.Type == RqlOrderType.Custom)
            {
                var sorter = _db.Analysis.Sorter(key.Sorter!, key.Field!.ToString(), key.Descending)
                    ?? throw new InvalidQueryException($"There is no sorter '{key.Sorter}' (PUT /databases/{_db.Name}/admin/sorters or /admin/sorters stores one).");
                result.Add(m => m.Values(key.Field!) is { Count: > 0 } values && values[0].ValueKind != JsonValueKind.Null
                    ? new SortKey(2, 0, values[0].ValueKind == JsonValueKind.String ? values[0].GetString() : values[0].GetRawText()) { Sorter = sorter }
                    : new SortKey(0, 0, null));
            }
            else if (key.Type == RqlOrderType.Random)
            {
                var rnd = key.RandomSeed is { } seed ? new Random(StableHash(seed)) : new Random();
                result.Add(_ => new SortKey(1, rnd.NextDouble(), null));
            }
            else
            {
                result.Add(m => KeyOf(m, key));
            }
        }
        return [.. result];
    }

    /// <summary>Order of two rows' keys (each key in its direction), ties by arrival.</summary>
    private int CompareKeys(SortKey[] a, long seqA, SortKey[] b, long seqB)
    {
        for (int k = 0; k < a.Length; k++)
        {
            int c = SortKeyComparer.Instance.Compare(a[k], b[k]);
            if (c != 0)
                return _query.OrderBy[k].Descending ? -c : c;
        }
        return seqA.CompareTo(seqB);
    }

    private static int StableHash(string s)
    {
        int h = 17;
        foreach (char c in s)
            h = unchecked(h * 31 + c);
        return h;
    }

    private static SortKey KeyOf(Row m, RqlOrder key)
    {
        var values = m.Values(key.Field!);
        if (values.Count == 0 || values[0].ValueKind == JsonValueKind.Null)
            return new SortKey(0, 0, null);
        var v = values[0];
        switch (key.Type)
        {
            case RqlOrderType.Long or RqlOrderType.Double:
                if (v.ValueKind == JsonValueKind.Number)
                    return new SortKey(1, v.GetDouble(), null);
                if (v.ValueKind == JsonValueKind.String && double.TryParse(v.GetString(), NumberStyles.Float, CultureInfo.InvariantCulture, out double d))
                    return new SortKey(1, d, null);
                return new SortKey(0, 0, null);
            case RqlOrderType.AlphaNumeric:
                return new SortKey(2, 0, v.ValueKind == JsonValueKind.String ? v.GetString() : v.GetRawText()) { Natural = true };
            case RqlOrderType.String:
                return new SortKey(2, 0, v.ValueKind == JsonValueKind.String ? v.GetString() : v.GetRawText());
            default:
                return v.ValueKind switch
                {
                    JsonValueKind.Number => new SortKey(1, v.GetDouble(), null),
                    JsonValueKind.String => new SortKey(2, 0, v.GetString()),
                    JsonValueKind.True => new SortKey(1, 1, null),
                    JsonValueKind.False => new SortKey(1, 0, null),
                    _ => new SortKey(2, 0, v.GetRawText()),
                };
        }
    }

    /// <summary>An order-by key: rank (missing 0, number 1, text 2), then number or text.</summary>
    private sealed record SortKey(int Rank, double Number, string? Text)
    {
        public bool Natural { get; init; }

        /// <summary><c>order by custom(..)</c>: compares the texts of two keys that both have a value.</summary>
        public Indexing.Analysis.CustomSorter? Sorter { get; init; }
    }

    private sealed class SortKeyComparer : IComparer<SortKey>
    {
        public static readonly SortKeyComparer Instance = new();

        public int Compare(SortKey? x, SortKey? y)
        {
            if (x!.Rank != y!.Rank)
                return x.Rank.CompareTo(y.Rank);
            if (x.Rank == 1)
                return x.Number.CompareTo(y.Number);
            if (x.Rank == 0)
                return 0;
            if (x.Sorter != null)
                return x.Sorter.Compare(x.Text, y.Text);
            return x.Natural ? NaturalCompare(x.Text!, y.Text!) : JsonPaths.CompareText(x.Text!, y.Text!);
        }

        /// <summary>alphaNumeric: runs of digits compare by value (file2 &lt; file10), the rest case-insensitively.</summary>
        private static int NaturalCompare(string a, string b)
        {
            int i = 0, j = 0;
            while (i < a.Length && j < b.Length)
            {
                if (char.IsDigit(a[i]) && char.IsDigit(b[j]))
                {
                    int si = i, sj = j;
                    while (i < a.Length && char.IsDigit(a[i]))
                        i++;
                    while (j < b.Length && char.IsDigit(b[j]))
                        j++;
                    string na = a[si..i].TrimStart('0'), nb = b[sj..j].TrimStart('0');
                    int c = na.Length != nb.Length ? na.Length.CompareTo(nb.Length) : string.CompareOrdinal(na, nb);
                    if (c != 0)
                        return c;
                    continue;
                }
                int d = char.ToLowerInvariant(a[i]).CompareTo(char.ToLowerInvariant(b[j]));
                if (d != 0)
                    return d;
                i++;
                j++;
            }
            return (a.Length - i).CompareTo(b.Length - j);
        }
    }
}
