using RavenLite.Server.Cluster;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// What only the leader's Raft engine can do — change the Raft members (add or remove a node) and step down — sent to a
/// follower goes to the leader, as RavenDB forwards it: the request is sent on to the leader's URL and its answer passed
/// back as it is. No leader known: 503 <c>NoLeaderException</c>. Every other cluster change is a log command that any
/// node sends to the leader itself (<see cref="ClusterNode.SendAsync"/>).
/// </summary>
internal static class LeaderForward
{
    /// <summary>True when the request was forwarded (the answer is written); false when this node leads.</summary>
    public static async Task<bool> TryAsync(HttpContext context, ClusterNode node)
    {
        if (node.CurrentState == "Leader")
            return false;
        string leader = node.LeaderUrl() ?? throw new NotLeaderException(null);
        using var request = new HttpRequestMessage(new HttpMethod(context.Request.Method), leader + context.Request.Path + context.Request.QueryString);
        var http = context.RequestServices.GetRequiredService<NodeClient>().Http;
        using var response = await http.SendAsync(request, context.RequestAborted).ConfigureAwait(false);
        context.Response.StatusCode = (int)response.StatusCode;
        context.Response.ContentType = response.Content.Headers.ContentType?.ToString();
        await response.Content.CopyToAsync(context.Response.Body, context.RequestAborted).ConfigureAwait(false);
        return true;
    }
}
