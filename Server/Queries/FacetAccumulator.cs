using Lucene.Net.Analysis;
using Lucene.Net.Analysis.TokenAttributes;

namespace RavenLite.Server.Queries;

/// <summary>
/// Computes facet results (<see cref="FacetPlan"/>) over a query's matches, one match at a time (the matches
/// are not kept): counts per value or range and the aggregations asked for. A match's values are its index
/// entry's (the mapped values, read from the entry doc value) or, for a scan, its document's.
/// Output is RavenDB's FacetResult: <c>{Name, Values: [{Name, Range, Count, Sum, Max, Min, Average}],
/// RemainingTerms, RemainingTermsCount, RemainingHits}</c>. One instance per query; not thread-safe.
/// </summary>
internal sealed class FacetAccumulator
{
    private readonly List<FacetPlan> _plans;
    private readonly Func<RqlExpression, Row, bool> _inRange;
    private readonly Func<RqlPath, FieldTerms> _terms;
    private readonly Dictionary<string, Bucket>[] _byTerm;
    private readonly Bucket[][] _byRange;
    private readonly HashSet<string> _seen = new(StringComparer.Ordinal);

    /// <param name="plans">The resolved facets.</param>
    /// <param name="inRange">Whether a match satisfies a range condition (the query's own evaluation).</param>
    /// <param name="terms">How a field's values become facet terms.</param>
    /// <param name="indexed">Whether the index has a field (an aggregated field it lacks counts 0 per match, as RavenDB's
    /// field cache answers for it).</param>
    public FacetAccumulator(List<FacetPlan> plans, Func<RqlExpression, Row, bool> inRange, Func<RqlPath, FieldTerms> terms, Func<RqlPath, bool> indexed)
    {
        _plans = plans;
        _inRange = inRange;
        _terms = terms;
        _byTerm = new Dictionary<string, Bucket>[plans.Count];
        _byRange = new Bucket[plans.Count][];
        for (int i = 0; i < plans.Count; i++)
        {
            _byTerm[i] = new Dictionary<string, Bucket>(StringComparer.Ordinal);
            _byRange[i] = plans[i].Ranges.Select(_ => new Bucket(plans[i].Aggregations.Count)).ToArray();
            plans[i].ZeroWhenMissing = plans[i].Aggregations.Select(a => !indexed(a.Field)).ToArray();
        }
    }

    /// <summary>Counts one match.</summary>
    public void Add(Row row)
    {
        for (int i = 0; i < _plans.Count; i++)
        {
            var plan = _plans[i];
            if (plan.Ranges.Count > 0)
            {
                for (int r = 0; r < plan.Ranges.Count; r++)
                    if (_inRange(plan.Ranges[r].Condition, row))
                        _byRange[i][r].Add(plan, row);
                continue;
            }
            if (plan.Field == null)
            {
                Get(i, FacetPlan.AllResults, plan).Add(plan, row);
                continue;
            }
            _seen.Clear();
            var kind = _terms(plan.Field);
            foreach (var v in row.Values(plan.Field))
                foreach (string term in kind.Terms(v))
                    if (_seen.Add(term))
                        Get(i, term, plan).Add(plan, row);
        }
    }

    private Bucket Get(int plan, string term, FacetPlan p)
    {
        if (!_byTerm[plan].TryGetValue(term, out var b))
            _byTerm[plan][term] = b = new Bucket(p.Aggregations.Count);
        return b;
    }

    /// <summary>The facet results, one JSON object per facet in query order.</summary>
    public List<byte[]> Results()
    {
        var results = new List<byte[]>();
        for (int i = 0; i < _plans.Count; i++)
        {
            var plan = _plans[i];
            var buffer = new System.Buffers.ArrayBufferWriter<byte>();
            using (var w = new Utf8JsonWriter(buffer))
            {
                w.WriteStartObject();
                w.WriteString("Name", plan.Name);
                w.WriteStartArray("Values");
                List<KeyValuePair<string, Bucket>> remaining = [];
                if (plan.Ranges.Count > 0)
                {
                    for (int r = 0; r < plan.Ranges.Count; r++)
                        WriteValues(w, plan, plan.Ranges[r].Text, _byRange[i][r]);
                }
                else
                {
                    var terms = Sorted(_byTerm[i], plan.Options.TermSortMode);
                    int start = Math.Min(plan.Options.Start, terms.Count);
                    int end = (int)Math.Min((long)start + plan.Options.PageSize, terms.Count);
                    for (int t = start; t < end; t++)
                        WriteValues(w, plan, terms[t].Key, terms[t].Value);
                    remaining = terms.GetRange(end, terms.Count - end);
                }
                w.WriteEndArray();
                w.WriteStartArray("RemainingTerms");
                if (plan.Options.IncludeRemainingTerms)
                    foreach (var (term, _) in remaining)
                        w.WriteStringValue(term);
                w.WriteEndArray();
                w.WriteNumber("RemainingTermsCount", remaining.Count);
                w.WriteNumber("RemainingHits", remaining.Sum(r => (long)r.Value.Count));
                w.WriteEndObject();
            }
            results.Add(buffer.WrittenSpan.ToArray());
        }
        return results;
    }

    private static List<KeyValuePair<string, Bucket>> Sorted(Dictionary<string, Bucket> terms, string mode)
    {
        var list = terms.ToList();
        Comparison<KeyValuePair<string, Bucket>> byValue = (a, b) => string.CompareOrdinal(a.Key, b.Key);
        list.Sort(mode switch
        {
            "ValueDesc" => (a, b) => byValue(b, a),
            "CountAsc" => (a, b) => a.Value.Count != b.Value.Count ? a.Value.Count.CompareTo(b.Value.Count) : byValue(a, b),
            "CountDesc" => (a, b) => a.Value.Count != b.Value.Count ? b.Value.Count.CompareTo(a.Value.Count) : byValue(a, b),
            _ => byValue,
        });
        return list;
    }

    /// <summary>One facet value per aggregated field (or one without aggregations, named by its range).</summary>
    private static void WriteValues(Utf8JsonWriter w, FacetPlan plan, string range, Bucket bucket)
    {
        if (plan.Aggregations.Count == 0)
        {
            WriteValue(w, null, range, bucket.Count, null, null); // RavenDB's Name is the aggregated field: none here
            return;
        }
        for (int a = 0; a < plan.Aggregations.Count; a++)
            WriteValue(w, plan.Aggregations[a].Name, range, bucket.Count, plan.Aggregations[a].Operations, bucket.Aggregates[a]);
    }

    private static void WriteValue(Utf8JsonWriter w, string? name, string range, int count, HashSet<string>? ops, Aggregate? aggregate)
    {
        w.WriteStartObject();
        w.WriteString("Name", name);
        w.WriteString("Range", range);
        w.WriteNumber("Count", count);
        void Number(string property, string op, double value)
        {
            if (ops != null && ops.Contains(op) && aggregate!.Values > 0)
                w.WriteNumber(property, value);
            else
                w.WriteNull(property);
        }
        Number("Sum", "sum", aggregate?.Sum ?? 0);
        Number("Max", "max", aggregate?.Max ?? 0);
        Number("Min", "min", aggregate?.Min ?? 0);
        Number("Average", "avg", aggregate is { Values: > 0 } x ? x.Sum / x.Values : 0);
        w.WriteEndObject();
    }

    /// <summary>
    /// Counts every facet from the index instead of from rows, when each can be (<see cref="Indexing.IndexFacets"/>):
    /// the matches are exactly <paramref name="matches"/> (null: every live entry). False, with nothing
    /// counted, when some facet needs the rows.
    /// </summary>
    public bool TryAddFromIndex(Lucene.Net.Index.IndexReader reader, Indexing.CompiledIndex index, Lucene.Net.Util.FixedBitSet? matches, Func<RqlValue, JsonElement> resolve)
    {
        var counter = new Indexing.IndexFacets(reader, index, matches);
        if (!_plans.All(p => counter.CanCount(p, resolve)))
            return false;
        for (int i = 0; i < _plans.Count; i++)
        {
            var plan = _plans[i];
            var aggregated = plan.Aggregations.Select(a => counter.SortKeys(a.Field)!).ToArray();
            void Count(Bucket b, int doc)
            {
                b.Count++;
                for (int a = 0; a < aggregated.Length; a++)
                {
                    long v = aggregated[a](doc);
                    if (v != Indexing.Index.SortMissing && v != Indexing.Index.SortOther)
                        b.Aggregates[a].Add(Indexing.IndexKeys.FromSortableBits(v));
                }
            }
            if (plan.Ranges.Count > 0)
            {
                var ranges = plan.Ranges.Select(r => Indexing.IndexFacets.NumericRange(r.Condition, resolve)!.Value).ToList();
                var counts = new long[ranges.Count];
                var docs = counter.RangeDocs(plan.RangeField!, ranges, counts, listDocs: aggregated.Length > 0);
                for (int r = 0; r < ranges.Count; r++)
                {
                    if (aggregated.Length == 0)
                        _byRange[i][r].Count += (int)counts[r];
                    else
                        foreach (int doc in docs[r])
                            Count(_byRange[i][r], doc);
                }
            }
            else if (plan.Field == null)
            {
                foreach (int doc in counter.AllMatches())
                    Count(Get(i, FacetPlan.AllResults, plan), doc);
            }
            else
            {
                foreach (var (term, docs, count) in counter.Terms(plan.Field, countsOnly: aggregated.Length == 0))
                {
                    if (count >= 0)
                    {
                        if (count > 0)
                            Get(i, term, plan).Count += count;
                        continue;
                    }
                    Bucket? bucket = null;
                    foreach (int doc in docs)
                        Count(bucket ??= Get(i, term, plan), doc);
                }
            }
        }
        return true;
    }

    private sealed class Bucket(int aggregations)
    {
        public int Count;
        public readonly Aggregate[] Aggregates = Enumerable.Range(0, aggregations).Select(_ => new Aggregate()).ToArray();

        /// <summary>Counts a match; each aggregated field adds its first value when that is a number (as its sort doc value holds it).</summary>
        public void Add(FacetPlan plan, Row row)
        {
            Count++;
            for (int a = 0; a < Aggregates.Length; a++)
            {
                if (row.Values(plan.Aggregations[a].Field) is [{ ValueKind: JsonValueKind.Number } v, ..])
                    Aggregates[a].Add(v.GetDouble());
                else if (plan.ZeroWhenMissing[a])
                    Aggregates[a].Add(0);
            }
        }
    }

    private sealed class Aggregate
    {
        public double Sum, Min = double.PositiveInfinity, Max = double.NegativeInfinity;
        public long Values;

        public void Add(double v)
        {
            Sum += v;
            Min = Math.Min(Min, v);
            Max = Math.Max(Max, v);
            Values++;
        }
    }
}

/// <summary>How one field's values become facet terms: as indexed (lower-cased unless exact), or the words of a Search field.</summary>
internal sealed class FieldTerms(bool exact, Analyzer? words)
{
    /// <summary>A number as a facet term: the shortest text that reads back as the same double.</summary>
    public static string NumberText(double d) => d.ToString("R", System.Globalization.CultureInfo.InvariantCulture);

    public IEnumerable<string> Terms(JsonElement v)
    {
        switch (v.ValueKind)
        {
            case JsonValueKind.String:
                string s = v.GetString()!;
                if (words == null)
                    return [exact ? s : s.ToLowerInvariant()];
                return Words(s);
            case JsonValueKind.Number:
                return [NumberText(v.GetDouble())];
            case JsonValueKind.True:
                return ["true"];
            case JsonValueKind.False:
                return ["false"];
            default:
                return [];
        }
    }

    private List<string> Words(string text)
    {
        var result = new List<string>();
        using var stream = words!.GetTokenStream("facet", text);
        var term = stream.AddAttribute<ICharTermAttribute>();
        stream.Reset();
        while (stream.IncrementToken())
            result.Add(term.ToString());
        stream.End();
        return result;
    }
}
