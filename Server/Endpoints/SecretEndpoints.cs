using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Keys of encrypted databases, as RavenDB's clients and Studio handle them (docs/security.md "Encryption at rest"):
/// <c>GET /admin/secrets/generate</c> answers a new 256-bit key (base64, plain text); <c>POST /admin/secrets?name=&amp;overwrite=</c>
/// stores one (the body, base64) on this node; <c>POST /admin/secrets/distribute?name=&amp;node=A[&amp;node=B]</c> stores it on
/// each node named — this one directly, the others through their <c>/admin/secrets</c>. Operator clearance.
/// </summary>
public static class SecretEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapGet("/admin/secrets/generate", Generate).Requires(Access.Operator);
        app.MapPost("/admin/secrets", Put).Requires(Access.Operator);
        app.MapPost("/admin/secrets/distribute", Distribute).Requires(Access.Operator);
    }

    private static async Task Generate(HttpContext context)
    {
        context.Response.StatusCode = 200;
        context.Response.ContentType = "text/plain";
        await context.Response.WriteAsync(DatabaseKeys.Generate(), context.RequestAborted).ConfigureAwait(false);
    }

    private static async Task<string> KeyOf(HttpContext context)
    {
        var body = await RequestBody.ReadAsync(context, 4096).ConfigureAwait(false);
        return Encoding.UTF8.GetString(body.Span).Trim().Trim('"');
    }

    private static async Task Put(HttpContext context)
    {
        string name = RequestParsing.Required(context.Request, "name");
        bool overwrite = string.Equals(RequestParsing.Query(context.Request, "overwrite"), "true", StringComparison.OrdinalIgnoreCase);
        context.RequestServices.GetRequiredService<DatabaseRegistry>().Keys.Put(name, await KeyOf(context).ConfigureAwait(false), overwrite);
        // An encrypted group database placed here before its key came is created now.
        await context.RequestServices.GetRequiredService<Cluster.DatabaseGroups>().ReconcileAsync(context.RequestAborted).ConfigureAwait(false);
        await JsonResponse.EmptyAsync(context, 201).ConfigureAwait(false);
    }

    private static async Task Distribute(HttpContext context)
    {
        string name = RequestParsing.Required(context.Request, "name");
        var nodes = context.Request.Query["node"].Where(n => !string.IsNullOrEmpty(n)).Select(n => n!).ToList();
        if (nodes.Count == 0)
            throw new BadRequestException("Name the nodes to distribute the key to (node=A&node=B...).");
        string key = await KeyOf(context).ConfigureAwait(false);
        var options = context.RequestServices.GetRequiredService<ServerOptions>();
        var cluster = context.RequestServices.GetRequiredService<Cluster.ClusterNode>();
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        foreach (string node in nodes)
        {
            if (node == "?" || string.Equals(node, options.NodeTag, StringComparison.Ordinal))
            {
                registry.Keys.Put(name, key, overwrite: false);
                await context.RequestServices.GetRequiredService<Cluster.DatabaseGroups>().ReconcileAsync(context.RequestAborted).ConfigureAwait(false);
                continue;
            }
            var info = cluster.Read(s => s.Nodes.GetValueOrDefault(node)) ?? throw new BadRequestException($"Node {node} is not part of the cluster.");
            if (!info.Url.StartsWith("https:", StringComparison.OrdinalIgnoreCase))
                throw new BadRequestException($"Node {node} does not use HTTPS: a key is never sent in the clear.");
            var http = context.RequestServices.GetRequiredService<Cluster.NodeClient>().Http;
            using var content = new StringContent(key, Encoding.UTF8, "text/plain");
            using var answer = await http.PostAsync($"{info.Url.TrimEnd('/')}/admin/secrets?name={Uri.EscapeDataString(name)}", content, context.RequestAborted).ConfigureAwait(false);
            if (!answer.IsSuccessStatusCode)
                throw new BadRequestException($"Node {node} refused the key ({(int)answer.StatusCode}): {await answer.Content.ReadAsStringAsync(context.RequestAborted).ConfigureAwait(false)}");
        }
        await JsonResponse.EmptyAsync(context, 201).ConfigureAwait(false);
    }
}
