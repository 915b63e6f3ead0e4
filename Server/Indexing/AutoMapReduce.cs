using Microsoft.CodeAnalysis.CSharp;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Auto map-reduce indexes for dynamic group by queries (<c>from Orders group by Company select key() as Company,
/// count(), sum(Freight)</c>), as RavenDB creates them: one per collection, group-by fields and summed fields, named
/// <c>Auto/Orders/ByCountAndFreightReducedByCompany</c>. The index is a C# map-reduce definition written here and
/// compiled like any other: the map outputs the group-by values, <c>Count = 1</c> and the summed values (over one
/// array's items when a path goes through one: <c>group by Lines[].Product</c>); the reduce groups by the group-by
/// fields and adds up the rest.
/// </summary>
public static class AutoMapReduce
{
    /// <summary>The reduce result field of <c>count()</c>.</summary>
    public const string CountField = "Count";

    private const string ArrayPrefix = "array(";

    /// <summary>The group-by path of <c>array(path)</c>: its values, all of them, are one key.</summary>
    public static string ArrayKey(string path) => ArrayPrefix + path + ")";

    /// <summary>The document path of a group-by path (<c>array(Lines[].Product)</c> → <c>Lines[].Product</c>).</summary>
    public static string InnerPath(string groupBy) => IsArrayKey(groupBy) ? groupBy[ArrayPrefix.Length..^1] : groupBy;

    private static bool IsArrayKey(string groupBy) => groupBy.StartsWith(ArrayPrefix, StringComparison.Ordinal) && groupBy.EndsWith(')');

    /// <summary>The reduce result field of a document path: <c>ShipTo.City</c> → <c>ShipTo_City</c>, <c>Lines[].Product</c> → <c>Lines_Product</c>.</summary>
    public static string Field(string path)
    {
        var sb = new StringBuilder();
        foreach (char c in InnerPath(path).Replace("[]", "", StringComparison.Ordinal))
            sb.Append(char.IsLetterOrDigit(c) || c == '_' ? c : '_');
        if (sb.Length == 0 || char.IsDigit(sb[0]))
            sb.Insert(0, '_');
        return sb.ToString();
    }

    /// <summary>The name of the auto map-reduce index.</summary>
    public static string Name(string collection, IReadOnlyList<string> groupBy, IReadOnlyList<string> sums) =>
        $"Auto/{collection}/By{string.Join("And", new[] { CountField }.Concat(sums.Select(Field)))}ReducedBy{string.Join("And", groupBy.Select(g => IsArrayKey(g) ? $"Array({Field(g)})" : Field(g)))}";

    /// <summary>The definition of the auto map-reduce index (400 when the paths go through more than one array).</summary>
    public static IndexDefinition Definition(string collection, IReadOnlyList<string> groupBy, IReadOnlyList<string> sums)
    {
        var all = groupBy.Where(g => !IsArrayKey(g)).Concat(sums).ToList();
        if (all.Any(p => p.IndexOf("[]", StringComparison.Ordinal) != p.LastIndexOf("[]", StringComparison.Ordinal)))
            throw new InvalidQueryException("group by and sum() go through one array at most: group by Lines[].Product.");
        var arrays = all.Where(p => p.Contains("[]", StringComparison.Ordinal)).Select(p => p[..p.IndexOf("[]", StringComparison.Ordinal)]).Distinct(StringComparer.Ordinal).ToList();
        if (arrays.Count > 1)
            throw new InvalidQueryException($"group by and sum() go through one array at most, not {string.Join(" and ", arrays.Select(a => a + "[]"))}.");
        string? array = arrays.FirstOrDefault();
        string Access(string path)
        {
            if (IsArrayKey(path))
                return ArrayValues("d", InnerPath(path));
            if (array != null && path.StartsWith(array + "[]", StringComparison.Ordinal))
                return "x" + Indexer(path[(array.Length + 2)..]);
            return "d" + Indexer(path);
        }
        var members = groupBy.Select(g => $"{Name(g)} = {Access(g)}").Append($"{CountField} = 1").Concat(sums.Select(s => $"{Name(s)} = {Access(s)}"));
        string map = $"from d in docs[{Literal(collection)}] {(array != null ? $"from x in d{Indexer(array)} " : "")}select new {{ {string.Join(", ", members)} }}";
        var outputs = groupBy.Select(g => $"{Name(g)} = g.Key.{Name(g)}").Append($"{CountField} = g.Sum(v => v.{CountField})").Concat(sums.Select(s => $"{Name(s)} = g.Sum(v => v.{Name(s)})"));
        string reduce = $"from r in results group r by new {{ {string.Join(", ", groupBy.Select(g => "r." + Name(g)))} }} into g select new {{ {string.Join(", ", outputs)} }}";
        return new IndexDefinition
        {
            Name = Name(collection, groupBy, sums),
            Type = "AutoMapReduce",
            Collection = collection,
            Maps = [map],
            Reduce = reduce,
            AutoGroupBy = [.. groupBy],
            AutoSums = [.. sums],
        };
    }

    /// <summary>
    /// A path's field as a C# identifier in the generated code: escaped with <c>@</c> when it is a keyword (<c>group by
    /// group</c>, <c>select</c>, <c>from</c>), which leaves the member's name as it is.
    /// </summary>
    private static string Name(string path)
    {
        string field = Field(path);
        return SyntaxFacts.GetKeywordKind(field) != SyntaxKind.None || SyntaxFacts.GetContextualKeywordKind(field) != SyntaxKind.None ? "@" + field : field;
    }

    /// <summary>Every value a path reaches, as one list (<c>d["Lines"].Select(v0 =&gt; v0["Product"])</c>), for an <c>array()</c> key.</summary>
    private static string ArrayValues(string root, string path)
    {
        int at = path.IndexOf("[]", StringComparison.Ordinal);
        if (at < 0)
            return root + Indexer(path);
        string rest = path[(at + 2)..].TrimStart('.');
        string variable = "v" + root.Length.ToString(System.Globalization.CultureInfo.InvariantCulture);
        string items = root + Indexer(path[..at]);
        return rest.Length == 0 ? items : $"{items}.Select({variable} => {ArrayValues(variable, rest)})";
    }

    private static string Indexer(string path) =>
        string.Concat(path.Split('.', StringSplitOptions.RemoveEmptyEntries).Select(p => $"[{Literal(p.Replace("[]", "", StringComparison.Ordinal))}]"));

    private static string Literal(string s) => SymbolDisplay.FormatLiteral(s, quote: true);
}
