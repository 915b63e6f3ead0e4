using RavenLite.Server.Cluster;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Single-node topology (docs/protocol.md §2): <c>/topology</c>, <c>/cluster/topology</c>,
/// <c>/cluster/node-info</c>, <c>/build/version</c>. The node's URL is taken from the request's Host
/// header; etags are constant so clients never need a refresh. No ETag header (a cached topology
/// answer must never be replayed).
/// </summary>
public static class TopologyEndpoints
{
    /// <summary>Etag of the (never changing) topology.</summary>
    public const long TopologyEtag = 1;

    /// <summary>A fixed topology id for this server process family.</summary>
    public static readonly string TopologyId = "8b6c0c4e-8a4d-4c3a-9d55-1c0ff6a1e7a1";

    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapGet("/topology", GetTopology).Requires(Access.ValidUser);
        app.MapGet("/cluster/topology", GetClusterTopology).Requires(Access.ValidUser);
        app.MapGet("/cluster/node-info", GetNodeInfo).Requires(Access.ValidUser);
        app.MapGet("/build/version", GetVersion).Requires(Access.ValidUser);
    }

    private static string NodeUrl(HttpContext context) => $"{context.Request.Scheme}://{context.Request.Host}";

    private static Task GetTopology(HttpContext context)
    {
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        string name = RequestParsing.Required(context.Request, "name");
        var cluster = context.RequestServices.GetRequiredService<ClusterNode>();
        // A database of a group: its members, in order (docs/cluster.md "Database groups"); else this node alone.
        var group = cluster.Read(s => s.Databases.TryGetValue(name, out var g)
            ? (Members: g.Members.Where(s.Nodes.ContainsKey).Select(m => (Tag: m, s.Nodes[m].Url, Role: "Member"))
                .Concat(g.Rehabs.Where(s.Nodes.ContainsKey).Select(r => (Tag: r, s.Nodes[r].Url, Role: "Rehab"))).ToList(),
                Promotables: g.Promotables.Where(s.Nodes.ContainsKey).Select(p => (Tag: p, s.Nodes[p].Url, Role: "Promotable")).ToList(), g.Etag)
            : default);
        string stored = registry.Find(name) ?? (group.Members != null ? name : throw new DatabaseMissingException(name));
        var nodes = group.Members ?? [(NodeTag.Of(context), NodeUrl(context), "Member")];
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            WriteServerNodes(w, "Nodes", nodes, stored);
            WriteServerNodes(w, "Promotables", group.Promotables ?? [], stored);
            w.WriteNumber("Etag", Math.Max(group.Etag, TopologyEtag));
            w.WriteEndObject();
        });
    }

    /// <summary>RavenDB's <c>ServerNode</c>s: <c>[{Url, ClusterTag, ServerRole, Database}]</c>.</summary>
    private static void WriteServerNodes(Utf8JsonWriter w, string name, IEnumerable<(string Tag, string Url, string Role)> nodes, string database)
    {
        w.WriteStartArray(name);
        foreach (var (tag, url, role) in nodes)
        {
            w.WriteStartObject();
            w.WriteString("Url", url);
            w.WriteString("ClusterTag", tag);
            w.WriteString("ServerRole", role);
            w.WriteString("Database", database);
            w.WriteEndObject();
        }
        w.WriteEndArray();
    }

    /// <summary>
    /// RavenDB's cluster topology as this node knows it (docs/cluster.md): every node by tag with its URL — members, and
    /// watchers apart — the leader, the Raft term, this node's Raft state and whether it reaches each other node.
    /// </summary>
    private static Task GetClusterTopology(HttpContext context)
    {
        var node = context.RequestServices.GetRequiredService<ClusterNode>();
        var (topologyId, etag, nodes) = node.Read(s => (s.TopologyId, s.TopologyEtag, s.Nodes.ToList()));
        if (nodes.Count == 0) // a node standing by (or not yet recorded): itself alone
            nodes = [new(NodeTag.Of(context), new ClusterNodeInfo(NodeUrl(context), ClusterNode.Format(node.RaftEndPoint), false))];
        var reachable = node.Reachable;
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartObject("Topology");
            w.WriteString("TopologyId", topologyId.Length > 0 ? topologyId : TopologyId);
            w.WriteStartObject("AllNodes");
            foreach (var (tag, n) in nodes)
                w.WriteString(tag, n.Url);
            w.WriteEndObject();
            w.WriteStartObject("Members");
            foreach (var (tag, n) in nodes.Where(n => !n.Value.Watcher))
                w.WriteString(tag, n.Url);
            w.WriteEndObject();
            w.WriteStartObject("Promotables");
            w.WriteEndObject();
            w.WriteStartObject("Watchers");
            foreach (var (tag, n) in nodes.Where(n => n.Value.Watcher))
                w.WriteString(tag, n.Url);
            w.WriteEndObject();
            w.WriteString("LastNodeId", nodes.Max(n => n.Key));
            w.WriteNumber("Etag", Math.Max(etag, TopologyEtag));
            w.WriteEndObject();
            w.WriteNumber("Etag", Math.Max(etag, TopologyEtag));
            if (node.LeaderTag is { } leader)
                w.WriteString("Leader", leader);
            else
                w.WriteNull("Leader");
            w.WriteString("NodeTag", NodeTag.Of(context));
            w.WriteNumber("CurrentTerm", node.Term);
            w.WriteStartObject("Status");
            foreach (var (tag, n) in nodes)
            {
                if (tag == NodeTag.Of(context))
                    continue;
                w.WriteStartObject(tag);
                w.WriteString("Name", tag);
                w.WriteBoolean("Connected", reachable.TryGetValue(n.RaftEndPoint, out bool up) && up);
                w.WriteEndObject();
            }
            w.WriteEndObject();
            w.WriteString("CurrentState", node.CurrentState);
            w.WriteString("ServerRole", node.CurrentState == "Leader" ? "Leader" : "Member");
            w.WriteEndObject();
        });
    }

    private static Task GetNodeInfo(HttpContext context)
    {
        var node = context.RequestServices.GetRequiredService<ClusterNode>();
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteString("NodeTag", NodeTag.Of(context));
            w.WriteString("TopologyId", node.Read(s => s.TopologyId) is { Length: > 0 } id ? id : TopologyId);
            w.WriteNull("Certificate");
            w.WriteString("ClusterStatus", "Joined");
            w.WriteNumber("NumberOfCores", Environment.ProcessorCount);
            double gb = GC.GetGCMemoryInfo().TotalAvailableMemoryBytes / (double)(1L << 30);
            w.WriteNumber("InstalledMemoryInGb", Math.Round(gb, 1));
            w.WriteNumber("UsableMemoryInGb", Math.Round(gb, 1));
            w.WriteNull("BuildInfo");
            w.WriteNull("OsInfo");
            w.WriteString("ServerId", TopologyId);
            w.WriteString("CurrentState", node.CurrentState);
            w.WriteBoolean("HasFixedPort", true);
            w.WriteNumber("ServerSchemaVersion", 0);
            w.WriteString("ServerRole", "Member");
            w.WriteString("RaftEndPoint", ClusterNode.Format(node.RaftEndPoint));
            w.WriteEndObject();
        });
    }

    private static Task GetVersion(HttpContext context) => JsonResponse.WriteAsync(context, 200, w =>
    {
        string version = typeof(TopologyEndpoints).Assembly.GetName().Version?.ToString() ?? "0.1.0";
        w.WriteStartObject();
        w.WriteString("ProductVersion", "RavenLite " + version);
        w.WriteNumber("BuildVersion", 1);
        w.WriteString("CommitHash", "");
        w.WriteString("FullVersion", version);
        w.WriteEndObject();
    });
}
