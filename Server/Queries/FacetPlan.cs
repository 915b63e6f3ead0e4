namespace RavenLite.Server.Queries;

/// <summary>
/// One facet of a facet query, resolved: setup documents expanded, range texts parsed, parameters and
/// options read. <see cref="FacetAccumulator"/> computes it over the query's matches.
/// Semantics (as RavenDB): a field facet counts the matches per value of the field (the index term: lower-cased
/// text unless the field is Exact, the words of a Search field, numbers and booleans as text; null and missing
/// values are not counted); a range facet counts the matches with a value in each range, listed in the
/// order given (empty ranges too); a facet with neither counts all matches under <see cref="AllResults"/>.
/// Aggregations add sum/min/max/average of a numeric field per value or range, one facet value per
/// aggregated field (named by its alias, else the field).
/// </summary>
internal sealed class FacetPlan
{
    /// <summary>RavenDB's name of a facet over all results.</summary>
    public const string AllResults = "@AllResults";

    public required string Name { get; init; }

    /// <summary>The field of a field facet; null for ranges and all-results.</summary>
    public RqlPath? Field { get; init; }

    /// <summary>Range conditions (all on <see cref="RangeField"/>) and the text each value is named by.</summary>
    public IReadOnlyList<(RqlExpression Condition, string Text)> Ranges { get; init; } = [];

    public RqlPath? RangeField { get; init; }

    /// <summary>Aggregated fields (by field and output name), each with the operations asked for it.</summary>
    public IReadOnlyList<FacetAggregationPlan> Aggregations { get; init; } = [];

    /// <summary>Per aggregation: the index lacks its field, so each match counts 0 (set by <see cref="FacetAccumulator"/>).</summary>
    public bool[] ZeroWhenMissing { get; set; } = [];

    public FacetOptionsPlan Options { get; init; } = FacetOptionsPlan.Default;

    /// <summary>Fields the facet reads (for choosing and checking the index).</summary>
    public IEnumerable<RqlPath> Fields()
    {
        if (Field != null)
            yield return Field;
        if (RangeField != null)
            yield return RangeField;
        foreach (var a in Aggregations)
            yield return a.Field;
    }

    /// <summary>
    /// Resolves the query's facets. <paramref name="loadSetup"/> reads a facet setup document by id (null when
    /// missing). Every problem is a 400 naming it.
    /// </summary>
    public static List<FacetPlan> Resolve(IReadOnlyList<RqlFacet> facets, Func<RqlValue, JsonElement> resolve, Func<string, JsonElement?> loadSetup)
    {
        var plans = new List<FacetPlan>();
        foreach (var f in facets)
        {
            if (f.SetupDocumentId is { } setupId)
            {
                if (setupId.StartsWith('$'))
                {
                    var p = resolve(new RqlValue(null, setupId[1..], f.Position));
                    if (p.ValueKind != JsonValueKind.String)
                        throw new InvalidQueryException($"Invalid query at position {f.Position}: facet(id(..)) needs the id of a facet setup document.");
                    setupId = p.GetString()!;
                }
                var setup = loadSetup(setupId) ?? throw new InvalidQueryException($"Invalid query at position {f.Position}: the facet setup document '{setupId}' does not exist.");
                plans.AddRange(FromSetup(setupId, setup, resolve));
                continue;
            }
            var aggregations = Group(f.Aggregations.Select(a => (a.Operation, a.Field, a.Alias)));
            var options = f.Options == null ? FacetOptionsPlan.Default : FacetOptionsPlan.Read(resolve(f.Options), f.Options.Position);
            if (f.Ranges.Count > 0)
                plans.Add(RangePlan(f.Ranges, f.Alias, aggregations, resolve, f.Position));
            else
                plans.Add(new FacetPlan { Name = f.Alias ?? f.Field?.ToString() ?? AllResults, Field = f.Field, Aggregations = aggregations, Options = f.Field == null ? FacetOptionsPlan.Default : options });
        }
        var duplicate = plans.GroupBy(p => p.Name, StringComparer.Ordinal).FirstOrDefault(g => g.Count() > 1);
        if (duplicate != null)
            throw new InvalidQueryException($"Two facets are named '{duplicate.Key}'; give one of them another name with 'as'.");
        return plans;
    }

    private static FacetPlan RangePlan(IReadOnlyList<RqlExpression> ranges, string? alias, IReadOnlyList<FacetAggregationPlan> aggregations, Func<RqlValue, JsonElement> resolve, int position)
    {
        RqlPath? field = null;
        var list = new List<(RqlExpression, string)>();
        foreach (var r in ranges)
        {
            foreach (var path in RangeFields(r, position))
            {
                if (field != null && field.Text != path.Text)
                    throw new InvalidQueryException($"Invalid query at position {position}: facet ranges must be on one field, but they use '{field}' and '{path}'.");
                field = path;
            }
            list.Add((r, RangeText(r, resolve)));
        }
        return new FacetPlan { Name = alias ?? field!.Text, Ranges = list, RangeField = field, Aggregations = aggregations };
    }

    /// <summary>The fields a range condition reads; 400 for anything but comparisons, between and and.</summary>
    private static IEnumerable<RqlPath> RangeFields(RqlExpression e, int position) => e switch
    {
        RqlCompare { Op: "<" or "<=" or ">" or ">=" } c => [c.Field],
        RqlBetween b => [b.Field],
        RqlBinary { IsAnd: true } b => RangeFields(b.Left, position).Concat(RangeFields(b.Right, position)),
        _ => throw new InvalidQueryException($"Invalid query at position {position}: a facet range is a comparison (<, <=, >, >=), between, or two of them joined by 'and'."),
    };

    /// <summary>The range as RavenDB names its facet value: the condition's text with parameters replaced by their values.</summary>
    private static string RangeText(RqlExpression e, Func<RqlValue, JsonElement> resolve)
    {
        string V(RqlValue v)
        {
            var x = resolve(v);
            return x.ValueKind == JsonValueKind.String ? x.GetString()! : x.GetRawText();
        }
        return e switch
        {
            RqlCompare c => $"{c.Field} {c.Op} {V(c.Value)}",
            RqlBetween b => $"{b.Field} between {V(b.Low)} and {V(b.High)}",
            RqlBinary b => $"{RangeText(b.Left, resolve)} and {RangeText(b.Right, resolve)}",
            _ => "",
        };
    }

    /// <summary>Aggregations grouped per (field, output name), in first-appearance order.</summary>
    private static List<FacetAggregationPlan> Group(IEnumerable<(string Operation, RqlPath Field, string? Alias)> aggregations)
    {
        var result = new List<FacetAggregationPlan>();
        foreach (var (op, field, alias) in aggregations)
        {
            string name = alias ?? field.Text;
            int at = result.FindIndex(a => a.Field.Text == field.Text && a.Name == name);
            if (at < 0)
            {
                result.Add(new FacetAggregationPlan(field, name, []));
                at = result.Count - 1;
            }
            result[at].Operations.Add(op);
        }
        return result;
    }

    /// <summary>
    /// The facets of a facet setup document, as RavenDB's clients store it (<c>Facets</c>: FieldName,
    /// DisplayFieldName, Options, Aggregations; <c>RangeFacets</c>: Ranges, DisplayFieldName, Aggregations);
    /// property names in any case (the Node client stores them camelCased).
    /// </summary>
    private static List<FacetPlan> FromSetup(string id, JsonElement setup, Func<RqlValue, JsonElement> resolve)
    {
        string Where(string what) => $"The facet setup document '{id}' {what}";
        if (setup.ValueKind != JsonValueKind.Object)
            throw new InvalidQueryException(Where("is not an object."));
        var result = new List<FacetPlan>();
        if (JsonPaths.PropertyIgnoringCase(setup, "Facets") is { ValueKind: JsonValueKind.Array } facets)
        {
            foreach (var f in facets.EnumerateArray())
            {
                string? field = JsonPaths.PropertyIgnoringCase(f, "FieldName") is { ValueKind: JsonValueKind.String } fn ? fn.GetString() : null;
                string? display = JsonPaths.PropertyIgnoringCase(f, "DisplayFieldName") is { ValueKind: JsonValueKind.String } dn ? dn.GetString() : null;
                var path = field == null ? null : PathOf(field);
                var options = JsonPaths.PropertyIgnoringCase(f, "Options") is { ValueKind: JsonValueKind.Object } o ? FacetOptionsPlan.Read(o, 0) : FacetOptionsPlan.Default;
                result.Add(new FacetPlan { Name = display ?? field ?? AllResults, Field = path, Aggregations = SetupAggregations(f, Where), Options = options });
            }
        }
        if (JsonPaths.PropertyIgnoringCase(setup, "RangeFacets") is { ValueKind: JsonValueKind.Array } rangeFacets)
        {
            foreach (var f in rangeFacets.EnumerateArray())
            {
                if (JsonPaths.PropertyIgnoringCase(f, "Ranges") is not { ValueKind: JsonValueKind.Array } ranges || ranges.GetArrayLength() == 0)
                    throw new InvalidQueryException(Where("has a range facet without Ranges."));
                var parsed = new List<RqlExpression>();
                foreach (var r in ranges.EnumerateArray())
                {
                    if (r.ValueKind != JsonValueKind.String)
                        throw new InvalidQueryException(Where("has a range that is not text."));
                    try
                    {
                        parsed.Add(RqlParser.ParseCondition(r.GetString()!));
                    }
                    catch (DomainException e)
                    {
                        throw new InvalidQueryException(Where($"has a range that does not parse: '{r.GetString()}': {e.Message}"));
                    }
                }
                string? display = JsonPaths.PropertyIgnoringCase(f, "DisplayFieldName") is { ValueKind: JsonValueKind.String } dn ? dn.GetString() : null;
                result.Add(RangePlan(parsed, display, SetupAggregations(f, Where), resolve, 0));
            }
        }
        return result;
    }

    private static List<FacetAggregationPlan> SetupAggregations(JsonElement facet, Func<string, string> where)
    {
        var list = new List<(string, RqlPath, string?)>();
        if (JsonPaths.PropertyIgnoringCase(facet, "Aggregations") is not { ValueKind: JsonValueKind.Object } aggregations)
            return [];
        foreach (var kind in aggregations.EnumerateObject())
        {
            string op = kind.Name.ToLowerInvariant() switch
            {
                "sum" => "sum",
                "min" => "min",
                "max" => "max",
                "average" => "avg",
                _ => throw new InvalidQueryException(where($"has an unknown aggregation '{kind.Name}' (Sum, Min, Max, Average).")),
            };
            if (kind.Value.ValueKind != JsonValueKind.Array)
                continue;
            foreach (var on in kind.Value.EnumerateArray())
            {
                string? name = on.ValueKind == JsonValueKind.String ? on.GetString() : JsonPaths.PropertyIgnoringCase(on, "Name") is { ValueKind: JsonValueKind.String } n ? n.GetString() : null;
                if (name == null)
                    throw new InvalidQueryException(where($"has a {kind.Name} aggregation without a field name."));
                string? display = on.ValueKind == JsonValueKind.Object && JsonPaths.PropertyIgnoringCase(on, "DisplayName") is { ValueKind: JsonValueKind.String } d ? d.GetString() : null;
                list.Add((op, PathOf(name), display));
            }
        }
        return Group(list);
    }

    private static RqlPath PathOf(string field) => new(field.Split('.'), false);

}

/// <summary>A facet's aggregated field, its output name and its operations (sum, min, max, avg).</summary>
internal sealed record FacetAggregationPlan(RqlPath Field, string Name, HashSet<string> Operations);

/// <summary>RavenDB's FacetOptions: value order, paging, and whether the terms after the page are listed.</summary>
internal sealed record FacetOptionsPlan(string TermSortMode, bool IncludeRemainingTerms, int Start, int PageSize)
{
    public static readonly FacetOptionsPlan Default = new("ValueAsc", false, 0, int.MaxValue);

    public static FacetOptionsPlan Read(JsonElement o, int position)
    {
        if (o.ValueKind is JsonValueKind.Null or JsonValueKind.Undefined)
            return Default;
        if (o.ValueKind != JsonValueKind.Object)
            throw new InvalidQueryException($"Invalid query at position {position}: facet options must be an object (TermSortMode, IncludeRemainingTerms, Start, PageSize).");
        string sort = JsonPaths.PropertyIgnoringCase(o, "TermSortMode") is { ValueKind: JsonValueKind.String } s ? s.GetString()! : "ValueAsc";
        if (sort is not ("ValueAsc" or "ValueDesc" or "CountAsc" or "CountDesc"))
            throw new InvalidQueryException($"Invalid query at position {position}: unknown facet TermSortMode '{sort}' (ValueAsc, ValueDesc, CountAsc, CountDesc).");
        bool remaining = JsonPaths.PropertyIgnoringCase(o, "IncludeRemainingTerms") is { ValueKind: JsonValueKind.True };
        int start = Int(JsonPaths.PropertyIgnoringCase(o, "Start"), 0, "Start", position);
        int pageSize = Int(JsonPaths.PropertyIgnoringCase(o, "PageSize"), int.MaxValue, "PageSize", position);
        return new FacetOptionsPlan(sort, remaining, start, pageSize);
    }

    private static int Int(JsonElement? v, int fallback, string name, int position)
    {
        if (v is not { } x || x.ValueKind == JsonValueKind.Null)
            return fallback;
        if (x.ValueKind == JsonValueKind.Number && x.TryGetDouble(out double d) && d >= 0)
            return (int)Math.Min(d, int.MaxValue);
        throw new InvalidQueryException($"Invalid query at position {position}: facet option {name} must be a number of 0 or more, got {x.GetRawText().ToString(CultureInfo.InvariantCulture)}.");
    }
}
