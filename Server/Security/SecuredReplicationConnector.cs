using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using RavenLite.Server.Replication;

namespace RavenLite.Server.Security;

/// <summary>
/// Replication from a secured server (docs/replication.md "Connection", docs/security.md): HTTPS and TLS with this
/// server's certificate as the client certificate. The destination's certificate is accepted when it chains to a
/// trusted root, when it is registered here, or when it is this server's own (a database on the same server); the TCP
/// connection must then present exactly the certificate the destination's <c>/info/tcp</c> named.
/// </summary>
public sealed class SecuredReplicationConnector : IReplicationConnector, IDisposable
{
    private readonly ServerCertificate _server;
    private readonly CertificateRegistry _registry;

    public SecuredReplicationConnector(ServerCertificate server, CertificateRegistry registry)
    {
        _server = server;
        _registry = registry;
        var handler = new SocketsHttpHandler { ConnectTimeout = TimeSpan.FromSeconds(5) };
        handler.SslOptions.LocalCertificateSelectionCallback = (_, _, _, _, _) => _server.Current;
        handler.SslOptions.RemoteCertificateValidationCallback = (_, certificate, _, errors) =>
            Trusted(certificate as X509Certificate2 ?? (certificate == null ? null : X509CertificateLoader.LoadCertificate(certificate.GetRawCertData())), errors);
        Http = new HttpClient(handler) { Timeout = TimeSpan.FromSeconds(10) };
    }

    /// <inheritdoc />
    public HttpClient Http { get; }

    /// <inheritdoc />
    public async Task<Stream> OpenAsync(TcpClient client, string host, string? certificate, CancellationToken cancellation)
    {
        ArgumentNullException.ThrowIfNull(client);
        if (certificate == null)
            throw new IOException("The destination's /info/tcp names no certificate: it is not secured, and this server replicates over TLS only.");
        byte[] expected = Convert.FromBase64String(certificate);
        var ssl = new SslStream(client.GetStream(), leaveInnerStreamOpen: false);
        try
        {
            await ssl.AuthenticateAsClientAsync(new SslClientAuthenticationOptions
            {
                TargetHost = host,
                ClientCertificates = [_server.Current],
                EnabledSslProtocols = SslProtocols.Tls12 | SslProtocols.Tls13,
                RemoteCertificateValidationCallback = (_, presented, _, _) => presented != null && presented.GetRawCertData().AsSpan().SequenceEqual(expected),
            }, cancellation).ConfigureAwait(false);
            return ssl;
        }
        catch
        {
            await ssl.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    private bool Trusted(X509Certificate2? certificate, SslPolicyErrors errors)
    {
        if (certificate == null)
            return false;
        if (errors == SslPolicyErrors.None || certificate.Thumbprint == _server.Current.Thumbprint)
            return true;
        return _registry.Registered(certificate.Thumbprint) != null;
    }

    public void Dispose() => Http.Dispose();
}
