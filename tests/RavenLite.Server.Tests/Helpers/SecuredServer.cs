using System.Security.Cryptography.X509Certificates;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Logging;
using RavenLite.Cli;
using RavenLite.Server.Hosting;

namespace RavenLite.Server.Tests.Helpers;

/// <summary>
/// A secured RavenLite (HTTPS on 127.0.0.1, port 0) with certificates made by the CLI's <see cref="CertificateFactory"/>:
/// a CA, a server certificate written as a PFX, and a well-known ClusterAdmin client certificate (<see cref="Admin"/>).
/// <see cref="Client"/> gives HttpClients presenting any certificate and trusting only the CA.
/// </summary>
public sealed class SecuredServer : IAsyncDisposable
{
    private readonly TempDirectory? _ownedDir;
    private readonly WebApplication _app;
    private readonly List<HttpClient> _clients = [];

    private SecuredServer(WebApplication app, string dir, TempDirectory? owned, X509Certificate2 ca, X509Certificate2 admin)
    {
        _app = app;
        Dir = dir;
        _ownedDir = owned;
        Ca = ca;
        Admin = admin;
        Url = new Uri(ServerHost.Addresses(app)[0]);
    }

    /// <summary>Base address (https).</summary>
    public Uri Url { get; }

    /// <summary>The directory holding data/ and certs/.</summary>
    public string Dir { get; }

    /// <summary>The CA every certificate here is signed by.</summary>
    public X509Certificate2 Ca { get; }

    /// <summary>The well-known ClusterAdmin client certificate.</summary>
    public X509Certificate2 Admin { get; }

    /// <summary>The running app's services.</summary>
    public IServiceProvider Services => _app.Services;

    /// <summary>The server certificate's PFX.</summary>
    public string ServerPfx => Path.Combine(Dir, "certs", "server.pfx");

    /// <summary>Makes the certificates (unless <paramref name="dir"/> already has them) and starts the server.</summary>
    public static async Task<SecuredServer> StartAsync(string? dir = null, string? password = null, CapturedLogs? logs = null, params string[] extraArgs)
    {
        TempDirectory? owned = dir == null ? new TempDirectory("ravenlite-secured") : null;
        dir ??= owned!.Path;
        string certs = Path.Combine(dir, "certs");
        X509Certificate2 ca, admin;
        if (!File.Exists(Path.Combine(certs, "ca.pfx")))
        {
            var now = DateTimeOffset.UtcNow;
            ca = CertificateFactory.CreateCa("Test CA", now.AddDays(-60), now.AddDays(30)); // from the past: expired client certificates can be made
            CertificateFactory.Write(ca, [], certs, "ca", null);
            using var server = CertificateFactory.CreateServer(ca, "localhost", ["localhost"], [System.Net.IPAddress.Loopback, System.Net.IPAddress.IPv6Loopback], now.AddMinutes(-5), now.AddDays(30));
            CertificateFactory.Write(server, [ca], certs, "server", password);
            admin = CertificateFactory.CreateClient(ca, "admin", now.AddMinutes(-5), now.AddDays(30));
            CertificateFactory.Write(admin, [ca], certs, "admin", null);
        }
        ca = CertificateFactory.LoadPfx(Path.Combine(certs, "ca.pfx"), null);
        admin = CertificateFactory.LoadPfx(Path.Combine(certs, "admin.pfx"), null);
        string[] args =
        [
            "--DataDir", Path.Combine(dir, "data"), "--ServerUrl", "https://127.0.0.1:0",
            "--Security:Certificate:Path", Path.Combine(certs, "server.pfx"),
            "--Security:WellKnownAdminCertificates", admin.Thumbprint,
            "--Logging:LogLevel:Default", logs == null ? "Warning" : "Information",
            .. password == null ? Array.Empty<string>() : ["--Security:Certificate:Password", password],
            .. extraArgs,
        ];
        var app = ServerHost.Build(args, null, logs == null ? null : l => l.AddProvider(logs));
        await app.StartAsync();
        return new SecuredServer(app, dir, owned, ca, admin);
    }

    /// <summary>A client certificate signed by the CA (or by <paramref name="issuer"/>), valid from/to the given times (default: now-5min .. +30 days).</summary>
    public X509Certificate2 NewClient(string name, X509Certificate2? issuer = null, DateTimeOffset? notBefore = null, DateTimeOffset? notAfter = null) =>
        CertificateFactory.CreateClient(issuer ?? Ca, name, notBefore ?? DateTimeOffset.UtcNow.AddMinutes(-5), notAfter ?? DateTimeOffset.UtcNow.AddDays(30));

    /// <summary>True when <paramref name="presented"/> chains to the test CA (how the tests trust the server).</summary>
    public bool TrustsServer(X509Certificate2? presented) =>
        presented != null && RavenLite.Server.Security.CertificateTrust.Chains(presented, [Ca], forClientAuthentication: false);

    /// <summary>An HttpClient (kept alive) presenting <paramref name="certificate"/> (null: none) and trusting the test CA.</summary>
    public HttpClient Client(X509Certificate2? certificate, Action<X509Certificate2>? sawServer = null)
    {
        var handler = new SocketsHttpHandler();
        if (certificate != null)
            handler.SslOptions.ClientCertificates = [certificate];
        handler.SslOptions.RemoteCertificateValidationCallback = (_, presented, _, _) =>
        {
            var c = presented as X509Certificate2 ?? (presented == null ? null : X509CertificateLoader.LoadCertificate(presented.GetRawCertData()));
            if (c != null)
                sawServer?.Invoke(c);
            return TrustsServer(c);
        };
        var client = new HttpClient(handler) { BaseAddress = Url, Timeout = TimeSpan.FromSeconds(30) };
        _clients.Add(client);
        return client;
    }

    /// <summary>Registers <paramref name="certificate"/> as the well-known admin; throws unless 201.</summary>
    public async Task RegisterAsync(X509Certificate2 certificate, string name, string clearance, string permissionsJson = "{}")
    {
        var body = $$"""{"Name":"{{name}}","Certificate":"{{Convert.ToBase64String(certificate.RawData)}}","SecurityClearance":"{{clearance}}","Permissions":{{permissionsJson}}}""";
        var r = await Client(Admin).PutAsync("/admin/certificates", new StringContent(body, Encoding.UTF8, "application/json"));
        Assert.True(r.StatusCode == System.Net.HttpStatusCode.Created, $"register {name}: {(int)r.StatusCode} {await r.Content.ReadAsStringAsync()}");
    }

    /// <summary>Creates a database as the admin.</summary>
    public async Task CreateDatabaseAsync(string name)
    {
        var r = await Client(Admin).PutAsync("/admin/databases", new StringContent($$"""{"DatabaseName":"{{name}}"}""", Encoding.UTF8, "application/json"));
        Assert.Equal(System.Net.HttpStatusCode.Created, r.StatusCode);
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        foreach (var c in _clients)
            c.Dispose();
        await _app.StopAsync();
        await _app.DisposeAsync();
        _ownedDir?.Dispose();
    }
}
