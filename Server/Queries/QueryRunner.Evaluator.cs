using RavenLite.Server.Indexing;

namespace RavenLite.Server.Queries;

/// <summary>The evaluator: a condition against one row, with the query's parameters resolved once.</summary>
public sealed partial class QueryRunner
{
    /// <summary>
    /// Whether a row satisfies the where clause. The rows of a page chosen and counted from an index in step with the
    /// snapshot (<see cref="_exactTotal"/> set) are matches by construction and are not checked again, unless the
    /// document changed since it was indexed.
    /// </summary>
    private bool Matches(RqlExpression? condition, Row row) => condition == null || (_exactTotal != null && row.EntryNumber >= 0) || Evaluate(condition, row);

    /// <summary>Whether a row is an answer: it matches the where clause and its document passes the filter clause.</summary>
    private bool Kept(Row row) => Matches(_query.Where, row) && Filtered(row);

    /// <summary>
    /// The filter clause, checked on the document itself (not an index entry), for at most filter_limit documents; once
    /// that many were checked, no further row passes.
    /// </summary>
    private bool Filtered(Row row)
    {
        if (_query.Filter == null)
            return true;
        _filterLimit ??= _query.FilterLimit == null ? int.MaxValue : ToInt(_query.FilterLimit, "filter_limit");
        if (_filterScanned >= _filterLimit)
            return false;
        _filterScanned++;
        if (row.Bind(_db.Documents).Document is not { } document)
            return false;
        using var documentRow = Row.ForDocument(document);
        return Evaluate(_query.Filter, documentRow);
    }

    private int? _filterLimit;
    private int _filterScanned;

    /// <summary>The where clause has a moreLikeThis() (answered by relevance unless ordered; only from an index).</summary>
    private bool HasMoreLikeThis => _hasMoreLikeThis ??= Find<RqlMoreLikeThis>(_query.Where).Any();

    private bool? _hasMoreLikeThis;

    /// <summary>Every condition of type <typeparamref name="T"/> in <paramref name="e"/> (not inside moreLikeThis()).</summary>
    private static IEnumerable<T> Find<T>(RqlExpression? e) where T : RqlExpression
    {
        if (e is T t)
        {
            yield return t;
            yield break;
        }
        if (e is RqlMoreLikeThis)
            yield break;
        foreach (var child in e?.Children ?? [])
            foreach (var x in Find<T>(child))
                yield return x;
    }

    private void ResolveAll(RqlExpression e)
    {
        foreach (var child in e.Children)
            ResolveAll(child);
        switch (e)
        {
            case RqlBoost boost:
                if (Resolve(boost.Factor) is not { ValueKind: JsonValueKind.Number } factor || factor.GetDouble() < 0)
                    throw new InvalidQueryException($"Invalid query at position {boost.Factor.Position}: boost() takes a factor that is a number of at least 0, got {Resolve(boost.Factor).GetRawText()}.");
                break;
            case RqlFuzzy fuzzy:
                ResolveAll(fuzzy.Compare);
                if (Resolve(fuzzy.Similarity) is not { ValueKind: JsonValueKind.Number } similarity || similarity.GetDouble() < 0)
                    throw new InvalidQueryException($"Invalid query at position {fuzzy.Similarity.Position}: fuzzy() takes a similarity that is a number of at least 0, got {Resolve(fuzzy.Similarity).GetRawText()}.");
                if (Resolve(fuzzy.Compare.Value).ValueKind != JsonValueKind.String)
                    throw new InvalidQueryException($"Invalid query at position {fuzzy.Compare.Value.Position}: fuzzy() compares text, got {Resolve(fuzzy.Compare.Value).GetRawText()}.");
                break;
            case RqlMethod { Proximity: { } distance, Value: { } terms } near:
                _resolved[terms] = ProximityPhrase(near, Resolve(terms), distance);
                break;
            case RqlCompare c:
                Resolve(c.Value);
                break;
            case RqlBetween bt:
                Resolve(bt.Low);
                Resolve(bt.High);
                break;
            case RqlIn i:
                foreach (var v in i.Values)
                    Resolve(v);
                break;
            case RqlMethod { Value: { } mv } m:
                if (m.Proximity == null && Resolve(mv).ValueKind != JsonValueKind.String)
                    throw new InvalidQueryException($"Invalid query at position {mv.Position}: {m.Name}() needs a string value.");
                if (m.Name == "regex")
                    RegexOf(m);
                break;
            case RqlSpatial sp:
                ShapeOf(sp.Shape, sp.Target, checkOnly: true); // a shape that does not parse is a 400 before anything is read
                break;
            case RqlMoreLikeThis mlt:
                if (mlt.Source != null)
                    ResolveAll(mlt.Source); // not a child: its condition picks the source document, it does not match rows
                if (mlt.Document != null)
                    Resolve(mlt.Document);
                if (mlt.Options != null)
                    Resolve(mlt.Options);
                break;
        }
    }

    private int ToInt(RqlValue v, string what)
    {
        var e = Resolve(v);
        if (e.ValueKind == JsonValueKind.Null)
            return what == "skip" ? 0 : int.MaxValue; // Node sends null for an unset skip
        if (e.ValueKind == JsonValueKind.Number && e.TryGetInt64(out long n))
            return (int)Math.Clamp(n, int.MinValue, int.MaxValue);
        throw new InvalidQueryException($"Invalid query at position {v.Position}: limit {what} must be an integer, got {e.ValueKind}.");
    }

    /// <summary>A date literal or parameter as ms (null or absent: <paramref name="fallback"/>); 400 when it is not a date.</summary>
    private long TimeOf(RqlValue? v, long fallback)
    {
        if (v == null)
            return fallback;
        var e = Resolve(v);
        if (e.ValueKind == JsonValueKind.Null)
            return fallback;
        if (e.ValueKind == JsonValueKind.String && DateTime.TryParse(e.GetString(), System.Globalization.CultureInfo.InvariantCulture,
                System.Globalization.DateTimeStyles.AdjustToUniversal | System.Globalization.DateTimeStyles.AssumeUniversal, out var t))
            return TimeSeries.TimeSeriesPoint.ToMilliseconds(t);
        throw new InvalidQueryException($"Invalid query at position {v.Position}: a time-series range ends at a date, got {e.GetRawText()}.");
    }

    /// <summary>A literal or parameter that must be a string (a counter name); 400 otherwise.</summary>
    private string ResolveString(RqlValue v)
    {
        var e = Resolve(v);
        return e.ValueKind == JsonValueKind.String ? e.GetString()!
            : throw new InvalidQueryException($"Invalid query at position {v.Position}: a counter name must be a string, got {e.ValueKind}.");
    }

    /// <summary>A literal or parameter that is a counter name or an array of them (<c>include counters($names)</c>); null names are skipped; 400 otherwise.</summary>
    private List<string> ResolveStrings(RqlValue v)
    {
        var e = Resolve(v);
        if (e.ValueKind != JsonValueKind.Array)
            return [ResolveString(v)];
        return e.EnumerateArray().Where(x => x.ValueKind != JsonValueKind.Null).Select(x => x.ValueKind == JsonValueKind.String ? x.GetString()!
            : throw new InvalidQueryException($"Invalid query at position {v.Position}: a counter name must be a string, got {x.ValueKind}.")).ToList();
    }

    /// <summary>The value of a literal or parameter, as JSON; computed once per query (not per scanned document).</summary>
    private JsonElement Resolve(RqlValue v)
    {
        if (!_resolved.TryGetValue(v, out var value))
            _resolved[v] = value = ResolveUncached(v);
        return value;
    }

    private JsonElement ResolveUncached(RqlValue v)
    {
        if (v.CompareExchangeKey is { } keyValue)
        {
            var key = Resolve(keyValue);
            if (key.ValueKind != JsonValueKind.String)
                throw new InvalidQueryException($"Invalid query at position {v.Position}: cmpxchg() takes a key (a string), got {key.ValueKind}.");
            using var tx = _db.Environment.ReadTransaction();
            return CompareExchange.CompareExchangeStore.GetObject(tx, key.GetString()!);
        }
        if (v.Parameter is { } name)
        {
            if (_parameters.ValueKind != JsonValueKind.Object || !_parameters.TryGetProperty(name, out var p))
                throw new InvalidQueryException($"Invalid query at position {v.Position}: parameter ${name} has no value in QueryParameters.");
            return p;
        }
        return JsonSerializer.SerializeToElement(v.Literal);
    }

    private bool Evaluate(RqlExpression e, Row row)
    {
        switch (e)
        {
            case RqlBinary b:
                return b.IsAnd ? Evaluate(b.Left, row) && Evaluate(b.Right, row) : Evaluate(b.Left, row) || Evaluate(b.Right, row);
            case RqlNot n:
                return !Evaluate(n.Operand, row);
            case RqlTrue:
                return true;
            case RqlBoost boost:
                return Evaluate(boost.Inner, row);
            case RqlIntersect intersect:
                return intersect.Parts.All(p => Evaluate(p, row));
            case RqlExact exact:
                _exactDepth++;
                try
                {
                    return Evaluate(exact.Inner, row);
                }
                finally
                {
                    _exactDepth--;
                }
            case RqlFuzzy fuzzy:
                return Fuzzy(fuzzy, row);
            case RqlCompare c:
            {
                var values = row.Values(c.Field);
                var target = Resolve(c.Value);
                bool exact = IsExact(c.Field);
                if (c.Op is "<" or "<=" or ">" or ">=" && IsOpenBound(target))
                    return values.Any(v => v.ValueKind != JsonValueKind.Null);
                if (c.Op == "=")
                    return EqualsAny(values, target, exact);
                if (c.Op == "!=")
                    return !EqualsAny(values, target, exact);
                foreach (var v in values)
                {
                    int? cmp = Compare(v, target, exact);
                    if (cmp is { } r && c.Op switch { "<" => r < 0, "<=" => r <= 0, ">" => r > 0, _ => r >= 0 })
                        return true;
                }
                return false;
            }
            case RqlBetween bt:
            {
                var low = Resolve(bt.Low);
                var high = Resolve(bt.High);
                bool exact = IsExact(bt.Field);
                bool lowOpen = IsOpenBound(low), highOpen = IsOpenBound(high);
                return row.Values(bt.Field).Any(v => v.ValueKind != JsonValueKind.Null
                    && (lowOpen || Compare(v, low, exact) >= 0) && (highOpen || Compare(v, high, exact) <= 0));
            }
            case RqlIn { All: true } i:
            {
                var values = row.Values(i.Field);
                bool exact = IsExact(i.Field);
                foreach (var rv in i.Values)
                {
                    var target = Resolve(rv);
                    if (!(target.ValueKind == JsonValueKind.Array ? target.EnumerateArray().All(t => EqualsAny(values, t, exact)) : EqualsAny(values, target, exact)))
                        return false;
                }
                return true;
            }
            case RqlIn i:
            {
                var values = row.Values(i.Field);
                bool exact = IsExact(i.Field);
                foreach (var rv in i.Values)
                {
                    var target = Resolve(rv);
                    if (target.ValueKind == JsonValueKind.Array ? target.EnumerateArray().Any(t => EqualsAny(values, t, exact)) : EqualsAny(values, target, exact))
                        return true;
                }
                return false;
            }
            case RqlMethod m:
                return Method(m, row);
            case RqlSpatial sp:
            {
                var query = ShapeOf(sp.Shape, sp.Target);
                var shapes = ShapesOf(sp.Target, row);
                if (SpatialField(sp.Target) is { BoundingBox: true })
                {
                    // The BoundingBox strategy relates the boxes of the shapes, not the shapes.
                    query = query.Box();
                    shapes = [.. shapes.Select(x => x.Box())];
                }
                return sp.Relation switch
                {
                    "within" => shapes.Any(x => x.IsWithin(query)),
                    "contains" => shapes.Any(x => x.Contains(query)),
                    "disjoint" => shapes.Count > 0 && !shapes.Any(x => x.Intersects(query)),
                    _ => shapes.Any(x => x.Intersects(query)),
                };
            }
            case RqlMoreLikeThis mlt:
                // Judged by the index alone (its terms and frequencies), for changed documents too.
                return row.IndexEntry >= 0 && _searchHits != null && _searchHits.TryGetValue(mlt, out var similar) && similar.ContainsKey(row.IndexEntry);
            default:
                throw new InvalidOperationException("unknown expression " + e);
        }
    }

    private bool IsExact(RqlPath path) => _exactDepth > 0 || (_compiled != null && !path.IsId && _compiled.Field(path.ToString())?.Indexing == FieldIndexing.Exact);

    private int _exactDepth; // inside exact(): text compares case-sensitively

    private bool Method(RqlMethod m, Row row)
    {
        var values = row.Values(m.Field);
        if (m.Name == "exists")
            return values.Count > 0;
        var arg = Resolve(m.Value!);
        if (arg.ValueKind != JsonValueKind.String)
            throw new InvalidQueryException($"Invalid query at position {m.Value!.Position}: {m.Name}() needs a string value.");
        bool exact = IsExact(m.Field);
        string text = exact ? arg.GetString()! : arg.GetString()!.ToLowerInvariant();
        string Fold(JsonElement v) => exact ? v.GetString()! : v.GetString()!.ToLowerInvariant();
        switch (m.Name)
        {
            case "startswith":
                return values.Any(v => v.ValueKind == JsonValueKind.String && Fold(v).StartsWith(text, StringComparison.Ordinal));
            case "endswith":
                return values.Any(v => v.ValueKind == JsonValueKind.String && Fold(v).EndsWith(text, StringComparison.Ordinal));
            case "regex":
            {
                var regex = RegexOf(m);
                try
                {
                    return values.Any(v => v.ValueKind == JsonValueKind.String && regex.IsMatch(Fold(v)));
                }
                catch (System.Text.RegularExpressions.RegexMatchTimeoutException)
                {
                    throw new InvalidQueryException($"Invalid query at position {m.Value!.Position}: the regex() pattern took longer than {RegexTimeout.TotalMilliseconds} ms on one value; simplify it.");
                }
            }
            case "lucene" or "search":
                // search(): an entry the index answered for (its document unchanged since) is a match when
                // Lucene matched it; anything else is matched against its text values the same way.
                if (row.EntryNumber >= 0 && _searchHits != null && _searchHits.TryGetValue(m, out var hits))
                    return hits.ContainsKey(row.EntryNumber);
                if (!_searchQueries.TryGetValue(m, out var query))
                    _searchQueries[m] = query = SearchQuery.Parse(arg.GetString()!, null, m.Value!.Position, m.AllTerms,
                        m.Field.IsId ? null : _compiled?.Field(m.Field.ToString())?.TextAnalyzer);
                return query.Matches(values.Where(v => v.ValueKind == JsonValueKind.String).Select(v => v.GetString()!).ToList());
            default:
                throw new InvalidOperationException("unknown method " + m.Name);
        }
    }

    /// <summary>
    /// A row's relevance: the sum of its scores in the query's search() matches (0 when it has none, or was not answered
    /// by the index); under boost(), a match scores its own relevance (1 for a condition without one) times the factor.
    /// </summary>
    private double Score(Row row)
    {
        if (HasBoost)
            return ScoreOf(_query.Where!, row);
        double score = 0;
        if (_searchHits != null)
        {
            foreach (var (condition, hits) in _searchHits)
            {
                // moreLikeThis() judges every entry by the index; search() only entries whose document is unchanged.
                long entry = condition is RqlMoreLikeThis ? row.IndexEntry : row.EntryNumber;
                if (entry >= 0 && hits.TryGetValue(entry, out float s))
                    score += s;
            }
        }
        return score;
    }

    /// <summary>
    /// A range bound that means "unbounded": the <c>'*'</c> (and, as an upper bound, <c>'NULL'</c>) RavenDB's clients
    /// send for a missing end of whereBetween / whereGreaterThan / whereLessThan.
    /// </summary>
    internal static bool IsOpenBound(JsonElement bound) => bound.ValueKind == JsonValueKind.String && bound.GetString() is "*" or "NULL";

    /// <summary>
    /// An equality on one field's values: a missing field equals null only where the index says so
    /// (<see cref="CompiledIndex.MissingFieldsAsNull"/>); objects and arrays compare as JSON.
    /// </summary>
    private bool EqualsAny(List<JsonElement> values, JsonElement target, bool exact)
    {
        if (values.Count == 0)
            return target.ValueKind == JsonValueKind.Null && _compiled?.MissingFieldsAsNull == true;
        if (target.ValueKind is JsonValueKind.Object)
            return values.Any(v => JsonElement.DeepEquals(v, target));
        foreach (var v in values)
        {
            if (v.ValueKind == JsonValueKind.Null || target.ValueKind == JsonValueKind.Null)
            {
                if (v.ValueKind == target.ValueKind)
                    return true;
                continue;
            }
            if (Compare(v, target, exact) == 0)
                return true;
        }
        return false;
    }

    /// <summary>Typed comparison, or null when the two are not comparable (a number against a string).</summary>
    private static int? Compare(JsonElement a, JsonElement b, bool exact)
    {
        if (a.ValueKind == JsonValueKind.Number && b.ValueKind == JsonValueKind.Number)
        {
            if (a.TryGetDecimal(out decimal da) && b.TryGetDecimal(out decimal db))
                return da.CompareTo(db);
            return a.GetDouble().CompareTo(b.GetDouble());
        }
        if (a.ValueKind == JsonValueKind.String && b.ValueKind == JsonValueKind.String)
            return exact ? JsonPaths.CompareCodePoints(a.GetString()!, b.GetString()!) : JsonPaths.CompareText(a.GetString()!, b.GetString()!);
        bool ab = a.ValueKind is JsonValueKind.True or JsonValueKind.False, bb = b.ValueKind is JsonValueKind.True or JsonValueKind.False;
        if (ab && bb)
            return a.GetBoolean().CompareTo(b.GetBoolean());
        return null;
    }

    /// <summary>The where clause has a boost() (relevance is then summed over the condition tree).</summary>
    private bool HasBoost => _hasBoost ??= Find<RqlBoost>(_query.Where).Any();

    private bool? _hasBoost;

    private double ScoreOf(RqlExpression e, Row row)
    {
        switch (e)
        {
            case RqlBoost boost:
                return Evaluate(boost.Inner, row) ? Resolve(boost.Factor).GetDouble() * (ScoreOf(boost.Inner, row) is > 0 and var inner ? inner : 1) : 0;
            case RqlNot:
                return 0;
            case RqlMethod or RqlMoreLikeThis:
                long entry = e is RqlMoreLikeThis ? row.IndexEntry : row.EntryNumber;
                return entry >= 0 && _searchHits != null && _searchHits.TryGetValue(e, out var hits) && hits.TryGetValue(entry, out float s) ? s : 0;
            default:
                return e.Children.Sum(c => ScoreOf(c, row));
        }
    }

    /// <summary>
    /// fuzzy(field = 'text', similarity): a text value (lower-cased) within the edits Lucene's FuzzyQuery allows for the
    /// similarity and the text's length (at most 2; transpositions count as one), matched with Lucene's Levenshtein automaton.
    /// </summary>
    private bool Fuzzy(RqlFuzzy fuzzy, Row row)
    {
        if (!_fuzzyAutomata.TryGetValue(fuzzy, out var automaton))
        {
            string text = Resolve(fuzzy.Compare.Value).GetString()!.ToLowerInvariant();
            // Lucene's conversion of a similarity to edits: 1 or more is an edit count, under 1 the share of the text's length that may differ.
            double similarity = Resolve(fuzzy.Similarity).GetDouble();
            int most = Lucene.Net.Util.Automaton.LevenshteinAutomata.MAXIMUM_SUPPORTED_DISTANCE;
            int edits = similarity >= 1 ? (int)Math.Min(similarity, most) : Math.Min((int)((1 - similarity) * text.Length), most);
            _fuzzyAutomata[fuzzy] = automaton = new Lucene.Net.Util.Automaton.LevenshteinAutomata(text, true).ToAutomaton(edits);
        }
        return row.Values(fuzzy.Compare.Field).Any(v => v.ValueKind == JsonValueKind.String && Lucene.Net.Util.Automaton.BasicOperations.Run(automaton, v.GetString()!.ToLowerInvariant()));
    }

    private readonly Dictionary<RqlFuzzy, Lucene.Net.Util.Automaton.Automaton> _fuzzyAutomata = new(ReferenceEqualityComparer.Instance);

    /// <summary>
    /// proximity(search(field, 'a b'), n) as the Lucene phrase <c>"a b"~n</c> (what search() then parses), with RavenDB's
    /// errors: the terms must be plain words, and more than one after analysis.
    /// </summary>
    private JsonElement ProximityPhrase(RqlMethod search, JsonElement terms, RqlValue distance)
    {
        if (Resolve(distance) is not { ValueKind: JsonValueKind.Number } n || !n.TryGetInt32(out int slop) || slop < 0)
            throw new InvalidQueryException($"Invalid query at position {distance.Position}: proximity() takes a distance that is a whole number of at least 0, got {Resolve(distance).GetRawText()}.");
        if (terms.ValueKind != JsonValueKind.String)
            throw new InvalidQueryException($"Invalid query at position {search.Value!.Position}: {search.Name}() needs a string value.");
        string text = terms.GetString()!;
        if (text.IndexOfAny(['*', '?']) >= 0)
            throw new InvalidQueryException("Proximity search works only on simple string terms, not wildcard or prefix ones");
        var analyzer = AnalyzerOf(search.Field);
        int count = 0;
        using (var tokens = analyzer.GetTokenStream(SearchQuery.LooseField, text))
        {
            tokens.Reset();
            while (tokens.IncrementToken())
                count++;
            tokens.End();
        }
        if (count < 2)
            throw new InvalidQueryException("Proximity search works only on multiple search terms");
        string phrase = text.Replace("\\", "\\\\", StringComparison.Ordinal).Replace("\"", "\\\"", StringComparison.Ordinal);
        return JsonSerializer.SerializeToElement($"\"{phrase}\"~{slop}");
    }
}
