namespace RavenLite.Client.Operations;

/// <summary>Options of one index field.</summary>
public sealed class IndexFieldOptions
{
    /// <summary><c>Search</c> (analyzed full-text), <c>Exact</c>, <c>No</c>, or null for the default.</summary>
    public string? Indexing { get; init; }

    /// <summary>The analyzer of a Search field (a Lucene.Net analyzer's name), or null.</summary>
    public string? Analyzer { get; init; }

    /// <summary><c>Yes</c> to store the value in the index, or null.</summary>
    public string? Storage { get; init; }
}
