using System.Collections.Concurrent;
using System.Reflection;
using Lucene.Net.Analysis;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>
/// The analyzers an index definition may name for a field (<c>"Analyzer"</c> in its field options, as
/// RavenDB): any public <see cref="Analyzer"/> of Lucene.Net or Lucene.Net.Analysis.Common with a
/// <c>(LuceneVersion)</c> or parameterless constructor, by class name (<c>EnglishAnalyzer</c>) or full
/// name (<c>Lucene.Net.Analysis.En.EnglishAnalyzer</c>, with or without <c>, assembly</c>; Lucene 3's full names such as
/// <c>Lucene.Net.Analysis.WhitespaceAnalyzer</c> by their class name), any casing.
/// One shared instance per analyzer (Lucene analyzers are thread-safe). Thread-safe.
/// </summary>
internal static class AnalyzerCatalog
{
    private static readonly Lazy<Dictionary<string, Type>> Types = new(LoadTypes);
    private static readonly ConcurrentDictionary<Type, Analyzer> Instances = new();

    /// <summary>The analyzer named <paramref name="name"/>, or null when there is no such analyzer.</summary>
    public static Analyzer? Resolve(string name)
    {
        string key = name.Split(',')[0].Trim();
        // Lucene 3 names (Lucene.Net.Analysis.WhitespaceAnalyzer, what RavenDB's clients send) moved to sub-namespaces
        // in Lucene.Net 4.8 (Lucene.Net.Analysis.Core.WhitespaceAnalyzer): a full name not found is looked up by its class name.
        if (!Types.Value.TryGetValue(key, out var type) && !(key.Contains('.', StringComparison.Ordinal) && Types.Value.TryGetValue(key[(key.LastIndexOf('.') + 1)..], out type)))
            return null;
        return Instances.GetOrAdd(type, Create);
    }

    private static Analyzer Create(Type type)
    {
        if (type.GetConstructor([typeof(LuceneVersion)]) is { } withVersion)
            return (Analyzer)withVersion.Invoke([LuceneVersion.LUCENE_48]);
        return (Analyzer)Activator.CreateInstance(type)!;
    }

    private static Dictionary<string, Type> LoadTypes()
    {
        var result = new Dictionary<string, Type>(StringComparer.OrdinalIgnoreCase);
        Assembly[] assemblies = [typeof(Analyzer).Assembly, typeof(Lucene.Net.Analysis.Core.KeywordAnalyzer).Assembly];
        foreach (var type in assemblies.SelectMany(a => a.GetExportedTypes()))
        {
            if (type.IsAbstract || !typeof(Analyzer).IsAssignableFrom(type) || type.ContainsGenericParameters)
                continue;
            if (type.GetConstructor([typeof(LuceneVersion)]) == null && type.GetConstructor(Type.EmptyTypes) == null)
                continue;
            result[type.FullName!] = type;
            result.TryAdd(type.Name, type); // a short name shared by two packages keeps the first
        }
        return result;
    }
}
