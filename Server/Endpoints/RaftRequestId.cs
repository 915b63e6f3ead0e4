using RavenLite.Server.Cluster;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// The request id of a client's cluster command (docs/cluster.md "Compare-exchange"): RavenDB's clients send
/// <c>raft-request-id</c> and send it again when they retry on another node, so the command applies once; without one,
/// a new id.
/// </summary>
internal static class RaftRequestId
{
    public static string Of(HttpRequest request)
    {
        string? id = request.Query["raft-request-id"].FirstOrDefault();
        if (string.IsNullOrEmpty(id))
            return ClusterNode.NewRequestId();
        return id.Length <= 128 ? "client:" + id : throw new BadRequestException("raft-request-id is at most 128 characters.");
    }
}
