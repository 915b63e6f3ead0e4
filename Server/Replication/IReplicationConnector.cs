using System.Net.Sockets;

namespace RavenLite.Server.Replication;

/// <summary>
/// How a sender reaches a destination (docs/replication.md "Connection"): the HTTP client that asks its URLs for
/// <c>/info/tcp</c>, and the stream over an opened TCP connection. An unsecured server uses plain TCP
/// (<see cref="PlainReplicationConnector"/>); a secured one TLS with its server certificate as the client certificate,
/// so the destination's permissions for that certificate decide.
/// </summary>
public interface IReplicationConnector
{
    /// <summary>The client for <c>GET {url}/info/tcp</c> (shared; one per server).</summary>
    HttpClient Http { get; }

    /// <summary>
    /// The stream of a connection to <paramref name="host"/>; <paramref name="certificate"/> is the certificate the
    /// destination's <c>/info/tcp</c> named (base64 DER, null on an unsecured destination), which a TLS connection must present.
    /// </summary>
    Task<Stream> OpenAsync(TcpClient client, string host, string? certificate, CancellationToken cancellation);
}

/// <summary>Plain TCP and HTTP: what an unsecured server replicates over.</summary>
public sealed class PlainReplicationConnector : IReplicationConnector
{
    /// <inheritdoc />
    public HttpClient Http { get; } = new(new SocketsHttpHandler { ConnectTimeout = TimeSpan.FromSeconds(5) }) { Timeout = TimeSpan.FromSeconds(10) };

    /// <inheritdoc />
    public Task<Stream> OpenAsync(TcpClient client, string host, string? certificate, CancellationToken cancellation)
    {
        ArgumentNullException.ThrowIfNull(client);
        if (certificate != null)
            throw new IOException("The destination is secured (TLS), and this server is not: it has no certificate to present. Replicate between secured servers.");
        return Task.FromResult<Stream>(client.GetStream());
    }
}
