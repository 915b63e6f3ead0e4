using System.Globalization;
using System.Security.Cryptography.X509Certificates;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Certificates;

/// <summary>RavenDB's clearances.</summary>
public enum SecurityClearance
{
    /// <summary>Everything, including ClusterAdmin certificates.</summary>
    ClusterAdmin,

    /// <summary>Server administration and every database.</summary>
    Operator,

    /// <summary>The databases in <see cref="CertificateDefinition.Permissions"/>.</summary>
    ValidUser,
}

/// <summary>A ValidUser certificate's access to one database.</summary>
public enum DatabaseAccess
{
    /// <summary>Reads only.</summary>
    Read,

    /// <summary>Reads and writes.</summary>
    ReadWrite,

    /// <summary>Also the database's administration.</summary>
    Admin,
}

/// <summary>A registered certificate as the server lists it.</summary>
public sealed record CertificateDefinition(string Name, string Thumbprint, SecurityClearance SecurityClearance, IReadOnlyDictionary<string, DatabaseAccess> Permissions, DateTime? NotAfter, string? Certificate)
{
#pragma warning disable CA1507 // the server's JSON field names, which happen to match the record's
    internal static CertificateDefinition Parse(JsonNode node) => new(
        (string)node["Name"]!,
        (string)node["Thumbprint"]!,
        Enum.Parse<SecurityClearance>((string)node["SecurityClearance"]!),
        node["Permissions"] is JsonObject p ? p.ToDictionary(kv => kv.Key, kv => Enum.Parse<DatabaseAccess>((string)kv.Value!), StringComparer.OrdinalIgnoreCase) : new Dictionary<string, DatabaseAccess>(),
        node["NotAfter"] is JsonValue v ? DateTime.Parse((string)v!, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal) : null,
        (string?)node["Certificate"]);
#pragma warning restore CA1507

    internal static JsonObject ToJson(IReadOnlyDictionary<string, DatabaseAccess>? permissions) =>
        new((permissions ?? new Dictionary<string, DatabaseAccess>()).Select(kv => KeyValuePair.Create(kv.Key, (JsonNode?)kv.Value.ToString())));
}

/// <summary><c>PUT /admin/certificates</c>: registers a client certificate (its public part, with the issuer certificates given in <paramref name="issuers"/>).</summary>
public sealed class PutClientCertificateOperation(string name, X509Certificate2 certificate, SecurityClearance clearance, IReadOnlyDictionary<string, DatabaseAccess>? permissions = null, IEnumerable<X509Certificate2>? issuers = null) : IServerOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<bool>(HttpMethod.Put, "/admin/certificates", new JsonObject
        {
            ["Name"] = name,
            ["Certificate"] = string.Concat(new[] { certificate }.Concat(issuers ?? []).Select(c => c.ExportCertificatePem() + "\n")),
            ["SecurityClearance"] = clearance.ToString(),
            ["Permissions"] = CertificateDefinition.ToJson(permissions),
        }, _ => true, serverWide: true);
}

/// <summary><c>POST /admin/certificates/edit</c>: changes a registered certificate's name, clearance and permissions.</summary>
public sealed class EditClientCertificateOperation(string thumbprint, string name, SecurityClearance clearance, IReadOnlyDictionary<string, DatabaseAccess>? permissions = null) : IServerOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<bool>(HttpMethod.Post, "/admin/certificates/edit", new JsonObject
        {
            ["Thumbprint"] = thumbprint,
            ["Name"] = name,
            ["SecurityClearance"] = clearance.ToString(),
            ["Permissions"] = CertificateDefinition.ToJson(permissions),
        }, _ => true, serverWide: true);
}

/// <summary><c>DELETE /admin/certificates?thumbprint=</c>.</summary>
public sealed class DeleteCertificateOperation(string thumbprint) : IServerOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<bool>(HttpMethod.Delete, "/admin/certificates?thumbprint=" + Uri.EscapeDataString(thumbprint), null, _ => true, serverWide: true);
}

/// <summary><c>GET /admin/certificates?metadataOnly=true</c>: every registered certificate.</summary>
public sealed class GetCertificatesOperation : IServerOperation<IReadOnlyList<CertificateDefinition>>
{
    /// <inheritdoc />
    public RavenCommand<IReadOnlyList<CertificateDefinition>> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<IReadOnlyList<CertificateDefinition>>(HttpMethod.Get, "/admin/certificates?metadataOnly=true", null,
            json => json!["Results"]!.AsArray().Select(n => CertificateDefinition.Parse(n!)).ToList(), serverWide: true);
}

/// <summary><c>GET /certificates/whoami</c>: the definition of the certificate this store authenticates with.</summary>
public sealed class WhoAmIOperation : IServerOperation<CertificateDefinition>
{
    /// <inheritdoc />
    public RavenCommand<CertificateDefinition> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<CertificateDefinition>(HttpMethod.Get, "/certificates/whoami", null, json => CertificateDefinition.Parse(json!), serverWide: true);
}
