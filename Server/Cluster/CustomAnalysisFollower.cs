using RavenLite.Server.Indexing.Analysis;

namespace RavenLite.Server.Cluster;

/// <summary>
/// Server-wide custom analyzers and sorters as cluster items (<c>analysis/analyzers/{name}</c>,
/// <c>analysis/sorters/{name}</c>, value <c>{"Code": ..}</c>): kept in this node's <see cref="CustomAnalysis"/>.
/// </summary>
public sealed class CustomAnalysisFollower(CustomAnalysis server) : IServerItemFollower
{
    /// <summary>The prefix of the items.</summary>
    public const string KeyPrefix = "analysis/";

    /// <summary>The item key of a server-wide analyzer or sorter.</summary>
    public static string Key(bool sorter, string name) => KeyPrefix + (sorter ? "sorters/" : "analyzers/") + name.ToLowerInvariant();

    public string Prefix => KeyPrefix;

    public void Apply(string key, string? json)
    {
        bool sorter = key.StartsWith(KeyPrefix + "sorters/", StringComparison.Ordinal);
        if (json == null)
        {
            server.Set(sorter, key[(key.LastIndexOf('/') + 1)..], null);
            return;
        }
        using var parsed = JsonDocument.Parse(json);
        server.Set(sorter, parsed.RootElement.GetProperty("Name").GetString()!, parsed.RootElement.GetProperty("Code").GetString());
    }
}
