using RavenLite.Server.Cluster;
using RavenLite.Server.Databases;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// An id ending in <c>|</c> (RavenDB's identity ids: <c>users|</c> → <c>users/7</c>) of a group's database takes its
/// number from the cluster's identity (docs/cluster.md "Identities"), before the write is queued: every member would
/// otherwise count on its own and hand the same id out twice. Other databases resolve it in their own transaction.
/// </summary>
internal static class GroupIdentities
{
    public static async Task<string> ResolveAsync(HttpContext context, Database db, string id)
    {
        if (!id.EndsWith('|'))
            return id;
        var cluster = context.RequestServices.GetRequiredService<ClusterNode>();
        if (!cluster.Groups.ContainsKey(db.Name))
            return id;
        string prefix = id[..^1];
        long value = await cluster.NextIdentityAsync(db.Name, prefix, context.RequestAborted).ConfigureAwait(false);
        return prefix + "/" + value.ToString(CultureInfo.InvariantCulture);
    }
}
