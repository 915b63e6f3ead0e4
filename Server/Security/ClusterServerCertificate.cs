using System.Text.Json.Nodes;
using RavenLite.Server.Cluster;

namespace RavenLite.Server.Security;

/// <summary>
/// The server certificate as a cluster item (RavenDB's <c>replace-cluster-cert</c> replaces it on every node): a
/// replacement is checked where it is asked for, goes through Raft as the item <see cref="Key"/> (<c>{Certificate:
/// base64 PFX, Password}</c>), and every node writes it over its configured certificate files and loads it
/// (<see cref="ServerCertificate.Replace"/>) — a node that was down when it was replaced does so when it catches up.
/// The cluster's state therefore holds the certificate's private key, as each node's certificate files do.
/// </summary>
public sealed class ClusterServerCertificate(ServerItems items, ServerCertificate certificate, ILogger<ClusterServerCertificate> logger) : IServerItemFollower
{
    /// <summary>The item holding the cluster's server certificate.</summary>
    public const string Key = "server/certificate";

    public string Prefix => Key;

    /// <summary>Replaces the server certificate on every node (400 for one that does not load); returns the Raft index.</summary>
    public Task<long> ReplaceAsync(byte[] pfx, string? password, CancellationToken token)
    {
        ArgumentNullException.ThrowIfNull(pfx);
        foreach (var c in ServerCertificate.Loadable(pfx, password).All)
            c.Dispose();
        var item = new JsonObject { ["Certificate"] = Convert.ToBase64String(pfx), ["Password"] = password };
        return items.PutAsync(Key, item.ToJsonString(), token);
    }

    public void Apply(string key, string? json)
    {
        if (json == null || JsonNode.Parse(json) is not JsonObject item || item["Certificate"]?.GetValue<string>() is not { } data)
            return;
        try
        {
            certificate.Replace(Convert.FromBase64String(data), item["Password"]?.GetValue<string>());
        }
        catch (BadRequestException e)
        {
            // Checked where it was asked for; a node that cannot write or load it keeps its own and says why.
            Logging.Log.CertificateReloadFailed(logger, e.Message);
        }
    }
}
