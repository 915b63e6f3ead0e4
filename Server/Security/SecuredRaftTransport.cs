using System.Net.Security;
using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using DotNext.Net.Security;

namespace RavenLite.Server.Security;

/// <summary>
/// Raft over TLS on a secured server (docs/cluster.md "A node"): the node listens and connects with its server
/// certificate, requires the other side's, and accepts a peer that presents a certificate of a node of the cluster —
/// this server's own (the nodes of a secured cluster share one server certificate), one of its identity from its issuer
/// (a replacement on its way to every node), or one registered here with ClusterAdmin clearance.
/// </summary>
public sealed class SecuredRaftTransport(ServerCertificate server, CertificateRegistry registry) : Cluster.IRaftTransportSecurity
{
    public SslOptions Options()
    {
        var options = new SslOptions();
        options.ServerOptions.ServerCertificateSelectionCallback = (_, _) => server.Current;
        options.ServerOptions.ClientCertificateRequired = true;
        options.ServerOptions.EnabledSslProtocols = SslProtocols.Tls12 | SslProtocols.Tls13;
        options.ServerOptions.RemoteCertificateValidationCallback = (_, presented, _, _) => IsNode(presented);
        options.ClientOptions.LocalCertificateSelectionCallback = (_, _, _, _, _) => server.Current;
        options.ClientOptions.EnabledSslProtocols = SslProtocols.Tls12 | SslProtocols.Tls13;
        options.ClientOptions.RemoteCertificateValidationCallback = (_, presented, _, _) => IsNode(presented);
        return options;
    }

    private bool IsNode(X509Certificate? presented)
    {
        if (presented == null)
            return false;
        using var certificate = X509CertificateLoader.LoadCertificate(presented.GetRawCertData());
        if (registry.Find(certificate.Thumbprint) is { SecurityClearance: SecurityClearance.ClusterAdmin })
            return true;
        // A replacement of the server certificate on its way through the cluster: trusted by its chain and identity.
        return CertificateTrust.Chains(certificate, registry.TrustedIssuers, forClientAuthentication: true)
            && registry.Find(certificate) is { SecurityClearance: SecurityClearance.ClusterAdmin };
    }
}
