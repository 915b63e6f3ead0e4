using RavenLite.Server.Cluster;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// The cluster's membership and Raft index (docs/cluster.md): <c>PUT/DELETE /admin/cluster/node</c> (on a follower,
/// forwarded to the leader), <c>GET /rachis/waitfor?index=</c>, and <c>POST /admin/cluster/join</c> — what a leader
/// asks of a server it adds.
/// </summary>
public static class ClusterEndpoints
{
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPut("/admin/cluster/node", AddNode).Requires(Access.ClusterAdmin);
        app.MapDelete("/admin/cluster/node", RemoveNode).Requires(Access.ClusterAdmin);
        app.MapPost("/admin/cluster/join", Join).Requires(Access.ClusterAdmin);
        app.MapPost("/admin/cluster/promote", context => SetRole(context, watcher: false)).Requires(Access.ClusterAdmin);
        app.MapPost("/admin/cluster/demote", context => SetRole(context, watcher: true)).Requires(Access.ClusterAdmin);
        app.MapPost("/admin/cluster/reelect", Reelect).Requires(Access.ClusterAdmin);
        app.MapGet("/rachis/waitfor", WaitFor).Requires(Access.ValidUser);
        app.MapPost("/rachis/send", Send).Requires(Access.ClusterAdmin);
    }

    private static async Task AddNode(HttpContext context)
    {
        var node = context.RequestServices.GetRequiredService<ClusterNode>();
        string url = RequestParsing.Required(context.Request, "url");
        if (!Uri.TryCreate(url, UriKind.Absolute, out var parsed) || (parsed.Scheme != Uri.UriSchemeHttp && parsed.Scheme != Uri.UriSchemeHttps))
            throw new BadRequestException($"'{url}' is not an http(s) URL.");
        string? tag = context.Request.Query["tag"].FirstOrDefault() is { Length: > 0 } t ? t : null;
        bool watcher = string.Equals(context.Request.Query["watcher"], "true", StringComparison.OrdinalIgnoreCase);
        if (await LeaderForward.TryAsync(context, node).ConfigureAwait(false))
            return;
        var (assigned, index) = await node.AddNodeAsync(url, tag, watcher, context.RequestAborted).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteString("Tag", assigned);
            w.WriteNumber("RaftCommandIndex", index);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static async Task RemoveNode(HttpContext context)
    {
        var node = context.RequestServices.GetRequiredService<ClusterNode>();
        string tag = RequestParsing.Required(context.Request, "nodeTag");
        if (await LeaderForward.TryAsync(context, node).ConfigureAwait(false))
            return;
        long index = await node.RemoveNodeAsync(tag, context.RequestAborted).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", index);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    /// <summary><c>promote</c> makes a watcher a member again; <c>demote</c> makes a member a watcher (never the leader: reelect first). 204.</summary>
    private static async Task SetRole(HttpContext context, bool watcher)
    {
        var node = context.RequestServices.GetRequiredService<ClusterNode>();
        string tag = RequestParsing.Required(context.Request, "nodeTag");
        var info = node.Read(s => s.Nodes.GetValueOrDefault(tag)) ?? throw new NotFoundException(RavenExceptionTypes.BadRequest, $"The cluster has no node tagged {tag}.");
        if (info.Watcher == watcher)
            throw new BadRequestException($"Node {tag} is already a {(watcher ? "watcher" : "member")}.");
        if (watcher && node.LeaderTag == tag)
            throw new BadRequestException($"Node {tag} leads the cluster: ask it to step down (POST /admin/cluster/reelect) before demoting it.");
        if (watcher && node.Read(s => s.Nodes.Count(n => !n.Value.Watcher)) <= 1)
            throw new BadRequestException("The cluster needs at least one member node.");
        await node.SendAsync(ClusterCommands.NodeRole(tag, watcher), context.RequestAborted).ConfigureAwait(false);
        context.Response.StatusCode = 204;
    }

    /// <summary>The leader steps down and the nodes elect one again (forwarded to the leader). 204.</summary>
    private static async Task Reelect(HttpContext context)
    {
        var node = context.RequestServices.GetRequiredService<ClusterNode>();
        if (await LeaderForward.TryAsync(context, node).ConfigureAwait(false))
            return;
        await node.ResignAsync(context.RequestAborted).ConfigureAwait(false);
        context.Response.StatusCode = 204;
    }

    private static async Task Join(HttpContext context)
    {
        var node = context.RequestServices.GetRequiredService<ClusterNode>();
        string tag = RequestParsing.Required(context.Request, "tag");
        string raft = await node.StandByAsync(tag, context.RequestAborted).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteString("NodeTag", tag);
            w.WriteString("RaftEndPoint", raft);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    /// <summary>
    /// A follower's cluster command, on the leader: appended through Raft as sent (the follower built and checked it);
    /// answers <c>{RaftCommandIndex}</c>. Not the leader: 503 <c>NoLeaderException</c>.
    /// </summary>
    private static async Task Send(HttpContext context)
    {
        var node = context.RequestServices.GetRequiredService<ClusterNode>();
        var options = context.RequestServices.GetRequiredService<Configuration.ServerOptions>();
        var command = await RequestBody.ReadAsync(context, options.MaxRequestBodyBytes).ConfigureAwait(false);
        try
        {
            using var parsed = JsonDocument.Parse(command);
            if (parsed.RootElement.ValueKind != JsonValueKind.Object || !parsed.RootElement.TryGetProperty("Type", out _))
                throw new BadRequestException("A cluster command is a JSON object with a Type.");
        }
        catch (JsonException e)
        {
            throw new BadRequestException("A cluster command is a JSON object with a Type: " + e.Message);
        }
        long index = await node.ReplicateAsync(command.ToArray(), context.RequestAborted).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", index);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    /// <summary>Waits (up to 30 s) until this node has applied Raft index <c>?index=</c> (and made its database instances match): 200, else 503 <c>TimeoutException</c>.</summary>
    private static async Task WaitFor(HttpContext context)
    {
        var node = context.RequestServices.GetRequiredService<ClusterNode>();
        long index = RequestParsing.QueryLong(context.Request, "index", min: 0) ?? throw new BadRequestException("Query string 'index' is required.");
        if (!await node.WaitForIndexAsync(index, TimeSpan.FromSeconds(30), context.RequestAborted).ConfigureAwait(false))
            throw new UnavailableException(RavenExceptionTypes.Timeout, $"Raft index {index} was not applied on node {node.Tag} within 30 s (applied: {node.LastAppliedIndex}).");
        // Applied means acted on too: this node's database instances match the groups as of that index.
        await context.RequestServices.GetRequiredService<DatabaseGroups>().ReconcileAsync(context.RequestAborted).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", node.LastAppliedIndex);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }
}
