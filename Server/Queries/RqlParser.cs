using Kind = RavenLite.Server.Queries.RqlTokenKind;
using Token = RavenLite.Server.Queries.RqlToken;

namespace RavenLite.Server.Queries;

/// <summary>
/// Parses the RQL subset into an <see cref="RqlQuery"/>. Errors are <see cref="DomainException"/>
/// 400 (BadRequestException) naming the position and what was found (docs/reliability.md I3); nesting
/// deeper than <see cref="MaxDepth"/> and queries longer than <see cref="MaxLength"/> are refused
/// the same way, so no input can exhaust the stack.
/// </summary>
public sealed partial class RqlParser
{
    /// <summary>Deepest nesting of parentheses / not accepted.</summary>
    public const int MaxDepth = 128;

    /// <summary>Longest query text accepted, characters.</summary>
    public const int MaxLength = 64 * 1024;

    private readonly List<Token> _tokens;
    private readonly string _text;
    private int _pos;
    private List<string>? _groupBy; // group by paths (with [] for arrays) once read: paths then name reduce result fields
    private readonly List<string> _sums = [];
    private string? _alias; // from Users as u: paths may start with u.
    private readonly List<string> _declared = []; // names of declared functions
    private readonly Dictionary<string, string> _declaredTimeSeries = new(StringComparer.Ordinal); // declare timeseries name(x) { body }: body by name
    private readonly HashSet<string> _loadAliases = new(StringComparer.Ordinal); // load x as c: paths may start with c.
    private string _groupAlias = ""; // the name a group by query's last path gets in select without an alias

    private RqlParser(string text)
    {
        _text = text;
        _tokens = RqlTokenizer.Tokenize(text);
    }

    /// <summary>Parses <paramref name="text"/>.</summary>
    /// <exception cref="DomainException">400 naming the position of the problem.</exception>
    public static RqlQuery Parse(string text)
    {
        ArgumentNullException.ThrowIfNull(text);
        if (text.Length > MaxLength)
            throw new InvalidQueryException($"The query is {text.Length} characters long; at most {MaxLength} are accepted.");
        return new RqlParser(text).Query();
    }

    /// <summary>Parses a condition alone (a facet setup document's range, e.g. <c>Price &gt;= 10 and Price &lt; 20</c>).</summary>
    /// <exception cref="DomainException">400 naming the position of the problem.</exception>
    public static RqlExpression ParseCondition(string text)
    {
        ArgumentNullException.ThrowIfNull(text);
        if (text.Length > MaxLength)
            throw new InvalidQueryException($"The condition is {text.Length} characters long; at most {MaxLength} are accepted.");
        var parser = new RqlParser(text);
        var condition = parser.Or(0);
        if (parser.Peek.Kind != Kind.End)
            throw Error($"unexpected {Describe(parser.Peek)} after the condition", parser.Peek.Position);
        return condition;
    }

    private static InvalidQueryException Error(string message, int position) => RqlTokenizer.Error(message, position);

    private Token Peek => _tokens[_pos];

    private Token Next() => _tokens[_pos++];

    private bool IsWord(string word, int ahead = 0) =>
        _tokens[Math.Min(_pos + ahead, _tokens.Count - 1)] is { Kind: Kind.Word } t && t.Text.Equals(word, StringComparison.OrdinalIgnoreCase);

    private bool AcceptWord(string word)
    {
        if (!IsWord(word))
            return false;
        _pos++;
        return true;
    }

    private void ExpectWord(string word)
    {
        if (!AcceptWord(word))
            throw Error($"expected '{word}' but found {Describe(Peek)}", Peek.Position);
    }

    private bool AcceptSymbol(string symbol)
    {
        if (Peek.Kind != Kind.Symbol || Peek.Text != symbol)
            return false;
        _pos++;
        return true;
    }

    private void ExpectSymbol(string symbol)
    {
        if (!AcceptSymbol(symbol))
            throw Error($"expected '{symbol}' but found {Describe(Peek)}", Peek.Position);
    }

    private static string Describe(Token t) => t.Kind == Kind.End ? "the end of the query" : $"'{t.Text}'";

    /// <summary>
    /// <c>timeseries(...) [as alias], timeseries(...) ...</c> (the function name next): each call's text, parsed when the
    /// query runs by <see cref="TimeSeries.TimeSeriesQuery"/>.
    /// </summary>
    private List<RqlTimeSeries> TimeSeriesSelects()
    {
        var list = new List<RqlTimeSeries>();
        do
        {
            if (Peek.Kind == Kind.Word && Peek.Text.StartsWith("@metadata", StringComparison.Ordinal))
            {
                // The clients ask for (parts of) the metadata beside the projection: the answer has its @metadata anyway.
                Path();
                if (AcceptWord("as"))
                    Alias();
                continue;
            }
            if (!IsFunction("timeseries"))
                throw Error($"expected timeseries(...) but found {Describe(Peek)}; a time-series select holds only timeseries() calls", Peek.Position);
            _pos++;
            var open = Next();
            int depth = 1, end;
            while (true)
            {
                var t = Next();
                if (t.Kind == Kind.End)
                    throw Error("timeseries( is not closed with ')'", open.Position);
                if (t.Kind == Kind.Symbol && t.Text == "(")
                    depth++;
                else if (t.Kind == Kind.Symbol && t.Text == ")" && --depth == 0)
                {
                    end = t.Position;
                    break;
                }
            }
            string alias = AcceptWord("as") ? Alias() : "timeseries";
            list.Add(new RqlTimeSeries(_text[(open.Position + 1)..end], alias));
        }
        while (AcceptSymbol(","));
        return list;
    }

    /// <summary>
    /// <c>counters()</c>, <c>counters('name')</c>, <c>counters(path)</c> or <c>counters(path, 'name')</c> (the
    /// function name next): the counters of the result (or of the documents whose ids are at the path) to include.
    /// </summary>
    private RqlCounterInclude CounterInclude()
    {
        _pos += 2;
        RqlPath? path = null;
        RqlValue? name = null;
        if (!AcceptSymbol(")"))
        {
            if (Peek.Kind is Kind.String or Kind.Parameter)
            {
                name = Value();
            }
            else
            {
                path = Path();
                if (_alias != null && path.Parts.Count > 0 && path.Parts[0] == _alias)
                    path = path.Parts.Count == 1 ? null : new RqlPath(path.Parts.Skip(1).ToList(), path.IsId);
                if (AcceptSymbol(","))
                    name = Value();
            }
            ExpectSymbol(")");
        }
        return new RqlCounterInclude(path, name);
    }

    /// <summary>
    /// <c>timeseries([path,] 'Name', from, to)</c> in an include (the function name next; from/to a date string, a
    /// parameter or null): the range of the result's (or the referenced documents') series to include.
    /// </summary>
    private RqlTimeSeriesInclude TimeSeriesInclude()
    {
        int at = Peek.Position;
        _pos += 2;
        RqlPath? path = null;
        if (Peek.Kind == Kind.Word && !Peek.Text.Equals("null", StringComparison.OrdinalIgnoreCase))
        {
            path = Path();
            if (_alias != null && path.Parts.Count > 0 && path.Parts[0] == _alias)
                path = path.Parts.Count == 1 ? null : new RqlPath(path.Parts.Skip(1).ToList(), path.IsId);
            ExpectSymbol(",");
        }
        var name = Value();
        RqlValue? from = null, to = null, lastValue = null, lastUnit = null;
        if (AcceptSymbol(","))
        {
            if (IsFunction("last"))
            {
                // last(n): the last n entries; last(n, 'Unit'): the entries of the last n units.
                _pos += 2;
                lastValue = Value();
                if (AcceptSymbol(","))
                    lastUnit = Value();
                ExpectSymbol(")");
            }
            else
            {
                from = Value();
                ExpectSymbol(",");
                to = Value();
            }
        }
        ExpectSymbol(")");
        return new RqlTimeSeriesInclude(path, name, from, to, at) { LastValue = lastValue, LastUnit = lastUnit };
    }

    /// <summary>A word followed by <paramref name="symbol"/>: both taken (true), or nothing taken.</summary>
    private bool AcceptSymbolAfterWord(string symbol)
    {
        if (_tokens[Math.Min(_pos + 1, _tokens.Count - 1)] is { Kind: Kind.Symbol } t && t.Text == symbol)
        {
            _pos += 2;
            return true;
        }
        return false;
    }

    /// <summary><c>spatial.{name}(</c> next.</summary>
    private bool IsSpatial(string name) =>
        IsWord("spatial") && _tokens[Math.Min(_pos + 1, _tokens.Count - 1)] is { Kind: Kind.Symbol, Text: "." }
        && _tokens[Math.Min(_pos + 2, _tokens.Count - 1)] is { Kind: Kind.Word } w && w.Text.Equals(name, StringComparison.OrdinalIgnoreCase)
        && _tokens[Math.Min(_pos + 3, _tokens.Count - 1)] is { Kind: Kind.Symbol, Text: "(" };

    /// <summary><c>spatial.within|intersects|disjoint|contains(target, shape[, errorPct])</c>.</summary>
    private RqlSpatial Spatial()
    {
        int position = Peek.Position;
        string relation = _tokens[_pos + 2].Text.ToLowerInvariant();
        _pos += 4;
        var target = SpatialTarget();
        ExpectSymbol(",");
        var shape = Shape(point: false);
        if (AcceptSymbol(","))
            Value(); // the distance error percentage: shapes here are exact
        ExpectSymbol(")");
        return new RqlSpatial(relation, target, shape, position);
    }

    /// <summary>An index field, <c>spatial.point(latPath, lngPath)</c> or <c>spatial.wkt(path)</c>.</summary>
    private RqlSpatialTarget SpatialTarget()
    {
        if (IsSpatial("point"))
        {
            _pos += 4;
            var lat = Path();
            ExpectSymbol(",");
            var lng = Path();
            ExpectSymbol(")");
            return new RqlSpatialTarget(null, lat, lng, null);
        }
        if (IsSpatial("wkt"))
        {
            _pos += 4;
            var wkt = Path();
            ExpectSymbol(")");
            return new RqlSpatialTarget(null, null, null, wkt);
        }
        if (Peek.Kind == Kind.String && Peek.Text.TrimStart().StartsWith("spatial.", StringComparison.OrdinalIgnoreCase))
        {
            // RavenDB's clients quote a dynamic target in order by: 'spatial.point(lat, lng)'.
            var quoted = Next();
            var inner = new RqlParser(quoted.Text);
            var target = inner.SpatialTarget();
            if (inner.Peek.Kind != Kind.End || target.Field != null)
                throw Error($"'{quoted.Text}' is not spatial.point(latitude, longitude) or spatial.wkt(field)", quoted.Position);
            return target;
        }
        return new RqlSpatialTarget(Path(), null, null, null);
    }

    /// <summary><c>spatial.circle(r, lat, lng[, units])</c>, <c>spatial.wkt(text[, units])</c>, or (with <paramref name="point"/>) <c>spatial.point(lat, lng)</c>.</summary>
    private RqlShape Shape(bool point)
    {
        int position = Peek.Position;
        string kind = IsSpatial("circle") ? "circle" : IsSpatial("wkt") ? "wkt" : point && IsSpatial("point") ? "point" : "";
        if (kind == "")
            throw Error($"expected spatial.circle(radius, latitude, longitude) or spatial.wkt('shape'){(point ? " or spatial.point(latitude, longitude)" : "")} but found {Describe(Peek)}", position);
        _pos += 4;
        var args = new List<RqlValue> { Value() };
        while (AcceptSymbol(","))
            args.Add(Value());
        ExpectSymbol(")");
        int least = kind == "circle" ? 3 : kind == "point" ? 2 : 1, most = kind == "circle" ? 4 : kind == "point" ? 2 : 2;
        if (args.Count < least || args.Count > most)
            throw Error($"spatial.{kind}() takes {least}{(most > least ? $" or {most}" : "")} arguments, got {args.Count}", position);
        return new RqlShape(kind, args, position);
    }

    /// <summary>A select list of <paramref name="function"/>(..) calls only, comma-separated.</summary>
    private List<T> Only<T>(string function, string what, Func<T> parse)
    {
        var items = new List<T>();
        do
        {
            if (!IsFunction(function))
                throw Error($"{what} selects only {function}(..) but found {Describe(Peek)}", Peek.Position);
            items.Add(parse());
        }
        while (AcceptSymbol(","));
        return items;
    }

    /// <summary>A word followed by '(' (a function call).</summary>
    private bool IsFunction(string name) => IsWord(name) && _tokens[Math.Min(_pos + 1, _tokens.Count - 1)] is { Kind: Kind.Symbol, Text: "(" };

    private string Alias()
    {
        var a = Next();
        if (a.Kind is not (Kind.Word or Kind.String))
            throw Error($"expected an alias after 'as' but found {Describe(a)}", a.Position);
        return a.Text;
    }

    /// <summary>
    /// <c>facet(id('setup'))</c>, <c>facet(Field[, aggregations][, $options])</c>, <c>facet(range, range..[, aggregations][, $options])</c>
    /// or <c>facet(aggregations[, $options])</c>, then <c>[as alias]</c>; an aggregation is <c>sum|min|max|avg(Field) [as name]</c>.
    /// </summary>
    private RqlFacet Facet()
    {
        int position = Next().Position;
        ExpectSymbol("(");
        if (IsFunction("id"))
        {
            _pos += 2;
            var id = Next();
            if (id.Kind is not (Kind.String or Kind.Parameter))
                throw Error($"expected the id of a facet setup document but found {Describe(id)}", id.Position);
            ExpectSymbol(")");
            ExpectSymbol(")");
            return new RqlFacet(id.Kind == Kind.String ? id.Text : "$" + id.Text, null, [], [], null, null, position);
        }
        RqlPath? field = null;
        var ranges = new List<RqlExpression>();
        var aggregations = new List<RqlFacetAggregation>();
        RqlValue? options = null;
        if (!AcceptSymbol(")"))
        {
            do
            {
                if (Peek.Kind == Kind.Parameter)
                {
                    options = Value();
                }
                else if (Peek.Kind == Kind.Word && Peek.Text.ToLowerInvariant() is "sum" or "min" or "max" or "avg" or "average"
                    && _tokens[_pos + 1] is { Kind: Kind.Symbol, Text: "(" })
                {
                    string op = Next().Text.ToLowerInvariant();
                    if (op == "average")
                        op = "avg";
                    ExpectSymbol("(");
                    var on = Path();
                    ExpectSymbol(")");
                    aggregations.Add(new RqlFacetAggregation(op, on, AcceptWord("as") ? Alias() : null));
                }
                else if (Peek.Kind == Kind.Word && _tokens[_pos + 1] is { Kind: Kind.Symbol, Text: "(" } && !IsWord("id"))
                {
                    throw Error($"unknown function '{Peek.Text}' in facet() (sum, min, max, avg)", Peek.Position);
                }
                else
                {
                    int save = _pos;
                    var path = Path();
                    if (Peek is { Kind: Kind.Symbol, Text: "," or ")" })
                    {
                        if (field != null || ranges.Count > 0)
                            throw Error($"a facet aggregates by one field or by ranges, but '{path}' follows another", _tokens[save].Position);
                        field = path;
                    }
                    else
                    {
                        _pos = save;
                        if (field != null)
                            throw Error("a facet aggregates by one field or by ranges, not both", Peek.Position);
                        ranges.Add(And(1));
                    }
                }
            }
            while (AcceptSymbol(","));
            ExpectSymbol(")");
        }
        string? alias = AcceptWord("as") ? Alias() : null;
        return new RqlFacet(null, field, ranges, aggregations, options, alias, position);
    }

    /// <summary><c>suggest(Field, term[, $options]) [as alias]</c>.</summary>
    private RqlSuggest Suggest()
    {
        int position = Next().Position;
        ExpectSymbol("(");
        var field = Path();
        ExpectSymbol(",");
        var term = Value();
        RqlValue? options = AcceptSymbol(",") ? Value() : null;
        ExpectSymbol(")");
        return new RqlSuggest(field, term, options, AcceptWord("as") ? Alias() : null, position);
    }

    /// <summary><c>highlight(Field, fragmentLength, fragmentCount[, $options])</c>.</summary>
    private RqlHighlight Highlight()
    {
        int position = Next().Position;
        ExpectSymbol("(");
        var field = Path();
        ExpectSymbol(",");
        var length = Value();
        ExpectSymbol(",");
        var count = Value();
        RqlValue? options = AcceptSymbol(",") ? Value() : null;
        ExpectSymbol(")");
        return new RqlHighlight(field, length, count, options, position);
    }

    /// <summary><c>moreLikeThis(condition | true | $json | 'json' [, $options])</c>.</summary>
    private RqlMoreLikeThis MoreLikeThis(int depth)
    {
        int position = Next().Position;
        ExpectSymbol("(");
        RqlExpression? source = null;
        RqlValue? document = null;
        if (Peek.Kind is Kind.Parameter or Kind.String && _tokens[_pos + 1] is { Kind: Kind.Symbol, Text: "," or ")" })
            document = Value();
        else if (IsWord("true") && _tokens[_pos + 1] is { Kind: Kind.Symbol, Text: "," or ")" })
            _pos++;
        else
            source = Or(depth + 1);
        RqlValue? options = AcceptSymbol(",") ? Value() : null;
        ExpectSymbol(")");
        return new RqlMoreLikeThis(source, document, options, position);
    }

    private static bool IsKeyword(string w) =>
        w.ToLowerInvariant() is "where" or "order" or "select" or "include" or "limit" or "and" or "or" or "not" or "index" or "from";

    private RqlOrder OrderKey()
    {
        if (IsSpatial("distance"))
        {
            _pos += 4;
            var target = SpatialTarget();
            ExpectSymbol(",");
            var from = Shape(point: true);
            RqlValue? round = AcceptSymbol(",") ? Value() : null;
            ExpectSymbol(")");
            bool far = AcceptWord("desc") || AcceptWord("descending");
            if (!far)
                _ = AcceptWord("asc") || AcceptWord("ascending");
            return new RqlOrder(null, RqlOrderType.Distance, far, null) { DistanceOf = target, DistanceFrom = from, RoundFactor = round };
        }
        if (IsWord("random") && _tokens[_pos + 1] is { Kind: Kind.Symbol, Text: "(" })
        {
            _pos += 2;
            string? seed = Peek.Kind is Kind.String or Kind.Number ? Next().Text : null;
            ExpectSymbol(")");
            return new RqlOrder(null, RqlOrderType.Random, false, seed);
        }
        if (IsWord("custom") && _tokens[_pos + 1] is { Kind: Kind.Symbol, Text: "(" })
        {
            // custom(Field, 'SorterName'): ordered by a custom sorter (PUT admin/sorters).
            _pos += 2;
            var field = Path();
            ExpectSymbol(",");
            var sorter = Next();
            if (sorter.Kind != Kind.String)
                throw Error($"custom() takes a field and the name of a sorter in quotes, not {Describe(sorter)}", sorter.Position);
            ExpectSymbol(")");
            bool reversed = AcceptWord("desc") || AcceptWord("descending");
            if (!reversed)
                _ = AcceptWord("asc") || AcceptWord("ascending");
            return new RqlOrder(field, RqlOrderType.Custom, reversed, null) { Sorter = sorter.Text };
        }
        if (IsWord("score") && _tokens[_pos + 1] is { Kind: Kind.Symbol, Text: "(" })
        {
            _pos += 2;
            ExpectSymbol(")");
            bool descending = AcceptWord("desc") || AcceptWord("descending");
            if (!descending)
                _ = AcceptWord("asc") || AcceptWord("ascending");
            return new RqlOrder(null, RqlOrderType.Score, descending, null);
        }
        var path = Path();
        var type = RqlOrderType.Default;
        if (AcceptWord("as"))
        {
            var t = Next();
            type = t.Text.ToLowerInvariant() switch
            {
                "long" => RqlOrderType.Long,
                "double" => RqlOrderType.Double,
                "alphanumeric" => RqlOrderType.AlphaNumeric,
                "string" => RqlOrderType.String,
                _ => throw Error($"unknown ordering '{t.Text}' (long, double, alphaNumeric or string)", t.Position),
            };
        }
        bool desc = AcceptWord("desc") || AcceptWord("descending");
        if (!desc)
            _ = AcceptWord("asc") || AcceptWord("ascending");
        return new RqlOrder(path, type, desc, null);
    }

    /// <summary>A document path as written, arrays marked (<c>Lines[].Product</c>), and its last name.</summary>
    private (string Path, string Last) SourcePath()
    {
        var t = Next();
        if (t.Kind is not (Kind.Word or Kind.String) || (t.Kind == Kind.Word && IsKeyword(t.Text)))
            throw Error($"expected a field name but found {Describe(t)}", t.Position);
        var sb = new StringBuilder(t.Text);
        string last = t.Text;
        while (true)
        {
            if (AcceptSymbol("[]"))
            {
                sb.Append("[]");
                continue;
            }
            if (!AcceptSymbol("."))
                break;
            var p = Next();
            if (p.Kind is not (Kind.Word or Kind.String))
                throw Error($"expected a field name after '.' but found {Describe(p)}", p.Position);
            sb.Append('.').Append(p.Text);
            last = p.Text;
        }
        return (sb.ToString(), last);
    }

    /// <summary>
    /// In a group by query, what a path names in the reduce results: <c>count()</c> the count, <c>sum(Path)</c> the sum
    /// of a path, <c>key()</c> the (single) group-by field, a group-by path its field (<see cref="Indexing.AutoMapReduce.Field"/>).
    /// </summary>
    private RqlPath GroupPath()
    {
        var t = Peek;
        if (IsFunction("count"))
        {
            _pos += 2;
            ExpectSymbol(")");
            _groupAlias = "Count";
            return new RqlPath([Indexing.AutoMapReduce.CountField], false);
        }
        if (IsFunction("sum"))
        {
            _pos += 2;
            var (path, last) = SourcePath();
            ExpectSymbol(")");
            _sums.Add(path);
            _groupAlias = last;
            return new RqlPath([Indexing.AutoMapReduce.Field(path)], false);
        }
        if (IsFunction("key"))
        {
            _pos += 2;
            ExpectSymbol(")");
            if (_groupBy!.Count != 1)
                throw Error("key() names the group-by field of a query grouped by one field; select the fields by name", t.Position);
            _groupAlias = Indexing.AutoMapReduce.InnerPath(_groupBy[0]).Split('.')[^1].Replace("[]", "", StringComparison.Ordinal); // the field's name, as RavenDB answers key()
            return new RqlPath([Indexing.AutoMapReduce.Field(_groupBy[0])], false);
        }
        var (p, name) = SourcePath();
        _groupAlias = name;
        var groupBy = _groupBy!;
        if (!groupBy.Contains(p, StringComparer.Ordinal) && groupBy.Where(g => g.Split('.')[^1].Replace("[]", "", StringComparison.Ordinal) == p).ToList() is [{ } byName])
            p = byName; // a group-by field by its last name (its default alias): order by Product for group by Lines[].Product
        return new RqlPath([Indexing.AutoMapReduce.Field(p)], false);
    }

    private RqlPath Path()
    {
        if (_groupBy != null)
            return GroupPath();
        var t = Next();
        if (t.Kind == Kind.Word && t.Text.Equals("id", StringComparison.OrdinalIgnoreCase) && AcceptSymbol("("))
        {
            ExpectSymbol(")");
            return new RqlPath([], true);
        }
        if (t.Kind is not (Kind.Word or Kind.String) || (t.Kind == Kind.Word && IsKeyword(t.Text)))
            throw Error($"expected a field name but found {Describe(t)}", t.Position);
        var parts = new List<string> { t.Text };
        if (t.Kind == Kind.Word && t.Text == _alias && AcceptSymbol("."))
        {
            // from Users as u ... u.Name: the alias names the document.
            var first = Next();
            if (first.Kind is not (Kind.Word or Kind.String))
                throw Error($"expected a field name after '.' but found {Describe(first)}", first.Position);
            parts[0] = first.Text;
        }
        else if (t.Kind == Kind.Word && t.Text == _alias)
        {
            throw Error($"'{_alias}' is the document; name one of its fields ({_alias}.Name)", t.Position);
        }
        // Lines[].Product: RavenDB's mark of a path through an array; paths go through arrays anyway.
        AcceptSymbol("[]");
        while (AcceptSymbol("."))
        {
            var p = Next();
            if (p.Kind is not (Kind.Word or Kind.String))
                throw Error($"expected a field name after '.' but found {Describe(p)}", p.Position);
            parts.Add(p.Text);
            AcceptSymbol("[]");
        }
        return new RqlPath(parts, false);
    }

    private RqlValue Value()
    {
        var t = Next();
        switch (t.Kind)
        {
            case Kind.Parameter:
                return new RqlValue(null, t.Text, t.Position);
            case Kind.String:
                return new RqlValue(t.Text, null, t.Position);
            case Kind.Number:
                if (long.TryParse(t.Text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out long l))
                    return new RqlValue(l, null, t.Position);
                if (double.TryParse(t.Text, NumberStyles.Float, CultureInfo.InvariantCulture, out double d))
                    return new RqlValue(d, null, t.Position);
                throw Error($"'{t.Text}' is not a number", t.Position);
            case Kind.Word when t.Text.Equals("true", StringComparison.OrdinalIgnoreCase):
                return new RqlValue(true, null, t.Position);
            case Kind.Word when t.Text.Equals("false", StringComparison.OrdinalIgnoreCase):
                return new RqlValue(false, null, t.Position);
            case Kind.Word when t.Text.Equals("null", StringComparison.OrdinalIgnoreCase):
                return new RqlValue(null, null, t.Position);
            case Kind.Word when t.Text.Equals("cmpxchg", StringComparison.OrdinalIgnoreCase) && AcceptSymbol("("):
            {
                // cmpxchg('key'): the compare-exchange value stored under the key (its Object), read when the query runs.
                var key = Value();
                ExpectSymbol(")");
                return new RqlValue(null, null, t.Position) { CompareExchangeKey = key };
            }
            default:
                throw Error($"expected a value ('text', a number, true, false, null, $parameter or cmpxchg('key')) but found {Describe(t)}", t.Position);
        }
    }

    private RqlExpression Or(int depth)
    {
        var left = And(depth);
        while (AcceptWord("or"))
            left = new RqlBinary(left, false, And(depth));
        return left;
    }

    private RqlExpression And(int depth)
    {
        var left = Unary(depth);
        while (AcceptWord("and"))
            left = new RqlBinary(left, true, Unary(depth));
        return left;
    }

    private RqlExpression Unary(int depth)
    {
        if (depth > MaxDepth)
            throw Error($"the condition nests deeper than {MaxDepth} levels", Peek.Position);
        if (AcceptWord("not"))
            return new RqlNot(Unary(depth + 1));
        if (AcceptSymbol("("))
        {
            var inner = Or(depth + 1);
            ExpectSymbol(")");
            return inner;
        }
        if (IsWord("true") && !(_tokens[_pos + 1] is { Kind: Kind.Symbol }))
        {
            _pos++;
            return new RqlTrue();
        }
        if (IsFunction("moreLikeThis"))
            return MoreLikeThis(depth);
        if (Wrapper(depth) is { } wrapped)
            return wrapped;
        if (IsSpatial("within") || IsSpatial("intersects") || IsSpatial("disjoint") || IsSpatial("contains"))
            return Spatial();
        bool aggregate = _groupBy != null && (IsFunction("count") || IsFunction("sum") || IsFunction("key"));
        if (!aggregate && Peek.Kind == Kind.Word && _tokens[_pos + 1] is { Kind: Kind.Symbol, Text: "(" } && !IsWord("id"))
            return Method();
        var field = Path();
        if (AcceptWord("between"))
        {
            var low = Value();
            ExpectWord("and");
            return new RqlBetween(field, low, Value());
        }
        bool all = IsWord("all") && IsWord("in", 1) && AcceptWord("all");
        if (AcceptWord("in"))
        {
            ExpectSymbol("(");
            var values = new List<RqlValue> { Value() };
            while (AcceptSymbol(","))
                values.Add(Value());
            ExpectSymbol(")");
            return new RqlIn(field, values) { All = all };
        }
        var op = Next();
        if (op.Kind != Kind.Symbol || op.Text is not ("=" or "==" or "!=" or "<>" or "<" or "<=" or ">" or ">="))
            throw Error($"expected a comparison (=, !=, <, <=, >, >=, between, in) after '{field}' but found {Describe(op)}", op.Position);
        return new RqlCompare(field, op.Text switch { "==" => "=", "<>" => "!=", _ => op.Text }, Value());
    }

    private RqlMethod Method()
    {
        var name = Next();
        string method = name.Text.ToLowerInvariant();
        ExpectSymbol("(");
        var field = Path();
        RqlValue? value = null;
        bool allTerms = false;
        switch (method)
        {
            case "startswith" or "endswith" or "search" or "lucene" or "regex":
                ExpectSymbol(",");
                value = Value();
                if (method is "search" or "lucene" && AcceptSymbol(","))
                {
                    // search(field, terms, and|or): the operator between terms that name none (or by default).
                    var op = Next();
                    allTerms = op.Text.ToLowerInvariant() switch
                    {
                        "and" => true,
                        "or" => false,
                        _ => throw Error($"expected 'and' or 'or' as search()'s operator but found {Describe(op)}", op.Position),
                    };
                }
                break;
            case "exists":
                break;
            default:
                throw Error($"unknown function '{name.Text}' (startsWith, endsWith, search, lucene, regex, exists, moreLikeThis, boost, proximity, fuzzy, exact, intersect)", name.Position);
        }
        ExpectSymbol(")");
        return new RqlMethod(method, field, value, allTerms);
    }

    /// <summary>
    /// The functions that wrap conditions (the function name next): <c>boost(condition, factor)</c>,
    /// <c>intersect(a, b, ...)</c>, <c>exact(condition)</c>, <c>fuzzy(field = 'text', similarity)</c> and
    /// <c>proximity(search(field, 'terms'), distance)</c>; null when the next word is none of them.
    /// </summary>
    private RqlExpression? Wrapper(int depth)
    {
        if (!(IsFunction("boost") || IsFunction("intersect") || IsFunction("exact") || IsFunction("fuzzy") || IsFunction("proximity")))
            return null;
        var name = Next();
        string function = name.Text.ToLowerInvariant();
        ExpectSymbol("(");
        RqlExpression result;
        switch (function)
        {
            case "boost":
            {
                var inner = Or(depth + 1);
                ExpectSymbol(",");
                result = new RqlBoost(inner, Value());
                break;
            }
            case "intersect":
            {
                var parts = new List<RqlExpression> { Or(depth + 1) };
                while (AcceptSymbol(","))
                    parts.Add(Or(depth + 1));
                result = new RqlIntersect(parts);
                break;
            }
            case "exact":
                result = new RqlExact(Or(depth + 1));
                break;
            case "fuzzy":
            {
                if (Unary(depth + 1) is not RqlCompare { Op: "=" } compare)
                    throw Error("fuzzy() takes an equality and a similarity: fuzzy(Name = 'text', 0.5)", name.Position);
                ExpectSymbol(",");
                result = new RqlFuzzy(compare, Value());
                break;
            }
            default:
            {
                if (Unary(depth + 1) is not RqlMethod { IsSearch: true } search)
                    throw Error("proximity() takes a search() and a distance: proximity(search(Body, 'two words'), 3)", name.Position);
                ExpectSymbol(",");
                result = search with { Proximity = Value() };
                break;
            }
        }
        ExpectSymbol(")");
        return result;
    }
}
