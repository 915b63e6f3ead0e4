namespace RavenLite.Server.Replication;

/// <summary>The replication connection's operation name and version in the TCP header (docs/replication.md "Connection").</summary>
public static class ReplicationProtocol
{
    /// <summary>The header's <c>Operation</c>.</summary>
    public const string Operation = "Replication";

    /// <summary>The one version spoken: the header's <c>OperationVersion</c>.</summary>
    public const int Version = 1;
}
