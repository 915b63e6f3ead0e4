namespace RavenLite.Server.Queries;

/// <summary>
/// A parsed RQL query (the subset of docs/protocol.md §6):
/// <c>from 'Coll' | from index 'X' | from @all_docs [where ..] [order by ..] [select [distinct] ..] [include ..] [limit skip, take]</c>.
/// </summary>
public sealed record RqlQuery(
    RqlSource Source,
    RqlExpression? Where,
    IReadOnlyList<RqlOrder> OrderBy,
    IReadOnlyList<RqlField> Select,
    bool Distinct,
    IReadOnlyList<string> Include,
    RqlValue? Skip,
    RqlValue? Take)
{
    /// <summary><c>select facet(..), facet(..)</c>: the query answers facet results instead of documents.</summary>
    public IReadOnlyList<RqlFacet> Facets { get; init; } = [];

    /// <summary><c>select suggest(..)</c>: the query answers term suggestions instead of documents.</summary>
    public IReadOnlyList<RqlSuggest> Suggestions { get; init; } = [];

    /// <summary><c>include highlight(field, fragmentLength, fragmentCount[, $options])</c>.</summary>
    public IReadOnlyList<RqlHighlight> Highlights { get; init; } = [];

    /// <summary><c>group by</c> paths as written (arrays marked <c>[]</c>): the query reads an auto map-reduce index.</summary>
    public IReadOnlyList<string> GroupBy { get; init; } = [];

    /// <summary>Paths a group by query sums (<c>sum(Freight)</c>).</summary>
    public IReadOnlyList<string> GroupSums { get; init; } = [];

    /// <summary><c>from Users as u</c>: the alias of the document (paths are given without it).</summary>
    public string? Alias { get; init; }

    /// <summary><c>load u.Company as c</c>: documents loaded for the select clause.</summary>
    public IReadOnlyList<RqlLoad> Loads { get; init; } = [];

    /// <summary><c>select { ... }</c> or <c>select fn(u)</c>: a JavaScript projection (run in Jint per answered document).</summary>
    public string? SelectScript { get; init; }

    /// <summary><c>update { ... }</c>: the patch script (JavaScript, without its braces) a patch by query runs on each match, else null.</summary>
    public string? UpdateScript { get; init; }

    /// <summary>Where <see cref="UpdateScript"/> starts in the query text (for errors naming a line).</summary>
    public int UpdateScriptPosition { get; init; }

    /// <summary><c>declare function ...</c>: JavaScript functions the projection may call.</summary>
    public IReadOnlyList<string> Declared { get; init; } = [];

    /// <summary><c>select timeseries(..) as alias, ..</c>: time-series queries answered per document.</summary>
    public IReadOnlyList<RqlTimeSeries> TimeSeries { get; init; } = [];

    /// <summary><c>include cmpxchg(..)</c>.</summary>
    public IReadOnlyList<RqlCompareExchangeInclude> CompareExchangeIncludes { get; init; } = [];

    /// <summary><c>include timeseries(..)</c>.</summary>
    public IReadOnlyList<RqlTimeSeriesInclude> TimeSeriesIncludes { get; init; } = [];

    /// <summary><c>include counters(..)</c>.</summary>
    public IReadOnlyList<RqlCounterInclude> CounterIncludes { get; init; } = [];

    /// <summary><c>include timings()</c>.</summary>
    public bool Timings { get; init; }

    /// <summary><c>include explanations([$options])</c>: the options parameter, or a value with neither literal nor parameter.</summary>
    public RqlValue? Explanations { get; init; }

    /// <summary><c>filter condition</c>: checked on each document the where clause matched (no index), or null.</summary>
    public RqlExpression? Filter { get; init; }

    /// <summary><c>filter_limit n</c>: at most this many documents are checked by <see cref="Filter"/>, or null.</summary>
    public RqlValue? FilterLimit { get; init; }
}

/// <summary>
/// One <c>facet(..)</c>: a facet setup document (<see cref="SetupDocumentId"/>), a field facet
/// (<see cref="Field"/>), range facets (<see cref="Ranges"/>: conditions on one field), or aggregations over
/// all results (neither field nor ranges); each with optional aggregations, options and alias.
/// </summary>
public sealed record RqlFacet(string? SetupDocumentId, RqlPath? Field, IReadOnlyList<RqlExpression> Ranges,
    IReadOnlyList<RqlFacetAggregation> Aggregations, RqlValue? Options, string? Alias, int Position);

/// <summary>A facet's <c>sum|min|max|avg(field) [as name]</c>.</summary>
public sealed record RqlFacetAggregation(string Operation, RqlPath Field, string? Alias);

/// <summary><c>suggest(field, term[, $options]) [as alias]</c>.</summary>
public sealed record RqlSuggest(RqlPath Field, RqlValue Term, RqlValue? Options, string? Alias, int Position);

/// <summary><c>highlight(field, fragmentLength, fragmentCount[, $options])</c>.</summary>
public sealed record RqlHighlight(RqlPath Field, RqlValue FragmentLength, RqlValue FragmentCount, RqlValue? Options, int Position);

/// <summary>Where a query reads: a collection, an index, or every document.</summary>
public sealed record RqlSource(string? Collection, string? Index, bool AllDocs);

/// <summary>One <c>order by</c> key: a field (or random(), score(), spatial.distance()), its ordering type and direction.</summary>
public sealed record RqlOrder(RqlPath? Field, RqlOrderType Type, bool Descending, string? RandomSeed)
{
    /// <summary><c>spatial.distance(target, from[, roundFactor])</c>: what is measured.</summary>
    public RqlSpatialTarget? DistanceOf { get; init; }

    /// <summary><c>spatial.distance</c>: the point (or shape centre) measured from.</summary>
    public RqlShape? DistanceFrom { get; init; }

    /// <summary><c>spatial.distance</c>: distances are rounded to multiples of this (kilometres), or null.</summary>
    public RqlValue? RoundFactor { get; init; }

    /// <summary><c>custom(field, 'Name')</c>: the custom sorter's name.</summary>
    public string? Sorter { get; init; }
}

/// <summary>How an order-by key compares.</summary>
public enum RqlOrderType
{
    /// <summary>Numbers as numbers, everything else as case-insensitive strings.</summary>
    Default,
    /// <summary><c>as long</c>.</summary>
    Long,
    /// <summary><c>as double</c>.</summary>
    Double,
    /// <summary><c>as alphaNumeric</c>: digit runs compare as numbers.</summary>
    AlphaNumeric,
    /// <summary><c>as string</c>.</summary>
    String,
    /// <summary><c>random()</c>.</summary>
    Random,
    /// <summary><c>spatial.distance(..)</c>: nearest first (kilometres; missing values first).</summary>
    Distance,
    /// <summary><c>custom(field, 'Name')</c>: the values compared by a custom sorter (<c>Indexing.Analysis.CustomSorter</c>); missing values first.</summary>
    Custom,
    /// <summary><c>score()</c>: the relevance of the query's search() matches, best first (<c>desc</c>: worst first), as RavenDB.</summary>
    Score,
}

/// <summary>A projected field: path and output name.</summary>
public sealed record RqlField(RqlPath Path, string Alias)
{
    /// <summary><c>counter('Name')</c>: the field is the document's counter (its name as a value), not a path.</summary>
    public RqlValue? Counter { get; init; }

    /// <summary><c>counterRaw('Name')</c>: the value per node (<c>{"A:..": n}</c>) rather than the total.</summary>
    public bool CounterRaw { get; init; }
}

/// <summary>A field path: dotted property names, or the document id (<c>id()</c>).</summary>
public sealed record RqlPath(IReadOnlyList<string> Parts, bool IsId)
{
    /// <summary>Display text, also the field name in index entries; computed once (it is read per candidate).</summary>
    public string Text { get; } = IsId ? "id()" : string.Join('.', Parts);

    /// <summary>Display text.</summary>
    public override string ToString() => Text;
}

/// <summary><c>load Path as Name</c>.</summary>
public sealed record RqlLoad(RqlPath Path, string Name);

/// <summary>A value in a query: a literal or a <c>$parameter</c>.</summary>
public sealed record RqlValue(object? Literal, string? Parameter, int Position)
{
    /// <summary><c>cmpxchg(key)</c>: the value is the compare-exchange value under this key (its <c>Object</c>; null when missing).</summary>
    public RqlValue? CompareExchangeKey { get; init; }
}

/// <summary>One <c>include cmpxchg(..)</c>: the path whose values are keys (quoted or not), or a key given as a parameter.</summary>
public sealed record RqlCompareExchangeInclude(RqlPath? Path, RqlValue? Key);

/// <summary>One <c>include timeseries([path,] name, from, to)</c> (from/to null: open ends).</summary>
public sealed record RqlTimeSeriesInclude(RqlPath? Path, RqlValue Name, RqlValue? From, RqlValue? To, int Position)
{
    /// <summary><c>last(n[, 'Unit'])</c>: n entries (no unit) or n units of time back from now.</summary>
    public RqlValue? LastValue { get; init; }

    /// <summary>The unit of <see cref="LastValue"/>, or null for a count of entries.</summary>
    public RqlValue? LastUnit { get; init; }
}

/// <summary>One <c>timeseries(...)</c> (or declared time series) of a select: its inner text and the result's property name.</summary>
public sealed record RqlTimeSeries(string Text, string Alias)
{
    /// <summary>A lone declared time series without an alias: the answer is its result itself, not a property of one.</summary>
    public bool Unnamed { get; init; }
}

/// <summary>One <c>include counters(..)</c>: the counter <see cref="Name"/> (null: all) of the result, or of the documents whose ids are at <see cref="Path"/>.</summary>
public sealed record RqlCounterInclude(RqlPath? Path, RqlValue? Name);

/// <summary>A condition.</summary>
public abstract record RqlExpression
{
    /// <summary>The conditions this one combines (walkers that only look for leaves recurse through these).</summary>
    public virtual IEnumerable<RqlExpression> Children => [];
}

/// <summary><c>a and b</c> / <c>a or b</c>.</summary>
public sealed record RqlBinary(RqlExpression Left, bool IsAnd, RqlExpression Right) : RqlExpression
{
    /// <inheritdoc/>
    public override IEnumerable<RqlExpression> Children => [Left, Right];
}

/// <summary><c>not a</c>.</summary>
public sealed record RqlNot(RqlExpression Operand) : RqlExpression
{
    /// <inheritdoc/>
    public override IEnumerable<RqlExpression> Children => [Operand];
}

/// <summary><c>boost(condition, factor)</c>: matches as the condition does; a match's relevance is multiplied by the factor.</summary>
public sealed record RqlBoost(RqlExpression Inner, RqlValue Factor) : RqlExpression
{
    /// <inheritdoc/>
    public override IEnumerable<RqlExpression> Children => [Inner];
}

/// <summary>
/// <c>intersect(a, b, ...)</c>: every condition holds for the document. An entry of a fan-out map holds the values of all
/// the document's entries (docs/format/indexes.md), so this is <c>and</c> over the entry.
/// </summary>
public sealed record RqlIntersect(IReadOnlyList<RqlExpression> Parts) : RqlExpression
{
    /// <inheritdoc/>
    public override IEnumerable<RqlExpression> Children => Parts;
}

/// <summary><c>exact(condition)</c>: text inside compares case-sensitively, whatever the field's indexing.</summary>
public sealed record RqlExact(RqlExpression Inner) : RqlExpression
{
    /// <inheritdoc/>
    public override IEnumerable<RqlExpression> Children => [Inner];
}

/// <summary><c>fuzzy(field = 'text', similarity)</c>: a value within the edit distance Lucene's FuzzyQuery allows for the similarity.</summary>
public sealed record RqlFuzzy(RqlCompare Compare, RqlValue Similarity) : RqlExpression;

/// <summary><c>true</c> (RavenDB writes <c>true and not x</c>).</summary>
public sealed record RqlTrue : RqlExpression;

/// <summary><c>field op value</c> with op one of = == != &lt;&gt; &lt; &lt;= &gt; &gt;=.</summary>
public sealed record RqlCompare(RqlPath Field, string Op, RqlValue Value) : RqlExpression;

/// <summary><c>field between low and high</c> (inclusive).</summary>
public sealed record RqlBetween(RqlPath Field, RqlValue Low, RqlValue High) : RqlExpression;

/// <summary><c>field in (v1, v2, ..)</c>; an array parameter expands to its elements.</summary>
public sealed record RqlIn(RqlPath Field, IReadOnlyList<RqlValue> Values) : RqlExpression
{
    /// <summary><c>field all in (..)</c>: every listed value must be among the field's values.</summary>
    public bool All { get; init; }
}

/// <summary>
/// <c>moreLikeThis(id() = 'x' [, $options])</c> (the document a condition selects) or <c>moreLikeThis($json [, $options])</c>
/// (an artificial document given as JSON text).
/// </summary>
public sealed record RqlMoreLikeThis(RqlExpression? Source, RqlValue? Document, RqlValue? Options, int Position) : RqlExpression;

/// <summary>
/// <c>spatial.within|intersects|disjoint|contains(target, shape)</c>: how the target's shapes relate to the query
/// shape (within: inside it; contains: holding it).
/// </summary>
public sealed record RqlSpatial(string Relation, RqlSpatialTarget Target, RqlShape Shape, int Position) : RqlExpression;

/// <summary>
/// What a spatial condition reads: a spatial field of an index (<see cref="Field"/>), or document values —
/// <c>spatial.point(lat, lng)</c> or <c>spatial.wkt(path)</c> (dynamic queries).
/// </summary>
public sealed record RqlSpatialTarget(RqlPath? Field, RqlPath? Latitude, RqlPath? Longitude, RqlPath? Wkt)
{
    /// <summary>The paths read.</summary>
    public IEnumerable<RqlPath> Paths() => new[] { Field, Latitude, Longitude, Wkt }.Where(p => p != null)!;

    /// <summary>As written in the query.</summary>
    public override string ToString() => Field?.ToString() ?? (Wkt != null ? $"spatial.wkt({Wkt})" : $"spatial.point({Latitude}, {Longitude})");
}

/// <summary>A query shape: <c>spatial.circle(radius, lat, lng[, units])</c>, <c>spatial.wkt(text[, units])</c> or <c>spatial.point(lat, lng)</c>.</summary>
public sealed record RqlShape(string Kind, IReadOnlyList<RqlValue> Args, int Position);

/// <summary>
/// <c>startsWith(field, value)</c>, <c>endsWith</c>, <c>search(field, terms)</c>, <c>lucene(field, 'Lucene query')</c>
/// (answered as search()), <c>regex(field, pattern)</c>, <c>exists(field)</c>.
/// </summary>
public sealed record RqlMethod(string Name, RqlPath Field, RqlValue? Value, bool AllTerms = false) : RqlExpression
{
    /// <summary><c>proximity(search(field, 'a b'), n)</c>: the terms within n positions of each other, or null.</summary>
    public RqlValue? Proximity { get; init; }

    /// <summary>search() or lucene(): Lucene query syntax over the field's analyzed text.</summary>
    public bool IsSearch => Name is "search" or "lucene";
}
