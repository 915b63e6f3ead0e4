using RavenLite.Server.Cluster;
using RavenLite.Server.Configuration;

namespace RavenLite.Server.Security;

/// <summary>
/// Registered client certificates as cluster items (docs/cluster.md "Server-wide state"): a registration, edit or
/// deletion goes through Raft from whichever node was asked, and every node's <see cref="CertificateRegistry"/> follows
/// the items <c>certificates/{THUMBPRINT}</c>. On a secured server only.
/// </summary>
public sealed class ClusterCertificates(ServerItems items, CertificateRegistry registry) : IServerItemFollower
{
    /// <summary>The keys of certificate items.</summary>
    public const string KeyPrefix = "certificates/";

    public string Prefix => KeyPrefix;

    /// <summary>Registers (or replaces) a client certificate on every node; returns the Raft index.</summary>
    public Task<long> PutAsync(CertificateDefinition definition, CancellationToken token)
    {
        ArgumentNullException.ThrowIfNull(definition);
        return items.PutAsync(KeyPrefix + definition.Thumbprint, JsonSerializer.Serialize(definition), token);
    }

    /// <summary>Removes a client certificate's registration from every node; returns the Raft index.</summary>
    public Task<long> DeleteAsync(string thumbprint, CancellationToken token) =>
        items.PutAsync(KeyPrefix + SecurityOptions.NormalizeThumbprint(thumbprint), null, token);

    public void Apply(string key, string? json)
    {
        ArgumentNullException.ThrowIfNull(key);
        string thumbprint = key[KeyPrefix.Length..];
        var registered = registry.Registered(thumbprint);
        if (json == null)
        {
            if (registered != null)
                registry.Delete(thumbprint);
            return;
        }
        if (registered == null || JsonSerializer.Serialize(registered) != json)
            registry.Put(JsonSerializer.Deserialize<CertificateDefinition>(json)!);
    }
}
