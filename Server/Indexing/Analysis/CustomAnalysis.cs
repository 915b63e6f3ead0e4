using System.Collections.Concurrent;
using Lucene.Net.Analysis;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing.Analysis;

/// <summary>
/// Custom analyzers and sorters by name (RavenDB's <c>Analyzers</c> and <c>Sorters</c>): the server's (server-wide, kept
/// alike on every node through the cluster's server items) or a database's (its record), which falls back to the
/// server's. Code is compiled on first use (<see cref="CustomCodeCompiler"/>); an analyzer is one shared instance per
/// compiled type (Lucene analyzers are thread-safe), a sorter a new one per query. Thread-safe.
/// </summary>
public sealed class CustomAnalysis
{
    private static readonly ConcurrentDictionary<Type, Analyzer> Instances = new();
    private readonly Func<IReadOnlyDictionary<string, string>> _analyzers, _sorters;
    private readonly CustomAnalysis? _server;
    private readonly ConcurrentDictionary<string, string>? _ownAnalyzers, _ownSorters;

    /// <summary>The server-wide analyzers and sorters (empty until <see cref="Set"/>).</summary>
    public CustomAnalysis()
    {
        _ownAnalyzers = new(StringComparer.OrdinalIgnoreCase);
        _ownSorters = new(StringComparer.OrdinalIgnoreCase);
        _analyzers = () => _ownAnalyzers;
        _sorters = () => _ownSorters;
    }

    /// <summary>A database's: read from <paramref name="analyzers"/> and <paramref name="sorters"/> when used, else <paramref name="server"/>'s.</summary>
    public CustomAnalysis(Func<IReadOnlyDictionary<string, string>> analyzers, Func<IReadOnlyDictionary<string, string>> sorters, CustomAnalysis? server)
    {
        _analyzers = analyzers;
        _sorters = sorters;
        _server = server;
    }

    /// <summary>Server-wide: sets (or, <paramref name="code"/> null, removes) an analyzer or a sorter.</summary>
    public void Set(bool sorter, string name, string? code)
    {
        var target = (sorter ? _ownSorters : _ownAnalyzers) ?? throw new InvalidOperationException("A database's analyzers and sorters live in its record.");
        if (code == null)
            target.TryRemove(name, out _);
        else
            target[name] = code;
    }

    /// <summary>The custom analyzer <paramref name="name"/>, or null when there is none.</summary>
    public Analyzer? Analyzer(string name) =>
        _analyzers().TryGetValue(name, out var code) ? Instances.GetOrAdd(CustomCodeCompiler.Compile<Analyzer>("analyzer", name, code), CreateAnalyzer) : _server?.Analyzer(name);

    /// <summary>A new instance of the custom sorter <paramref name="name"/> for a query ordering by <paramref name="field"/>, or null when there is none.</summary>
    public CustomSorter? Sorter(string name, string field, bool reversed)
    {
        if (!_sorters().TryGetValue(name, out var code))
            return _server?.Sorter(name, field, reversed);
        var type = CustomCodeCompiler.Compile<CustomSorter>("sorter", name, code);
        if (type.GetConstructor([typeof(string), typeof(int), typeof(int), typeof(bool), typeof(List<string>)]) is { } ravenDb)
            return (CustomSorter)ravenDb.Invoke([field, int.MaxValue, 0, reversed, new List<string>()]);
        return (CustomSorter)Activator.CreateInstance(type)!;
    }

    /// <summary>Compiles the code of an analyzer or sorter being stored: a 400 when it does not compile or defines no such class.</summary>
    public static void Check(bool sorter, string name, string code)
    {
        var type = sorter ? CustomCodeCompiler.Compile<CustomSorter>("sorter", name, code) : CustomCodeCompiler.Compile<Analyzer>("analyzer", name, code);
        bool constructible = sorter
            ? type.GetConstructor(Type.EmptyTypes) != null || type.GetConstructor([typeof(string), typeof(int), typeof(int), typeof(bool), typeof(List<string>)]) != null
            : type.GetConstructor(Type.EmptyTypes) != null || type.GetConstructor([typeof(LuceneVersion)]) != null;
        if (!constructible)
            throw new BadRequestException($"The {(sorter ? "sorter" : "analyzer")} '{name}' needs a public constructor without parameters{(sorter ? " or (string fieldName, int numHits, int sortPos, bool reversed, List<string> diagnostics)" : " or (LuceneVersion)")}.");
    }

    /// <summary>The definitions of a <c>{"Analyzers": [{Name, Code}]}</c> or <c>{"Sorters": [..]}</c> body (400 when it is not one).</summary>
    public static List<(string Name, string Code)> Definitions(JsonElement body, bool sorter)
    {
        string property = sorter ? "Sorters" : "Analyzers";
        if (body.ValueKind != JsonValueKind.Object || !body.TryGetProperty(property, out var list) || list.ValueKind != JsonValueKind.Array)
            throw new BadRequestException($"The body must be {{\"{property}\": [{{\"Name\": .., \"Code\": ..}}]}}.");
        var result = new List<(string, string)>();
        foreach (var item in list.EnumerateArray())
        {
            string? Text(string pascal) => item.ValueKind == JsonValueKind.Object
                && (item.TryGetProperty(pascal, out var v) || item.TryGetProperty(char.ToLowerInvariant(pascal[0]) + pascal[1..], out v)) && v.ValueKind == JsonValueKind.String ? v.GetString() : null;
            string name = Text("Name") is { Length: > 0 } n ? n : throw new BadRequestException($"Each of {property} needs a Name.");
            string code = Text("Code") is { Length: > 0 } c ? c : throw new BadRequestException($"{(sorter ? "Sorter" : "Analyzer")} '{name}' needs its Code (C# source).");
            Check(sorter, name, code);
            result.Add((name, code));
        }
        return result;
    }

    private static Analyzer CreateAnalyzer(Type type) =>
        type.GetConstructor([typeof(LuceneVersion)]) is { } withVersion ? (Analyzer)withVersion.Invoke([LuceneVersion.LUCENE_48]) : (Analyzer)Activator.CreateInstance(type)!;
}
