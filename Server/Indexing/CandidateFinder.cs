using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;
using RavenLite.Server.Queries;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Turns a where clause into the Lucene documents (entries) that may match, from an index snapshot's
/// terms (<see cref="IndexKeys"/>); entry ids are the snapshot reader's document numbers.
/// Each condition yields a superset of its true matches (or null: "every entry"); <c>and</c>
/// intersects, <c>or</c> unites, <c>not</c>/<c>!=</c> give every entry. The query then checks each
/// candidate exactly, so this only decides how much is read, never what is answered.
/// </summary>
/// <param name="index">The index.</param>
/// <param name="reader">Its snapshot.</param>
/// <param name="resolve">Resolves query values.</param>
/// <param name="moreLikeThis">The Lucene query of each moreLikeThis() (null: it matches nothing).</param>
/// <param name="spatialShape">The shape of a spatial condition.</param>
/// <param name="allScores">Score every search()/moreLikeThis() hit while collecting (the query orders by score); otherwise
/// a hit's score is computed when asked for (the answered page's @index-score).</param>
internal sealed class CandidateFinder(CompiledIndex index, IndexReader reader, Func<RqlValue, JsonElement> resolve,
    IReadOnlyDictionary<RqlMoreLikeThis, Query?>? moreLikeThis = null, Func<RqlSpatial, GeoShape>? spatialShape = null, bool allScores = true)
{

    /// <summary>
    /// True after <see cref="Find"/> when the candidates are exactly the entries that match (not a
    /// superset): every condition was an equality on text or a plain search word, combined with
    /// and/or. With an index that is not stale the query may then count without checking.
    /// </summary>
    public bool Exact { get; private set; }

    /// <summary>
    /// After <see cref="Find"/>: for each search() on a Search field and each moreLikeThis(), the entries Lucene
    /// matched and their scores. For an entry whose document has not changed since it was indexed, these are
    /// the answer (for moreLikeThis(), for every entry).
    /// </summary>
    public Dictionary<RqlExpression, SearchHits> SearchHits { get; } = new(ReferenceEqualityComparer.Instance);

    /// <summary>After <see cref="Find"/>: the Lucene queries run for search() and moreLikeThis() (for explanations()).</summary>
    public List<Query> LuceneQueries { get; } = [];

    /// <summary>After <see cref="Find"/>: how many candidates there are (more than it returned when it kept only the first).</summary>
    public long Total { get; private set; }

    /// <summary>
    /// Candidate entry ids in ascending order (indexing order), or null for every entry. With <paramref name="keep"/>, a
    /// lone search() (exact) returns only its first <paramref name="keep"/> hits and counts the rest (<see cref="Total"/>):
    /// a page of an exact answer needs no more.
    /// </summary>
    public List<long>? Find(RqlExpression? where, int keep = int.MaxValue)
    {
        if (where == null)
            return null;
        Exact = IsExact(where);
        // A lone search() or moreLikeThis(): Lucene's hits come in order already, no set to build and sort.
        if (where is RqlMethod { IsSearch: true } lone && Field(lone.Field) is { Indexing: FieldIndexing.Search } searched && resolve(lone.Value!).ValueKind == JsonValueKind.String)
        {
            var hits = Search(lone, searched, resolve(lone.Value!).GetString()!, keep);
            Total = hits.Total;
            return hits.Docs; // the hits' own list: no copy
        }
        var list = FindAll(where);
        Total = list?.Count ?? 0;
        return list;
    }

    private List<long>? FindAll(RqlExpression where)
    {
        if (where is RqlMoreLikeThis mlt)
            return MoreLikeThis(mlt).Docs;
        var set = Set(where);
        if (set == null)
        {
            Exact = false;
            return null;
        }
        var list = set.ToList();
        list.Sort();
        return list;
    }

    /// <summary>
    /// Whether <see cref="Set"/> yields exactly the matches of <paramref name="e"/>: text equality on a
    /// case-insensitive field whose term is whole (under the truncation length, no 0/1 bytes), or
    /// search() on a Search field with plain words; and/or of such conditions.
    /// </summary>
    private bool IsExact(RqlExpression e)
    {
        switch (e)
        {
            case RqlBinary b:
                return IsExact(b.Left) && IsExact(b.Right);
            case RqlCompare { Op: "=" } c when Field(c.Field) is { Indexing: not FieldIndexing.Exact }
                && resolve(c.Value) is { ValueKind: JsonValueKind.String } text:
                return WholeTerm(text.GetString()!);
            // Number terms hold the exact double, so inclusive numeric comparisons find exactly the entries with a
            // value in range (values equal as doubles but not as decimals, beyond 15 significant digits, aside).
            case RqlCompare { Op: "=" or "<=" or ">=" or "<" or ">" } c when Field(c.Field) is { Spatial: false }:
                return resolve(c.Value).ValueKind == JsonValueKind.Number;
            case RqlBetween bt when Field(bt.Field) is { Spatial: false }:
                return resolve(bt.Low).ValueKind == JsonValueKind.Number && resolve(bt.High).ValueKind == JsonValueKind.Number;
            case RqlMethod { IsSearch: true } m when Field(m.Field) is { Indexing: FieldIndexing.Search }:
                return resolve(m.Value!).ValueKind == JsonValueKind.String;
            case RqlBoost boost:
                return IsExact(boost.Inner);
            default:
                return false;
        }
    }

    private static bool WholeTerm(string s) =>
        !s.Contains('\0') && !s.Contains('\u0001') && System.Text.Encoding.UTF8.GetByteCount(s.ToLowerInvariant()) < IndexKeys.MaxTermBytes;

    private HashSet<long>? Set(RqlExpression e)
    {
        switch (e)
        {
            case RqlBinary { IsAnd: true } b:
            {
                var l = Set(b.Left);
                var r = Set(b.Right);
                if (l == null)
                    return r;
                if (r == null)
                    return l;
                if (l.Count > r.Count)
                    (l, r) = (r, l);
                l.IntersectWith(r);
                return l;
            }
            case RqlBinary b:
            {
                var l = Set(b.Left);
                if (l == null)
                    return null;
                var r = Set(b.Right);
                if (r == null)
                    return null;
                l.UnionWith(r);
                return l;
            }
            case RqlCompare c when Field(c.Field) is { } f:
            {
                var v = resolve(c.Value);
                if (c.Op != "=" && QueryRunner.IsOpenBound(v))
                    return c.Op == "!=" ? null : Exists(f);
                return c.Op switch
                {
                    "=" => Equal(f, v),
                    "<" or "<=" => Range(f, null, v, strict: c.Op == "<"),
                    ">" or ">=" => Range(f, v, null, strict: c.Op == ">"),
                    _ => null,
                };
            }
            case RqlBetween bt when Field(bt.Field) is { } f:
            {
                var (low, high) = (resolve(bt.Low), resolve(bt.High));
                bool lowOpen = QueryRunner.IsOpenBound(low), highOpen = QueryRunner.IsOpenBound(high);
                return lowOpen && highOpen ? Exists(f) : Range(f, lowOpen ? null : low, highOpen ? null : high);
            }
            case RqlIn { All: true } i when Field(i.Field) is { } f:
            {
                // Every listed value: the intersection of their entries.
                HashSet<long>? result = null;
                foreach (var rv in i.Values)
                {
                    var v = resolve(rv);
                    foreach (var one in v.ValueKind == JsonValueKind.Array ? v.EnumerateArray().ToList() : [v])
                    {
                        var s = Equal(f, one);
                        if (s == null)
                            continue; // no narrowing from this value
                        if (result == null)
                            result = s;
                        else
                            result.IntersectWith(s);
                    }
                }
                return result;
            }
            case RqlIn i when Field(i.Field) is { } f:
            {
                var result = new HashSet<long>();
                foreach (var rv in i.Values)
                {
                    var v = resolve(rv);
                    foreach (var one in v.ValueKind == JsonValueKind.Array ? v.EnumerateArray().ToList() : [v])
                    {
                        var s = Equal(f, one);
                        if (s == null)
                            return null;
                        result.UnionWith(s);
                    }
                }
                return result;
            }
            case RqlMethod m when Field(m.Field) is { } f:
                return Method(m, f);
            case RqlSpatial sp when sp.Target.Field != null && Field(sp.Target.Field) is { Spatial: true } f && spatialShape != null:
                return sp.Relation == "disjoint" ? Exists(f) : Spatial(f, spatialShape(sp));
            case RqlMoreLikeThis m:
                return [.. MoreLikeThis(m).Docs];
            case RqlBoost boost:
                return Set(boost.Inner);
            case RqlExact exact:
                return Set(exact.Inner); // the terms are lower-cased: a superset of the case-sensitive matches
            case RqlIntersect intersect:
                return intersect.Parts.Select(Set).Aggregate((HashSet<long>?)null, (all, one) =>
                {
                    if (all == null || one == null)
                        return all ?? one;
                    all.IntersectWith(one);
                    return all;
                });
            default:
                return null; // not, true, id(), unknown fields: every entry
        }
    }

    /// <summary>
    /// Entries whose shapes may share a point with <paramref name="shape"/>: cover the shape's box with geohash
    /// cells; an entry shape overlaps a query cell c when one of its cells lies inside c (a G term of c) or
    /// holds c (an H term of a cell that c starts with). A superset; the query checks each exactly.
    /// </summary>
    private HashSet<long> Spatial(IndexField f, GeoShape shape)
    {
        var result = new HashSet<long>();
        var looked = new HashSet<string>(StringComparer.Ordinal);
        string prefixes = IndexKeys.FieldName(f.Id, IndexKeys.GeoPrefix), cells = IndexKeys.FieldName(f.Id, IndexKeys.GeoCell);
        foreach (string cell in GeoHash.Cover(shape.Bounds, IndexKeys.MaxGeoCells).Cells)
        {
            result.UnionWith(Term(prefixes, cell));
            for (int n = 1; n < cell.Length; n++)
                if (looked.Add(cell[..n]))
                    result.UnionWith(Term(cells, cell[..n]));
        }
        return result;
    }

    /// <summary>Lucene answers search() on the analyzed field exactly; each hit's score is kept for score().</summary>
    private SearchHits Search(RqlMethod m, IndexField f, string text, int keep = int.MaxValue)
    {
        var query = SearchQuery.Parse(text, SearchQuery.FieldName(f.Id), m.Value!.Position, m.AllTerms, f.TextAnalyzer);
        var hits = new SearchHits(keep);
        Collect(query.Indexed, hits);
        LuceneQueries.Add(query.Indexed);
        SearchHits[m] = hits;
        return hits;
    }

    /// <summary>
    /// Lucene's hits of <paramref name="query"/>, segment by segment as <see cref="IndexSearcher"/> searches, with one
    /// weight kept for the page's scores computed later (a weight looks every term up in every segment: building it
    /// once, not for the search and again for the scores).
    /// </summary>
    private void Collect(Query query, SearchHits hits)
    {
        if (query is TermQuery { Boost: 1f } term && hits.Keeps && !allScores)
        {
            CollectTerm(term.Term, hits);
            return;
        }
        var weight = new IndexSearcher(reader).CreateNormalizedWeight(query);
        var collector = new ScoreCollector(hits, allScores);
        foreach (var leaf in reader.Leaves)
        {
            try
            {
                collector.SetNextReader(leaf);
                weight.GetBulkScorer(leaf, !collector.AcceptsDocsOutOfOrder, leaf.AtomicReader.LiveDocs)?.Score(collector);
            }
            catch (CollectionTerminatedException)
            {
                // Nothing more of interest in this segment.
            }
        }
        if (!allScores)
            hits.ScoreLater(reader, weight);
    }

    /// <summary>
    /// The first hits of one term (as many as <paramref name="hits"/> keeps) and the count of the rest, without scoring
    /// every posting: a segment without deletions counts its hits past the page from the term's document frequency; the
    /// term is looked up once per segment, for the count, the postings and the page's scores.
    /// </summary>
    private void CollectTerm(Term term, SearchHits hits)
    {
        var context = TermContext.Build(reader.Context, term);
        foreach (var leaf in reader.Leaves)
        {
            var state = context.Get(leaf.Ord);
            if (state == null)
                continue; // the term is not in this segment
            var live = leaf.AtomicReader.LiveDocs;
            // Without deletions, the segment's hits are the term's document frequency (its postings codec's term state holds it).
            int? docFreq = live == null ? (state as Lucene.Net.Codecs.BlockTermState)?.DocFreq : null;
            if (docFreq != null && hits.Full)
            {
                hits.Count(docFreq.Value);
                continue;
            }
            var terms = leaf.AtomicReader.GetTerms(term.Field)!.GetEnumerator();
            terms.SeekExact(term.Bytes, state);
            var docs = terms.Docs(live, null, DocsFlags.NONE);
            int seen = 0, doc;
            while ((doc = docs.NextDoc()) != DocIdSetIterator.NO_MORE_DOCS)
            {
                hits.Add(leaf.DocBase + doc, float.NaN);
                seen++;
                if (docFreq != null && hits.Full)
                {
                    hits.Count(docFreq.Value - seen);
                    break;
                }
            }
        }
        hits.ScoreLater(reader, new IndexSearcher(reader).CreateNormalizedWeight(new TermQuery(term, context)));
    }

    private SearchHits MoreLikeThis(RqlMoreLikeThis m)
    {
        var hits = new SearchHits();
        if (moreLikeThis?.GetValueOrDefault(m) is { } query)
        {
            Collect(query, hits);
            LuceneQueries.Add(query);
        }
        SearchHits[m] = hits;
        return hits;
    }

    private IndexField? Field(RqlPath path) => path.IsId ? null : index.Field(path.ToString());

    private HashSet<long>? Method(RqlMethod m, IndexField f)
    {
        if (m.Name == "exists")
            return Exists(f);
        var v = resolve(m.Value!);
        if (v.ValueKind != JsonValueKind.String)
            return null;
        string text = v.GetString()!;
        switch (m.Name)
        {
            case "startswith":
                return Scan(IndexKeys.FieldName(f.Id, IndexKeys.Text), IndexKeys.TextTerm(text), prefixOnly: true, high: null);
            case "search" or "lucene" when f.Indexing == FieldIndexing.Search:
                return [.. Search(m, f, text).Docs];
            default:
                return Exists(f); // endsWith, search on a field without words
        }
    }

    private HashSet<long>? Equal(IndexField f, JsonElement v) => v.ValueKind switch
    {
        JsonValueKind.String => Term(IndexKeys.FieldName(f.Id, IndexKeys.Text), IndexKeys.TextTerm(v.GetString()!)),
        JsonValueKind.Number => Range(f, v, v),
        JsonValueKind.True or JsonValueKind.False => Term(IndexKeys.FieldName(f.Id, IndexKeys.Bool), v.ValueKind == JsonValueKind.True ? "1" : "0"),
        _ => null, // null also matches documents without the field
    };

    /// <summary>
    /// A range on numbers or on text (case-insensitive fields), inclusive; <paramref name="strict"/> leaves a number bound
    /// out (each number has one term of one length, so the terms strictly after or before it are exactly the larger or
    /// smaller numbers). Anything else: every entry with the field.
    /// </summary>
    private HashSet<long>? Range(IndexField f, JsonElement? low, JsonElement? high, bool strict = false)
    {
        var kind = (low ?? high)!.Value.ValueKind;
        if ((low != null && low.Value.ValueKind != kind) || (high != null && high.Value.ValueKind != kind))
            return null;
        if (kind == JsonValueKind.Number)
        {
            // Strictly above: from the bound's term plus U+0000 (after it, before any longer-or-equal greater term).
            string from = low is { } l ? IndexKeys.NumberTerm(l.GetDouble()) + (strict ? "\0" : "") : "";
            return Scan(IndexKeys.FieldName(f.Id, IndexKeys.Number), from, prefixOnly: false,
                high: high is { } h ? IndexKeys.NumberTerm(h.GetDouble()) : null, highExclusive: strict);
        }
        if (kind == JsonValueKind.String && f.Indexing != FieldIndexing.Exact)
        {
            return Scan(IndexKeys.FieldName(f.Id, IndexKeys.Text), low is { } l ? IndexKeys.TextTerm(l.GetString()!) : "",
                prefixOnly: false, high: high is { } h ? IndexKeys.TextTerm(h.GetString()!) : null);
        }
        return Exists(f);
    }

    /// <summary>Entries where the field has any value: its terms of every kind but words (a subset of its text terms).</summary>
    private HashSet<long> Exists(IndexField f)
    {
        var result = new HashSet<long>();
        foreach (char kind in ValueKinds)
            result.UnionWith(Scan(IndexKeys.FieldName(f.Id, kind), "", prefixOnly: true, high: null));
        return result;
    }

    private static readonly char[] ValueKinds = [IndexKeys.Text, IndexKeys.Number, IndexKeys.Bool, IndexKeys.Null, IndexKeys.Exists];

    /// <summary>Every entry holding one exact term of one field kind (<see cref="IndexKeys.FieldName"/>).</summary>
    private HashSet<long> Term(string field, string term)
    {
        var result = new HashSet<long>();
        var bytes = new BytesRef(IndexKeys.TermText(field, term));
        foreach (var leaf in reader.Leaves)
        {
            var docs = leaf.AtomicReader.GetTermDocsEnum(new Term(IndexKeys.TermsField, bytes));
            if (docs != null)
                Collect(docs, leaf.DocBase, leaf.AtomicReader.LiveDocs, result);
        }
        return result;
    }

    /// <summary>Entries holding a term of one field kind that starts with <paramref name="from"/> (prefixOnly) or lies in [from, high] (or [from, high)).</summary>
    private HashSet<long> Scan(string field, string from, bool prefixOnly, string? high, bool highExclusive = false)
    {
        var result = new HashSet<long>();
        var fieldPrefix = new BytesRef(IndexKeys.TermText(field, ""));
        var start = new BytesRef(IndexKeys.TermText(field, from));
        var end = high == null ? null : new BytesRef(IndexKeys.TermText(field, high));
        foreach (var leaf in reader.Leaves)
        {
            var live = leaf.AtomicReader.LiveDocs;
            DocsEnum? docs = null;
            foreach (var te in IndexKeys.SegmentTerms(leaf.AtomicReader, fieldPrefix, start,
                term => prefixOnly ? !StringHelper.StartsWith(term, start) : end != null && term.CompareTo(end) >= (highExclusive ? 0 : 1)))
            {
                docs = te.Docs(null, docs, DocsFlags.NONE);
                Collect(docs, leaf.DocBase, live, result);
            }
        }
        return result;
    }

    private static void Collect(DocsEnum docs, int docBase, IBits? live, HashSet<long> into)
    {
        int doc;
        while ((doc = docs.NextDoc()) != DocIdSetIterator.NO_MORE_DOCS)
            if (live == null || live.Get(doc))
                into.Add(docBase + doc);
    }
}
