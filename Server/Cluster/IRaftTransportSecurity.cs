using DotNext.Net.Security;

namespace RavenLite.Server.Cluster;

/// <summary>
/// How this node's Raft connections are secured (docs/cluster.md "A node"): none on an unsecured server (plain TCP on
/// loopback); TLS both ways on a secured one, each node presenting its server certificate
/// (<see cref="Security.SecuredRaftTransport"/>).
/// </summary>
public interface IRaftTransportSecurity
{
    /// <summary>The TLS options of the Raft listener and of the connections to the other nodes.</summary>
    SslOptions Options();
}
