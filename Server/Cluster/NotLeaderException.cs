namespace RavenLite.Server.Cluster;

/// <summary>
/// A cluster command could not be committed through this node: it knows no leader (an election is under way, or a
/// majority of the nodes is not reachable — the minority side of a partition), or the leader refused or could not be
/// reached. RavenDB's <c>NoLeaderException</c>, 503: the clients try another node.
/// </summary>
public sealed class NotLeaderException(string? leaderUrl, string? message = null)
    : UnavailableException(RavenExceptionTypes.NoLeader, message ?? (leaderUrl == null
        ? "There is no leader, cannot accept commands: an election is under way, or a majority of the cluster's nodes is not reachable."
        : $"This node does not lead the cluster; {leaderUrl} does."))
{
    public string? LeaderUrl { get; } = leaderUrl;
}
