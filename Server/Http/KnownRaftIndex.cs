using RavenLite.Server.Cluster;

namespace RavenLite.Server.Http;

/// <summary>
/// A request to a group's database carrying <c>Known-Raft-Index: n</c> (docs/cluster.md "What clients see") — RavenDB's
/// clients send the index of their last cluster command — is answered only once this node has applied Raft index n (and brought its database instances in line, as <c>rachis/waitfor</c>) — a client that
/// changed the cluster through one node then reads through another and sees its change. Not applied within 30 s: 503 <c>TimeoutException</c>; a malformed header: 400.
/// </summary>
public sealed class KnownRaftIndex(RequestDelegate next)
{
    public const string Header = "Known-Raft-Index";

    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Only a group's database has Raft indexes: a database on one server answers its own transaction indexes (what its
    /// compare-exchange values carry), which a client may send back in this header and which mean nothing to Raft.
    /// </summary>
    private static bool OfGroup(HttpContext context, ClusterNode node) =>
        !node.Groups.IsEmpty && RequestDatabase.Of(context.Request) is { } name && node.Groups.ContainsKey(name);

    public async Task InvokeAsync(HttpContext context, ClusterNode node, DatabaseGroups groups)
    {
        if (context.Request.Headers.TryGetValue(Header, out var values) && values.FirstOrDefault() is { Length: > 0 } text && OfGroup(context, node))
        {
            if (!long.TryParse(text.Trim('"'), NumberStyles.None, CultureInfo.InvariantCulture, out long index))
                throw new BadRequestException($"{Header} must be a Raft index (a whole number), not '{text}'.");
            if (node.LastAppliedIndex < index)
            {
                if (!await node.WaitForIndexAsync(index, Wait, context.RequestAborted).ConfigureAwait(false))
                    throw new UnavailableException(RavenExceptionTypes.Timeout, $"Raft index {index} ({Header}) was not applied on node {node.Tag} within 30 s (applied: {node.LastAppliedIndex}).");
                await groups.ReconcileAsync(context.RequestAborted).ConfigureAwait(false); // applied means acted on, as rachis/waitfor
            }
        }
        await next(context).ConfigureAwait(false);
    }
}
