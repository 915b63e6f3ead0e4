using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Logging;
using RavenLite.Server.Formatting;
using RavenLite.Server.Subscriptions;

namespace RavenLite.Server.Tcp;

/// <summary>
/// The TCP port RavenDB's clients open data subscription workers on (the port replication will share) (they learn it from <c>GET /info/tcp</c>). Each
/// connection starts with RavenDB's negotiation: the client sends <c>{DatabaseName, Operation, OperationVersion}</c>
/// and the server answers <c>{Status, Version, LicensedFeatures}</c> — this server speaks the Subscription operation
/// at version 53000 (and the older 51000, 50000, 41400, 40) without TCP compression; other operations and versions
/// are answered as RavenDB answers them (a version to retry with, or -1 when out of range). Then the worker's options
/// and the <see cref="SubscriptionConnection"/> protocol follow. Listens on the host of ServerUrl, port
/// <see cref="ServerOptions.TcpPort"/> (0: a free one). On a secured server every connection is TLS with a client
/// certificate (the server certificate is the one <c>/info/tcp</c> names), and the header is answered
/// <c>AuthorizationFailed</c> unless <see cref="Security.AccessPolicy"/> gives the certificate read access to the database.
/// </summary>
public sealed class TcpServer(ServerOptions options, DatabaseRegistry registry, IServiceProvider services, ILogger<TcpServer> logger) : BackgroundService
{
    private static readonly int[] Versions = [53_000, 51_000, 50_000, 41_400, 40];
    private TcpListener? _listener;
    private readonly TaskCompletionSource<int> _port = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>The port listened on, once listening.</summary>
    public Task<int> Port => _port.Task;

    /// <inheritdoc />
    public override Task StartAsync(CancellationToken cancellationToken)
    {
        var host = new Uri(options.ServerUrl).Host.Trim('[', ']');
        var address = host == "localhost" ? IPAddress.Loopback : IPAddress.TryParse(host, out var ip) ? ip : IPAddress.Loopback;
        _listener = new TcpListener(address, options.TcpPort);
        _listener.Start();
        _port.TrySetResult(((IPEndPoint)_listener.LocalEndpoint).Port);
        return base.StartAsync(cancellationToken);
    }

    /// <inheritdoc />
    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        var listener = _listener!;
        using var registration = stoppingToken.Register(listener.Stop);
        while (!stoppingToken.IsCancellationRequested)
        {
            TcpClient client;
            try
            {
                client = await listener.AcceptTcpClientAsync(stoppingToken).ConfigureAwait(false);
            }
            catch (Exception e) when (e is OperationCanceledException or SocketException or ObjectDisposedException)
            {
                return;
            }
            _ = Task.Run(() => ServeAsync(client, stoppingToken), CancellationToken.None);
        }
    }

    // Kept whole: one connection's negotiation (TLS, header, version, authorization) before it is handed to its
    // protocol; each refusal answers in RavenDB's shape and closes.
    private async Task ServeAsync(TcpClient client, CancellationToken stopping)
    {
        using (client)
        {
            client.NoDelay = true;
            Stream stream = client.GetStream();
            Database? db = null;
            try
            {
                var access = services.GetService<Security.AccessPolicy>();
                X509Certificate2? clientCertificate = null;
                if (access != null)
                {
                    var ssl = new SslStream(stream, leaveInnerStreamOpen: false);
                    stream = ssl;
#pragma warning disable CA5359 // the client certificate is validated by AccessPolicy.CheckConnection before any data flows
                    await ssl.AuthenticateAsServerAsync(new SslServerAuthenticationOptions
                    {
                        ServerCertificateContext = services.GetRequiredService<Security.ServerCertificate>().Context,
                        ClientCertificateRequired = true,
                        RemoteCertificateValidationCallback = (_, _, _, _) => true, // judged by the access policy below
                        EnabledSslProtocols = SslProtocols.Tls12 | SslProtocols.Tls13,
                    }, stopping).WaitAsync(TimeSpan.FromSeconds(10), stopping).ConfigureAwait(false);
#pragma warning restore CA5359
                    clientCertificate = ssl.RemoteCertificate as X509Certificate2 ?? (ssl.RemoteCertificate is { } rc ? X509CertificateLoader.LoadCertificate(rc.GetRawCertData()) : null);
                }
                var reader = new JsonMessageReader(stream);
                string? database = null;
                while (true)
                {
                    // The header: agree on a version first.
                    using var header = await reader.ReadAsync(stopping).WaitAsync(TimeSpan.FromSeconds(30), stopping).ConfigureAwait(false);
                    if (header == null)
                        return;
                    var h = header.RootElement;
                    string operation = Text(h, "Operation") ?? "";
                    database = Text(h, "DatabaseName");
                    int version = h.ValueKind == JsonValueKind.Object && h.TryGetProperty("OperationVersion", out var ov) && ov.ValueKind == JsonValueKind.Number && ov.TryGetInt32(out int v) ? v : 0;
                    if (operation == "Drop")
                        return;
                    if (operation == Replication.ReplicationProtocol.Operation)
                    {
                        await ServeReplicationAsync(stream, version, database, access, clientCertificate, stopping).ConfigureAwait(false);
                        return;
                    }
                    if (operation != "Subscription")
                    {
                        await Reply(stream, "TcpVersionMismatch", -1, $"This server accepts Subscription and Replication connections on its TCP port, not {operation}.", stopping).ConfigureAwait(false);
                        return;
                    }
                    if (Versions.Contains(version))
                    {
                        if (access?.CheckConnection(clientCertificate, Security.Access.DatabaseRead, database, $"a subscription connection to database '{database}'") is { } denial)
                        {
                            await Reply(stream, "AuthorizationFailed", version, denial.Message, stopping).ConfigureAwait(false);
                            return;
                        }
                        await Reply(stream, "Ok", version, null, stopping).ConfigureAwait(false);
                        break;
                    }
                    int next = Versions.FirstOrDefault(x => x < version, -1);
                    await Reply(stream, "TcpVersionMismatch", next, $"Version {version} is not supported; try {next}.", stopping).ConfigureAwait(false);
                    if (next == -1)
                        return;
                }
                using var optionsMessage = await reader.ReadAsync(stopping).WaitAsync(TimeSpan.FromSeconds(30), stopping).ConfigureAwait(false);
                if (optionsMessage == null)
                    return;
                var workerOptions = optionsMessage.RootElement;
                string? name = Text(workerOptions, "SubscriptionName");
                try
                {
                    db = registry.Acquire(database ?? "");
                }
                catch (DomainException)
                {
                    await Error(stream, $"Raven.Client.Exceptions.Database.DatabaseDoesNotExistException: Database '{database}' does not exist.", stopping).ConfigureAwait(false);
                    return;
                }
                if (string.IsNullOrEmpty(name))
                {
                    await Error(stream, "The worker's options name no SubscriptionName.", stopping).ConfigureAwait(false);
                    return;
                }
                using var connection = new SubscriptionConnection(db, stream, reader, name);
                await connection.RunAsync(workerOptions, stopping).ConfigureAwait(false);
            }
            catch (Exception e) when (e is AuthenticationException or IOException or SocketException or OperationCanceledException or TimeoutException or InvalidDataException or JsonException or ObjectDisposedException
                || Errors.ErrorMapping.IsInputJson(e))
            {
                Log.SubscriptionConnectionEnded(logger, e.Message);
            }
            catch (Exception e)
            {
                Log.TcpConnectionFailed(logger, e); // nothing awaits this connection's task: say it, or it vanishes
            }
            finally
            {
                db?.Release();
            }
        }
    }

    /// <summary>
    /// A replication connection from another database (docs/replication.md "Connection"): version
    /// <see cref="Replication.ReplicationProtocol.Version"/> only, write access to the destination database, then the
    /// <see cref="Replication.ReplicationReceiver"/> protocol.
    /// </summary>
    private async Task ServeReplicationAsync(Stream stream, int version, string? database, Security.AccessPolicy? access, X509Certificate2? certificate, CancellationToken stopping)
    {
        if (version != Replication.ReplicationProtocol.Version)
        {
            await Reply(stream, "TcpVersionMismatch", -1, $"Replication version {version} is not spoken here; this server speaks {Replication.ReplicationProtocol.Version}.", stopping).ConfigureAwait(false);
            return;
        }
        if (access?.CheckConnection(certificate, Security.Access.DatabaseReadWrite, database, $"replication into database '{database}'") is { } denial)
        {
            await Reply(stream, "AuthorizationFailed", version, denial.Message, stopping).ConfigureAwait(false);
            return;
        }
        Database db;
        try
        {
            db = registry.Acquire(database ?? "");
        }
        catch (DomainException e)
        {
            await Reply(stream, "Error", version, e.Message, stopping).ConfigureAwait(false);
            return;
        }
        try
        {
            await Reply(stream, "Ok", version, null, stopping).ConfigureAwait(false);
            using var ending = CancellationTokenSource.CreateLinkedTokenSource(stopping, db.Closing); // the database closing (deleted, reloaded) ends it too
            await new Replication.ReplicationReceiver(db, stream, TimeSpan.FromSeconds(options.ReplicationHeartbeatTimeoutSeconds), logger).RunAsync(ending.Token).ConfigureAwait(false);
        }
        finally
        {
            db.Release();
        }
    }

    /// <summary>A string property of a peer's message; null when missing or not a string (a hostile peer's number, say).</summary>
    private static string? Text(JsonElement message, string name) =>
        message.ValueKind == JsonValueKind.Object && message.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.String ? v.GetString() : null;

    private static async Task Reply(Stream stream, string status, int version, string? message, CancellationToken cancellation)
    {
        var json = JsonSerializer.SerializeToUtf8Bytes(new Dictionary<string, object?>
        {
            ["Status"] = status,
            ["Version"] = version,
            ["Message"] = message,
            ["LicensedFeatures"] = new Dictionary<string, bool> { ["DataCompression"] = false },
        });
        await stream.WriteAsync(json, cancellation).ConfigureAwait(false);
    }

    private static async Task Error(Stream stream, string exception, CancellationToken cancellation)
    {
        var json = JsonSerializer.SerializeToUtf8Bytes(new Dictionary<string, object?> { ["Type"] = "Error", ["Exception"] = exception, ["Message"] = exception });
        await stream.WriteAsync(json, cancellation).ConfigureAwait(false);
    }

    /// <inheritdoc />
    public override void Dispose()
    {
        _listener?.Dispose();
        base.Dispose();
    }
}
