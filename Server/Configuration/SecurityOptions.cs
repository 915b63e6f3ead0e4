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

    /// <summary>The master key that wraps encrypted databases' keys (docs/security.md "Encryption at rest").</summary>
    public MasterKeySettings MasterKey { get; set; } = new();

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

/// <summary>
/// Where the master key comes from: a file (<see cref="Path"/>: 32 bytes, or their base64) readable by the server's
/// user only, or an environment variable (<see cref="Environment"/> names it; base64). With
/// <see cref="PreviousPath"/> or <see cref="PreviousEnvironment"/> naming the key in use before, the server re-wraps
/// every database key with the new one when it starts (a rotation: no data is re-encrypted).
/// </summary>
public sealed class MasterKeySettings
{
    /// <summary>The key file.</summary>
    public string? Path { get; set; }

    /// <summary>The name of the environment variable holding the key (base64).</summary>
    public string? Environment { get; set; }

    /// <summary>The previous key's file, for a rotation.</summary>
    public string? PreviousPath { get; set; }

    /// <summary>The previous key's environment variable, for a rotation.</summary>
    public string? PreviousEnvironment { get; set; }

    /// <summary>True when a master key is configured.</summary>
    public bool Configured => !string.IsNullOrWhiteSpace(Path) || !string.IsNullOrWhiteSpace(Environment);
}
