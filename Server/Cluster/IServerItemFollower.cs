namespace RavenLite.Server.Cluster;

/// <summary>
/// Keeps one kind of server-wide item (docs/cluster.md "Server-wide state") in line on this node: <see cref="ServerItems"/>
/// hands it every item whose key starts with <see cref="Prefix"/> that changed since it last did, in key order. Apply
/// must be idempotent: after a restart every item is handed again.
/// </summary>
public interface IServerItemFollower
{
    /// <summary>The keys this follower keeps, e.g. <c>certificates/</c>.</summary>
    string Prefix { get; }

    /// <summary>Brings this node's copy of item <paramref name="key"/> in line: <paramref name="json"/> its value, null once deleted.</summary>
    void Apply(string key, string? json);
}
