namespace RavenLite.Server.Configuration;

/// <summary>
/// The <c>Security</c> settings (<c>--Security:Certificate:Path x.pfx</c>, <c>RAVENLITE_Security__Certificate__Path</c>).
/// A server certificate makes the server secured: HTTPS only, every request authenticated by its client certificate
/// (docs/security.md).
/// </summary>
public sealed class SecurityOptions
{
    /// <summary>The server certificate.</summary>
    public CertificateSettings Certificate { get; set; } = new();

    /// <summary>
    /// Thumbprints (comma-separated) of client certificates that are ClusterAdmin without being registered, as RavenDB's
    /// <c>Security.WellKnownCertificates.Admin</c>: how the first administrator gets in.
    /// </summary>
    public string? WellKnownAdminCertificates { get; set; }

    /// <summary>True when a server certificate is configured.</summary>
    public bool Secured => !string.IsNullOrWhiteSpace(Certificate.Path);

    /// <summary>The well-known admin thumbprints, upper-case, without separators.</summary>
    public IReadOnlyList<string> WellKnownAdminThumbprints =>
        (WellKnownAdminCertificates ?? "").Split([',', ';', ' '], StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries)
            .Select(NormalizeThumbprint).ToList();

    /// <summary>Thumbprints are compared upper-case, without spaces or colons.</summary>
    public static string NormalizeThumbprint(string thumbprint) =>
        new string(thumbprint.Where(char.IsAsciiHexDigit).ToArray()).ToUpperInvariant();
}

/// <summary>Where the server certificate is: a PFX (with <see cref="Password"/> when it has one) or a PEM certificate with its key in <see cref="KeyPath"/> (or in the same file).</summary>
public sealed class CertificateSettings
{
    /// <summary>The PFX (<c>.pfx</c>/<c>.p12</c>) or PEM certificate file. Further certificates in it (its issuers) are sent in the handshake and trusted as client-certificate issuers.</summary>
    public string? Path { get; set; }

    /// <summary>The PFX password, or the PEM key's password when it is encrypted. Never logged.</summary>
    public string? Password { get; set; }

    /// <summary>The PEM private key file, when <see cref="Path"/> is a PEM certificate without its key.</summary>
    public string? KeyPath { get; set; }
}
