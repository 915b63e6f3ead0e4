namespace RavenLite.Server.Cluster;

/// <summary>
/// What the cluster agrees on through Raft (docs/cluster.md): its topology id and its nodes — each node's tag, HTTP URL,
/// Raft endpoint and role (member or watcher). Changed only by applying committed commands
/// (<see cref="ClusterCommands"/>) in log order, so every node holds the same state at the same index.
/// </summary>
public sealed class ClusterState
{
    private readonly SortedDictionary<string, ClusterNodeInfo> _nodes = new(StringComparer.Ordinal);
    private readonly SortedDictionary<string, DatabaseGroup> _databases = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>The cluster's id, chosen by the node that started it.</summary>
    public string TopologyId { get; private set; } = "";

    /// <summary>The Raft index of the last command that changed the topology (the clients' topology etag).</summary>
    public long TopologyEtag { get; private set; }

    /// <summary>The last Raft index applied.</summary>
    public long LastApplied { get; private set; }

    /// <summary>The nodes, by tag.</summary>
    public IReadOnlyDictionary<string, ClusterNodeInfo> Nodes => _nodes;

    /// <summary>The databases placed on groups of nodes, by name.</summary>
    public IReadOnlyDictionary<string, DatabaseGroup> Databases => _databases;

    /// <summary>The tag of the node whose Raft endpoint is <paramref name="raftEndPoint"/>, or null.</summary>
    public string? TagOf(string raftEndPoint) => _nodes.FirstOrDefault(n => n.Value.RaftEndPoint == raftEndPoint).Key;

    /// <summary>The tag the next added node gets: the first of A…Z, then AA…ZZ, that no node has.</summary>
    public string NextTag()
    {
        for (char c = 'A'; c <= 'Z'; c++)
            if (!_nodes.ContainsKey(c.ToString()))
                return c.ToString();
        for (char a = 'A'; a <= 'Z'; a++)
            for (char b = 'A'; b <= 'Z'; b++)
                if (!_nodes.ContainsKey($"{a}{b}"))
                    return $"{a}{b}";
        throw new InvalidOperationException("The cluster has no free node tag left.");
    }

    /// <summary>Applies one committed command at <paramref name="index"/>; unknown commands are left (a newer node's).</summary>
    public void Apply(JsonElement command, long index)
    {
        switch (command.GetProperty("Type").GetString())
        {
            case ClusterCommands.Bootstrap:
                TopologyId = command.GetProperty(nameof(TopologyId)).GetString()!;
                goto case ClusterCommands.AddNode;
            case ClusterCommands.AddNode:
                _nodes[command.GetProperty("Tag").GetString()!] = new ClusterNodeInfo(command.GetProperty("Url").GetString()!,
                    command.GetProperty("RaftEndPoint").GetString()!, command.TryGetProperty("Watcher", out var w) && w.GetBoolean());
                TopologyEtag = index;
                break;
            case ClusterCommands.RemoveNode:
                _nodes.Remove(command.GetProperty("Tag").GetString()!);
                TopologyEtag = index;
                break;
            case ClusterCommands.PutDatabaseGroup:
                _databases[command.GetProperty("Name").GetString()!] = new DatabaseGroup(
                    [.. command.GetProperty("Members").EnumerateArray().Select(m => m.GetString()!)], index);
                break;
        }
        LastApplied = index;
    }

    /// <summary>The state as JSON (a snapshot).</summary>
    public void Write(Utf8JsonWriter w)
    {
        w.WriteStartObject();
        w.WriteString(nameof(TopologyId), TopologyId);
        w.WriteNumber(nameof(TopologyEtag), TopologyEtag);
        w.WriteNumber(nameof(LastApplied), LastApplied);
        w.WriteStartObject(nameof(Nodes));
        foreach (var (tag, node) in _nodes)
        {
            w.WriteStartObject(tag);
            w.WriteString(nameof(node.Url), node.Url);
            w.WriteString(nameof(node.RaftEndPoint), node.RaftEndPoint);
            w.WriteBoolean(nameof(node.Watcher), node.Watcher);
            w.WriteEndObject();
        }
        w.WriteEndObject();
        w.WriteStartObject(nameof(Databases));
        foreach (var (name, group) in _databases)
        {
            w.WriteStartObject(name);
            w.WriteStartArray(nameof(group.Members));
            foreach (string m in group.Members)
                w.WriteStringValue(m);
            w.WriteEndArray();
            w.WriteNumber(nameof(group.Etag), group.Etag);
            w.WriteEndObject();
        }
        w.WriteEndObject();
        w.WriteEndObject();
    }

    /// <summary>Replaces the state with a snapshot's.</summary>
    public void Read(JsonElement snapshot)
    {
        TopologyId = snapshot.GetProperty(nameof(TopologyId)).GetString() ?? "";
        TopologyEtag = snapshot.GetProperty(nameof(TopologyEtag)).GetInt64();
        LastApplied = snapshot.GetProperty(nameof(LastApplied)).GetInt64();
        _nodes.Clear();
        foreach (var n in snapshot.GetProperty(nameof(Nodes)).EnumerateObject())
            _nodes[n.Name] = new ClusterNodeInfo(n.Value.GetProperty("Url").GetString()!, n.Value.GetProperty("RaftEndPoint").GetString()!, n.Value.GetProperty("Watcher").GetBoolean());
        _databases.Clear();
        if (snapshot.TryGetProperty(nameof(Databases), out var databases))
            foreach (var d in databases.EnumerateObject())
                _databases[d.Name] = new DatabaseGroup([.. d.Value.GetProperty("Members").EnumerateArray().Select(m => m.GetString()!)], d.Value.GetProperty("Etag").GetInt64());
    }
}

/// <summary>A node of the cluster: its HTTP URL, its Raft endpoint (<c>host:port</c>), and whether it only watches (never votes for documents' groups).</summary>
public sealed record ClusterNodeInfo(string Url, string RaftEndPoint, bool Watcher);

/// <summary>A database's group: the nodes (tags, in the clients' order) that each hold an instance, replicating to each other; <paramref name="Etag"/> is the Raft index that placed it.</summary>
public sealed record DatabaseGroup(IReadOnlyList<string> Members, long Etag);
