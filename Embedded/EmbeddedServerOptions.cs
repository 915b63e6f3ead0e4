using Microsoft.Extensions.Logging;
using RavenLite.Server.Configuration;
using RavenLite.Storage;

namespace RavenLite.Embedded;

/// <summary>
/// How <see cref="EmbeddedServer"/> runs (RavenDB.Embedded's <c>ServerOptions</c>, named apart from the server's own
/// <see cref="ServerOptions"/>). Every other setting of the standalone server is reachable through <see cref="Configure"/>.
/// </summary>
public sealed class EmbeddedServerOptions
{
    /// <summary>The data directory: the standalone server's format, so <c>ravenlite serve --DataDir</c> or the Docker image can open it later. Default: <c>RavenLite</c> beside the application.</summary>
    public string DataDirectory { get; set; } = Path.Combine(AppContext.BaseDirectory, "RavenLite");

    /// <summary>
    /// The address the server listens on. Default: a free port on 127.0.0.1, reachable from this machine only. The
    /// document stores, the changes API and subscriptions all talk to the server over it, so there is always one.
    /// </summary>
    public string ServerUrl { get; set; } = "http://127.0.0.1:0";

    /// <summary>When a write is acknowledged: <see cref="DurabilityMode.Sync"/> (default: on stable storage), <see cref="DurabilityMode.Buffered"/> or <see cref="DurabilityMode.None"/>.</summary>
    public DurabilityMode Durability { get; set; } = DurabilityMode.Sync;

    /// <summary>A server certificate (PFX or PEM) to serve HTTPS with client certificates, as a secured standalone server does (docs/security.md).</summary>
    public string? CertificatePath { get; set; }

    /// <summary>The certificate's password.</summary>
    public string? CertificatePassword { get; set; }

    /// <summary>Whether the Studio is served at <c>/studio/</c> (default: yes; its files ship in the RavenLite.Server package).</summary>
    public bool ServeStudio { get; set; } = true;

    /// <summary>Minimum level of the server's log lines on the console (default: warnings and errors).</summary>
    public LogLevel LogLevel { get; set; } = LogLevel.Warning;

    /// <summary>Changes any other server setting (limits, the TCP port, metrics…) after the ones above are applied.</summary>
    public Action<ServerOptions>? Configure { get; set; }
}
