using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using System.Text.Json.Serialization;

namespace RavenLite.Server.Security;

/// <summary>RavenDB's clearances (<c>SecurityClearance</c>), strongest first.</summary>
[JsonConverter(typeof(JsonStringEnumConverter<SecurityClearance>))]
public enum SecurityClearance
{
    /// <summary>Everything, including registering ClusterAdmin certificates.</summary>
    ClusterAdmin,

    /// <summary>Server administration and every database.</summary>
    Operator,

    /// <summary>The databases named in the certificate's permissions, at the level named there.</summary>
    ValidUser,
}

/// <summary>RavenDB's per-database access of a ValidUser certificate (<c>DatabaseAccess</c>).</summary>
[JsonConverter(typeof(JsonStringEnumConverter<DatabaseAccess>))]
public enum DatabaseAccess
{
    /// <summary>Reads only: loads, queries, streams, exports, changes.</summary>
    Read,

    /// <summary>Reads and writes of documents and their extras.</summary>
    ReadWrite,

    /// <summary>Also the database's administration: indexes, settings, backups, tasks.</summary>
    Admin,
}

/// <summary>One registered client certificate (public part only), as stored and as listed by <c>GET /admin/certificates</c>.</summary>
public sealed record CertificateDefinition
{
    /// <summary>The name it was registered under.</summary>
    public required string Name { get; init; }

    /// <summary>SHA-1 thumbprint, upper-case hex.</summary>
    public required string Thumbprint { get; init; }

    /// <summary>The certificate, base64 of its DER encoding.</summary>
    public required string Certificate { get; init; }

    /// <summary>Its clearance.</summary>
    public required SecurityClearance SecurityClearance { get; init; }

    /// <summary>Database name → access (ValidUser only; names match case-insensitively).</summary>
    public Dictionary<string, DatabaseAccess> Permissions { get; init; } = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>Validity start (UTC).</summary>
    public DateTime NotBefore { get; init; }

    /// <summary>Validity end (UTC).</summary>
    public DateTime NotAfter { get; init; }

    /// <summary>Base64 of the SHA-256 of the certificate's SubjectPublicKeyInfo (RavenDB's field).</summary>
    public string PublicKeyPinningHash { get; init; } = "";

    /// <summary>Issuer certificates that came with it (base64 DER), trusted as issuers of client certificates.</summary>
    public List<string> Issuers { get; init; } = [];

    /// <summary>The access this certificate has to <paramref name="database"/>, null for none.</summary>
    public DatabaseAccess? AccessTo(string database) =>
        SecurityClearance is SecurityClearance.ClusterAdmin or SecurityClearance.Operator ? DatabaseAccess.Admin
        : Permissions.TryGetValue(database, out var a) ? a : null;

    /// <summary>The registration of <paramref name="certificate"/> under <paramref name="name"/>, with its validity, pinning hash and issuers.</summary>
    public static CertificateDefinition Of(X509Certificate2 certificate, string name, SecurityClearance clearance, Dictionary<string, DatabaseAccess> permissions, IEnumerable<X509Certificate2> issuers) => new()
    {
        Name = name,
        Thumbprint = certificate.Thumbprint,
        Certificate = Convert.ToBase64String(certificate.RawData),
        SecurityClearance = clearance,
        Permissions = permissions,
        NotBefore = certificate.NotBefore.ToUniversalTime(),
        NotAfter = certificate.NotAfter.ToUniversalTime(),
        PublicKeyPinningHash = PinningHash(certificate),
        Issuers = [.. issuers.Select(i => Convert.ToBase64String(i.RawData))],
    };

    /// <summary>The hash RavenDB calls the public key pinning hash.</summary>
    public static string PinningHash(X509Certificate2 certificate) =>
        Convert.ToBase64String(SHA256.HashData(certificate.PublicKey.ExportSubjectPublicKeyInfo()));
}
