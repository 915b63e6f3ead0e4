namespace RavenLite.Server.Cluster;

/// <summary>A cluster write reached a node that does not lead; <see cref="LeaderUrl"/> is where to send it (null: no leader now).</summary>
public sealed class NotLeaderException(string? leaderUrl)
    : UnavailableException(RavenExceptionTypes.NoLeader, leaderUrl == null ? "The cluster has no leader now (an election is under way, or a majority of its nodes is not reachable)." : $"This node does not lead the cluster; {leaderUrl} does.")
{
    public string? LeaderUrl { get; } = leaderUrl;
}
