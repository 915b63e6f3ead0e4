using RavenLite.Server.Cluster;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// A database's group (docs/cluster.md "Database groups"): <c>PUT /admin/databases/node?name=&amp;node=&amp;mentor=</c> adds a node
/// as a promotable (fed by the mentor), <c>POST /admin/databases/promote?name=&amp;node=</c> makes a promotable or rehab a member at once,
/// <c>POST /admin/databases/reorder?name=</c> (<c>{MembersOrder: [tags]}</c>) sets the order clients prefer the members in.
/// </summary>
public static class DatabaseGroupEndpoints
{
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPut("/admin/databases/node", AddNode).Requires(Access.Operator);
        app.MapPost("/admin/databases/promote", Promote).Requires(Access.Operator);
        app.MapPost("/admin/databases/reorder", Reorder).Requires(Access.Operator);
        app.MapGet("/admin/cluster/caught-up", CaughtUp).Requires(Access.ClusterAdmin);
    }

    /// <summary>What the observer asks a mentor: <c>{CaughtUp}</c> — whether node <c>?node=</c> has acknowledged all this instance of <c>?name=</c> holds.</summary>
    private static async Task CaughtUp(HttpContext context)
    {
        string name = RequestParsing.Required(context.Request, "name");
        string tag = RequestParsing.Required(context.Request, "node");
        var db = context.RequestServices.GetRequiredService<Databases.DatabaseRegistry>().Acquire(name);
        bool caughtUp;
        try
        {
            caughtUp = db.Replication.CaughtUp(tag);
        }
        finally
        {
            db.Release();
        }
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteBoolean("CaughtUp", caughtUp);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static async Task AddNode(HttpContext context)
    {
        string name = RequestParsing.Required(context.Request, "name");
        string? tag = context.Request.Query["node"].FirstOrDefault() is { Length: > 0 } t ? t : null;
        var groups = context.RequestServices.GetRequiredService<DatabaseGroups>();
        string? mentor = context.Request.Query["mentor"].FirstOrDefault() is { Length: > 0 } m ? m : null;
        var (index, added) = await groups.AddNodeAsync(name, tag, mentor, context.RequestAborted).ConfigureAwait(false);
        var node = context.RequestServices.GetRequiredService<ClusterNode>();
        var (group, url) = node.Read(s => (s.Databases[name], s.Nodes[added].Url));
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", index);
            w.WriteString("Name", name);
            w.WriteStartObject("Topology");
            WriteTags(w, "Members", group.Members);
            WriteTags(w, "Promotables", group.Promotables);
            WriteTags(w, "Rehabs", group.Rehabs);
            w.WriteStartObject("PredefinedMentors");
            foreach (var (promotable, predefined) in group.PredefinedMentors)
                w.WriteString(promotable, predefined);
            w.WriteEndObject();
            w.WriteNumber("ReplicationFactor", group.All.Count());
            w.WriteEndObject();
            w.WriteStartArray("NodesAddedTo");
            w.WriteStringValue(url);
            w.WriteEndArray();
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static async Task Promote(HttpContext context)
    {
        string name = RequestParsing.Required(context.Request, "name");
        string tag = RequestParsing.Required(context.Request, "node");
        var node = context.RequestServices.GetRequiredService<ClusterNode>();
        var group = node.Read(s => s.Databases.GetValueOrDefault(name)) ?? throw new DatabaseMissingException(name);
        if (!group.Promotables.Contains(tag) && !group.Rehabs.Contains(tag))
            throw new BadRequestException($"Node {tag} is not a promotable or rehab of database '{name}' (members: {string.Join(", ", group.Members)}).");
        long index = await node.SendAsync(ClusterCommands.MemberState(name, tag, rehab: false), context.RequestAborted).ConfigureAwait(false);
        await WriteIndexAsync(context, index).ConfigureAwait(false);
    }

    private static async Task Reorder(HttpContext context)
    {
        string name = RequestParsing.Required(context.Request, "name");
        using var body = await RequestBody.ReadJsonAsync(context, "members order").ConfigureAwait(false);
        var root = body.RootElement;
        JsonElement order = default;
        bool valid = root.ValueKind == JsonValueKind.Object && (root.TryGetProperty("MembersOrder", out order) || root.TryGetProperty("membersOrder", out order))
            && order.ValueKind == JsonValueKind.Array && order.EnumerateArray().All(m => m.ValueKind == JsonValueKind.String);
        if (!valid)
            throw new BadRequestException("The body must be {\"MembersOrder\": [node tags]}.");
        var members = order.EnumerateArray().Select(m => m.GetString()!).ToList();
        long index = await context.RequestServices.GetRequiredService<DatabaseGroups>().ReorderAsync(name, members, context.RequestAborted).ConfigureAwait(false);
        await WriteIndexAsync(context, index).ConfigureAwait(false);
    }

    private static void WriteTags(Utf8JsonWriter w, string name, IEnumerable<string> tags)
    {
        w.WriteStartArray(name);
        foreach (string t in tags)
            w.WriteStringValue(t);
        w.WriteEndArray();
    }

    private static Task WriteIndexAsync(HttpContext context, long index) =>
        JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", index);
            w.WriteEndObject();
        });
}
