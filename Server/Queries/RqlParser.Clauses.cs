using Kind = RavenLite.Server.Queries.RqlTokenKind;

namespace RavenLite.Server.Queries;

/// <summary>The clauses of a query, one method each, in the order RQL allows them.</summary>
public sealed partial class RqlParser
{
    /// <summary>What the clauses after <c>order by</c> collect, in any order, until the end of the query.</summary>
    private sealed class Tail
    {
        public readonly List<RqlField> Select = [];
        public bool Distinct;
        public readonly List<string> Include = [];
        public readonly List<RqlFacet> Facets = [];
        public readonly List<RqlSuggest> Suggestions = [];
        public readonly List<RqlHighlight> Highlights = [];
        public readonly List<RqlCounterInclude> CounterIncludes = [];
        public readonly List<RqlTimeSeries> TimeSeries = [];
        public readonly List<RqlTimeSeriesInclude> TimeSeriesIncludes = [];
        public readonly List<RqlCompareExchangeInclude> CompareExchangeIncludes = [];
        public bool Timings;
        public RqlValue? Explanations;
        public RqlValue? Skip, Take;
        public readonly List<RqlLoad> Loads = [];
        public string? SelectScript;
        public string? Update;
        public int UpdatePosition;
        public RqlExpression? Filter;
        public RqlValue? FilterLimit;
    }

    private RqlQuery Query()
    {
        var declared = Declarations();
        var source = From();
        if (AcceptWord("group"))
            GroupBy(source);
        RqlExpression? where = AcceptWord("where") ? Or(0) : null;
        var order = new List<RqlOrder>();
        if (AcceptWord("order"))
        {
            ExpectWord("by");
            do
                order.Add(OrderKey());
            while (AcceptSymbol(","));
        }
        var tail = new Tail();
        while (Peek.Kind != Kind.End)
        {
            if (AcceptWord("load"))
                Load(tail);
            else if (AcceptWord("select"))
                Select(tail);
            else if (AcceptWord("include"))
                Include(tail);
            else if (AcceptWord("limit"))
                Limit(tail);
            else if (AcceptWord("update"))
                Update(tail);
            else if (tail.Filter == null && AcceptWord("filter"))
                tail.Filter = Or(0);
            else if (tail.FilterLimit == null && AcceptWord("filter_limit"))
                tail.FilterLimit = Value();
            else
                throw Error($"unexpected {Describe(Peek)}; expected load, filter, select, include, limit, filter_limit, update or the end of the query", Peek.Position);
        }
        return new RqlQuery(source, where, order, tail.Select, tail.Distinct, tail.Include, tail.Skip, tail.Take)
        {
            UpdateScript = tail.Update,
            UpdateScriptPosition = tail.UpdatePosition,
            GroupBy = _groupBy ?? [],
            Alias = _alias,
            Loads = tail.Loads,
            SelectScript = tail.SelectScript,
            Declared = declared,
            GroupSums = _sums.Distinct(StringComparer.Ordinal).ToList(),
            Facets = tail.Facets,
            Suggestions = tail.Suggestions,
            Highlights = tail.Highlights,
            CounterIncludes = tail.CounterIncludes,
            TimeSeries = tail.TimeSeries,
            TimeSeriesIncludes = tail.TimeSeriesIncludes,
            CompareExchangeIncludes = tail.CompareExchangeIncludes,
            Timings = tail.Timings,
            Explanations = tail.Explanations,
            Filter = tail.Filter,
            FilterLimit = tail.FilterLimit,
        };
    }

    /// <summary><c>declare function name(a, b) { ... }</c>, any number: JavaScript for the select clause, kept as text.</summary>
    private List<string> Declarations()
    {
        var declared = new List<string>();
        while (AcceptWord("declare"))
        {
            int start = _tokens[_pos - 1].Position;
            if (AcceptWord("timeseries"))
            {
                DeclareTimeSeries();
                continue;
            }
            ExpectWord("function");
            var name = Next();
            if (name.Kind != Kind.Word)
                throw Error($"expected a function name but found {Describe(name)}", name.Position);
            var body = DeclaredBody("function", start);
            declared.Add(_text[start..(body.Position + body.Text.Length)][("declare".Length)..].Trim());
            _declared.Add(name.Text);
        }
        return declared;
    }

    /// <summary>A declaration's <c>(parameters)</c> (skipped: they name the document) and its <c>{ body }</c> token (the function name read).</summary>
    private RqlToken DeclaredBody(string what, int start)
    {
        ExpectSymbol("(");
        while (!AcceptSymbol(")"))
        {
            if (Next().Kind == Kind.End)
                throw Error($"the declared {what}'s parameters are not closed with ')'", start);
        }
        var body = Next();
        if (body.Kind != Kind.Script)
            throw Error($"expected the declared {what}'s body {{ ... }} but found {Describe(body)}", body.Position);
        return body;
    }

    /// <summary>
    /// <c>declare timeseries name(x) { from x.HeartRate between $a and $b group by 1h select avg() }</c> (after
    /// <c>declare timeseries</c>): a time-series query that <c>select name(x)</c> runs per document; its parameters name
    /// the document (the query's alias).
    /// </summary>
    private void DeclareTimeSeries()
    {
        var name = Next();
        if (name.Kind != Kind.Word)
            throw Error($"expected a function name but found {Describe(name)}", name.Position);
        var body = DeclaredBody("time series", name.Position);
        _declaredTimeSeries[name.Text] = body.Text[1..^1];
    }

    /// <summary>
    /// <c>select name(x) [as alias], ..</c> of declared time series (the function name next). One call without an alias
    /// answers the time-series result itself, as RavenDB does (clients read it as a TimeSeriesAggregationResult).
    /// </summary>
    private List<RqlTimeSeries> DeclaredTimeSeriesSelects()
    {
        var list = new List<RqlTimeSeries>();
        do
        {
            var name = Next();
            if (!_declaredTimeSeries.TryGetValue(name.Text, out string? body))
                throw Error($"'{name.Text}' is not a declared time series; a time-series select holds only such calls", name.Position);
            ExpectSymbol("(");
            while (!AcceptSymbol(")"))
            {
                if (Next().Kind == Kind.End)
                    throw Error($"{name.Text}( is not closed with ')'", name.Position);
            }
            list.Add(AcceptWord("as") ? new RqlTimeSeries(body, Alias()) : new RqlTimeSeries(body, name.Text) { Unnamed = true });
        }
        while (AcceptSymbol(","));
        if (list.Count > 1 && list.Any(t => t.Unnamed))
            throw Error("several declared time series in one select each need an alias: select a(x) as A, b(x) as B", Peek.Position);
        return list;
    }

    /// <summary><c>from Collection</c>, <c>from index 'Name'</c> or <c>from @all_docs</c>, then an optional <c>as alias</c>.</summary>
    private RqlSource From()
    {
        ExpectWord("from");
        RqlSource source;
        if (AcceptWord("index"))
        {
            var t = Next();
            if (t.Kind is not (Kind.String or Kind.Word))
                throw Error($"expected an index name but found {Describe(t)}", t.Position);
            source = new RqlSource(null, t.Text, false);
        }
        else
        {
            var t = Next();
            if (t.Kind == Kind.Word && t.Text.Equals("@all_docs", StringComparison.OrdinalIgnoreCase))
                source = new RqlSource(null, null, true);
            else if (t.Kind is Kind.String or Kind.Word && !IsKeyword(t.Text))
                source = new RqlSource(t.Text, null, false);
            else
                throw Error($"expected a collection name, index 'Name' or @all_docs after 'from' but found {Describe(t)}", t.Position);
        }
        if (AcceptWord("as"))
        {
            var alias = Next();
            if (alias.Kind != Kind.Word || IsKeyword(alias.Text))
                throw Error($"expected an alias after 'as' but found {Describe(alias)}", alias.Position);
            _alias = alias.Text;
        }
        return source;
    }

    /// <summary><c>group by a, b</c> (after <c>group</c>): a collection's map-reduce query.</summary>
    private void GroupBy(RqlSource source)
    {
        if (source.Collection == null)
            throw Error("group by needs a collection: from Orders group by Company", Peek.Position);
        ExpectWord("by");
        var groupBy = new List<string>();
        do
        {
            if (IsFunction("array"))
            {
                // group by array(Lines[].Product): the whole list of values is the key (not one group per item).
                _pos += 2;
                var (inner, _) = SourcePath();
                ExpectSymbol(")");
                groupBy.Add(Indexing.AutoMapReduce.ArrayKey(inner));
                continue;
            }
            var (path, _) = SourcePath();
            groupBy.Add(path);
        }
        while (AcceptSymbol(","));
        _groupBy = groupBy;
    }

    /// <summary><c>load path as name, ...</c> (after <c>load</c>): documents a projection reads by reference.</summary>
    private void Load(Tail tail)
    {
        do
        {
            var path = Path();
            ExpectWord("as");
            var name = Next();
            if (name.Kind != Kind.Word || IsKeyword(name.Text))
                throw Error($"expected a name after 'as' but found {Describe(name)}", name.Position);
            tail.Loads.Add(new RqlLoad(path, name.Text));
            _loadAliases.Add(name.Text);
        }
        while (AcceptSymbol(","));
    }

    /// <summary>
    /// The select clause (after <c>select</c>): an object literal, a declared function's call, <c>timeseries(..)</c>,
    /// <c>facet(..)</c>, <c>suggest(..)</c>, or <c>[distinct]</c> fields and counters with their aliases.
    /// </summary>
    private void Select(Tail tail)
    {
        if (Peek.Kind == Kind.Script)
            tail.SelectScript = "(" + Next().Text + ")";
        else if (Peek.Kind == Kind.Word && _declared.Contains(Peek.Text, StringComparer.Ordinal) && _tokens[_pos + 1] is { Kind: Kind.Symbol, Text: "(" })
            tail.SelectScript = DeclaredFunctionCall();
        else if (IsFunction("timeseries"))
            tail.TimeSeries.AddRange(TimeSeriesSelects());
        else if (Peek.Kind == Kind.Word && _declaredTimeSeries.ContainsKey(Peek.Text) && _tokens[_pos + 1] is { Kind: Kind.Symbol, Text: "(" })
            tail.TimeSeries.AddRange(DeclaredTimeSeriesSelects());
        else if (IsFunction("facet"))
            tail.Facets.AddRange(Only("facet", "a facet query", Facet));
        else if (IsFunction("suggest"))
            tail.Suggestions.AddRange(Only("suggest", "a suggestion query", Suggest));
        else
            SelectFields(tail);
    }

    /// <summary><c>select output(o)</c>: a declared function's result; the call's text is run as it is.</summary>
    private string DeclaredFunctionCall()
    {
        int start = Next().Position;
        int depth = 0;
        do
        {
            var t = Next();
            if (t.Kind == Kind.End)
                throw Error("the function call is not closed with ')'", start);
            depth += t.Text == "(" ? 1 : t.Text == ")" ? -1 : 0;
        }
        while (depth > 0);
        var last = _tokens[_pos - 1];
        return _text[start..(last.Position + last.Text.Length)];
    }

    /// <summary><c>[distinct] path [as alias], counter([alias,] 'Name') [as alias], ...</c>.</summary>
    private void SelectFields(Tail tail)
    {
        tail.Distinct = AcceptWord("distinct");
        do
        {
            if (IsFunction("counter") || IsFunction("counterRaw"))
            {
                // counter([alias,] 'Name'): the document's counter value (counterRaw: per node) as a projected field.
                bool raw = Peek.Text.Equals("counterRaw", StringComparison.OrdinalIgnoreCase);
                _pos += 2;
                if (Peek.Kind == Kind.Word && AcceptSymbolAfterWord(","))
                {
                    // the source alias (the document itself)
                }
                var counterName = Value();
                ExpectSymbol(")");
                string counterAlias = counterName.Literal as string ?? (raw ? "counterRaw" : "counter");
                if (AcceptWord("as"))
                    counterAlias = Alias();
                tail.Select.Add(new RqlField(new RqlPath([counterAlias], false), counterAlias) { Counter = counterName, CounterRaw = raw });
                continue;
            }
            var path = Path();
            string alias = path.IsId ? "Id" : _groupBy != null ? _groupAlias : path.Parts[^1];
            if (AcceptWord("as"))
                alias = Alias();
            tail.Select.Add(new RqlField(path, alias));
        }
        while (AcceptSymbol(","));
    }

    /// <summary>
    /// The include clause (after <c>include</c>): document paths, <c>highlight</c>, <c>counters</c>, <c>timeseries</c>,
    /// <c>cmpxchg</c>, <c>timings()</c> and <c>explanations()</c>, comma-separated.
    /// </summary>
    private void Include(Tail tail)
    {
        do
        {
            if (IsFunction("highlight"))
            {
                tail.Highlights.Add(Highlight());
            }
            else if (IsFunction("counters"))
            {
                tail.CounterIncludes.Add(CounterInclude());
            }
            else if (IsFunction("timeseries"))
            {
                tail.TimeSeriesIncludes.Add(TimeSeriesInclude());
            }
            else if (IsFunction("cmpxchg"))
            {
                tail.CompareExchangeIncludes.Add(CompareExchangeInclude());
            }
            else if (IsFunction("timings"))
            {
                _pos += 2;
                ExpectSymbol(")");
                tail.Timings = true;
            }
            else if (IsFunction("explanations"))
            {
                int at = Peek.Position;
                _pos += 2;
                tail.Explanations = Peek.Kind == Kind.Parameter ? Value() : new RqlValue(null, null, at);
                ExpectSymbol(")");
            }
            else
            {
                // A quoted path ('u.Roles[].Role', as the clients write one with an alias) is one token: its alias goes here.
                string path = Path().ToString();
                if (_alias != null && path.StartsWith(_alias + ".", StringComparison.Ordinal))
                    path = path[(_alias.Length + 1)..];
                tail.Include.Add(path);
            }
        }
        while (AcceptSymbol(","));
    }

    /// <summary>
    /// <c>cmpxchg(path)</c> or <c>cmpxchg('path')</c> (what the clients send): the compare-exchange values whose keys are
    /// the field's values; <c>cmpxchg($p)</c> names a key.
    /// </summary>
    private RqlCompareExchangeInclude CompareExchangeInclude()
    {
        _pos += 2;
        RqlCompareExchangeInclude include;
        if (Peek.Kind is Kind.String)
        {
            include = new RqlCompareExchangeInclude(new RqlPath(Next().Text.Split('.'), false), null);
        }
        else if (Peek.Kind is Kind.Parameter)
        {
            include = new RqlCompareExchangeInclude(null, Value());
        }
        else
        {
            var keyPath = Path();
            if (_alias != null && keyPath.Parts.Count > 1 && keyPath.Parts[0] == _alias)
                keyPath = new RqlPath(keyPath.Parts.Skip(1).ToList(), keyPath.IsId);
            include = new RqlCompareExchangeInclude(keyPath, null);
        }
        ExpectSymbol(")");
        return include;
    }

    /// <summary><c>limit take</c>, <c>limit skip, take</c> or <c>limit take offset skip</c> (after <c>limit</c>).</summary>
    private void Limit(Tail tail)
    {
        var first = Value();
        if (AcceptSymbol(","))
        {
            tail.Skip = first;
            tail.Take = Value();
        }
        else if (AcceptWord("offset"))
        {
            tail.Take = first;
            tail.Skip = Value();
        }
        else
        {
            tail.Take = first;
        }
    }

    /// <summary><c>update { script }</c> (after <c>update</c>): patch by query; the script's text without its braces, run per document. It ends the query.</summary>
    private void Update(Tail tail)
    {
        if (Peek.Kind != Kind.Script)
            throw Error($"expected '{{' with the patch script after update, found {Describe(Peek)}", Peek.Position);
        var script = Next();
        tail.Update = script.Text[1..^1];
        tail.UpdatePosition = script.Position + 1;
        if (Peek.Kind != Kind.End)
            throw Error($"unexpected {Describe(Peek)} after the update script; it ends the query", Peek.Position);
    }
}
