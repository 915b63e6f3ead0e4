namespace RavenLite.Client.Operations;

/// <summary>A static index: its name, map(s) (C# LINQ <c>from u in docs.Users select new { u.Name }</c> or JavaScript <c>map('Users', u => ({ Name: u.Name }))</c>) and per-field options.</summary>
public sealed class IndexDefinition
{
    /// <summary>Index name, for example <c>Users/ByName</c>.</summary>
    public required string Name { get; init; }

    /// <summary>Map functions.</summary>
    public required IReadOnlyList<string> Maps { get; init; }

    /// <summary>Optional reduce function.</summary>
    public string? Reduce { get; init; }

    /// <summary>Field options by field name, for example <c>Indexing = "Search"</c> for full-text.</summary>
    public IReadOnlyDictionary<string, IndexFieldOptions> Fields { get; init; } = new Dictionary<string, IndexFieldOptions>();

    /// <summary>Code the maps call (C# classes or JavaScript functions), by name.</summary>
    public IReadOnlyDictionary<string, string> AdditionalSources { get; init; } = new Dictionary<string, string>();

    /// <summary>Map-reduce: the collection the reduce results are also written to as documents.</summary>
    public string? OutputReduceToCollection { get; init; }

    /// <summary>With an output collection: the id pattern of reference documents listing the outputs, e.g. <c>reports/{Day:yyyy-MM}</c>.</summary>
    public string? PatternForOutputReduceToCollectionReferences { get; init; }

    /// <summary>The collection of those reference documents (default <c>{OutputReduceToCollection}/References</c>).</summary>
    public string? PatternReferencesCollectionName { get; init; }

    /// <summary>A JavaScript index (else decided from the maps: C# ones start with <c>from</c> or <c>docs</c>).</summary>
    public bool? JavaScript { get; init; }
}
