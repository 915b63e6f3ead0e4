using RavenLite.Server.Cluster;

namespace RavenLite.Server.Http;

/// <summary>
/// What RavenDB's clients learn about a group's database on every request to it (docs/cluster.md "What clients see"):
/// a request whose <c>Topology-Etag</c> header is older than the group's last change is answered with
/// <c>Refresh-Topology: true</c> (the client fetches <c>/topology</c> again), and a node that holds no instance of the
/// group answers 410 <c>DatabaseNotRelevantException</c> (the client moves to another node).
/// </summary>
public sealed class GroupTopologyHeaders(RequestDelegate next)
{
    public async Task InvokeAsync(HttpContext context, ClusterNode node)
    {
        var groups = node.Groups;
        if (!groups.IsEmpty && RequestDatabase.Of(context.Request) is { } name)
        {
            if (groups.TryGetValue(name, out var group))
            {
                if (!group.All.Contains(node.Tag))
                {
                    string message = $"Database '{name}' is not on node {node.Tag}; its group is {string.Join(", ", group.All)}.";
                    await ErrorHandlingMiddleware.WriteErrorAsync(context, 410, DatabaseNotRelevant, message, message).ConfigureAwait(false);
                    return;
                }
                if (long.TryParse(context.Request.Headers["Topology-Etag"].FirstOrDefault()?.Trim('"'), NumberStyles.Integer, CultureInfo.InvariantCulture, out long etag) && etag < group.Etag)
                    context.Response.Headers["Refresh-Topology"] = "true";
            }
        }
        await next(context).ConfigureAwait(false);
    }

    /// <summary>RavenDB's name for "this node holds no instance of that database".</summary>
    public const string DatabaseNotRelevant = "Raven.Client.Exceptions.Database.DatabaseNotRelevantException";
}
