namespace RavenLite.Server.Operations;

/// <summary>
/// Server-wide long-running operations (a restore, which has no database yet): the table behind
/// <c>GET /operations/state?id=</c>. A singleton.
/// </summary>
public sealed class ServerOperations
{
    /// <summary>The operations and their states.</summary>
    public OperationsTable Table { get; } = new();
}
