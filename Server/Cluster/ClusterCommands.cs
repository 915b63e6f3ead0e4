namespace RavenLite.Server.Cluster;

/// <summary>The commands of the cluster's Raft log (docs/cluster.md "Log"): one JSON object each, <c>{Type, ...}</c>.</summary>
public static class ClusterCommands
{
    /// <summary>The first command of a new cluster: its topology id and its first node.</summary>
    public const string Bootstrap = "Bootstrap";

    /// <summary>A node joins: <c>{Tag, Url, RaftEndPoint, Watcher}</c>.</summary>
    public const string AddNode = "AddNode";

    /// <summary>A node leaves: <c>{Tag}</c>.</summary>
    public const string RemoveNode = "RemoveNode";

    /// <summary>
    /// A database is placed on a group of nodes: <c>{RequestId, Name, Members: [tags], ClusterTransactionId, Encrypted?}</c>; it does
    /// not happen (an unsuccessful result) when a group of that name exists.
    /// </summary>
    public const string PutDatabaseGroup = "PutDatabaseGroup";

    public static byte[] Group(string requestId, string name, IEnumerable<string> members, string clusterTransactionId, bool encrypted = false) => Encode(w =>
    {
        w.WriteStartObject();
        w.WriteString("Type", PutDatabaseGroup);
        w.WriteString("RequestId", requestId);
        w.WriteString("Name", name);
        w.WriteString("ClusterTransactionId", clusterTransactionId);
        if (encrypted)
            w.WriteBoolean("Encrypted", true);
        w.WriteStartArray("Members");
        foreach (string m in members)
            w.WriteStringValue(m);
        w.WriteEndArray();
        w.WriteEndObject();
    });

    /// <summary>A compare-exchange put of a group's database: <c>{RequestId, Database, Key, Index (expected; 0: absent), Value (JSON text)}</c>.</summary>
    public const string PutValue = "PutCompareExchange";

    /// <summary>A compare-exchange delete: <c>{RequestId, Database, Key, Index}</c>.</summary>
    public const string DeleteValue = "DeleteCompareExchange";

    public static byte[] Value(string type, string requestId, string database, string key, long expectedIndex, string? json) => Encode(w =>
    {
        w.WriteStartObject();
        w.WriteString("Type", type);
        w.WriteString("RequestId", requestId);
        w.WriteString("Database", database);
        w.WriteString("Key", key);
        w.WriteNumber("Index", expectedIndex);
        if (json != null)
            w.WriteString("Value", json);
        w.WriteEndObject();
    });

    /// <summary>Takes the next value of an identity of a group's database: <c>{RequestId, Database, Name}</c>.</summary>
    public const string NextIdentity = "NextIdentity";

    public static byte[] Identity(string requestId, string database, string name) => Encode(w =>
    {
        w.WriteStartObject();
        w.WriteString("Type", NextIdentity);
        w.WriteString("RequestId", requestId);
        w.WriteString("Database", database);
        w.WriteString("Name", name);
        w.WriteEndObject();
    });

    /// <summary>The cluster observer moves a group's member to rehab or back: <c>{Database, Tag, Rehab}</c>.</summary>
    public const string SetMemberState = "SetMemberState";

    public static byte[] MemberState(string database, string tag, bool rehab) => Encode(w =>
    {
        w.WriteStartObject();
        w.WriteString("Type", SetMemberState);
        w.WriteString("Database", database);
        w.WriteString("Tag", tag);
        w.WriteBoolean("Rehab", rehab);
        w.WriteEndObject();
    });

    /// <summary>
    /// A cluster-wide transaction of a group's database: <c>{RequestId, Database, Values: [{Key, Index, Value?}],
    /// Guards: [{Id, Index, Delete}], Documents: [{Type, Id, Document?}]}</c> (a value without Value is deleted).
    /// </summary>
    public const string ClusterTransaction = "ClusterTransaction";

    /// <summary>A change to a group database's record, for every member to apply: <c>{RequestId, Database, Kind, Body}</c> (<see cref="Databases.RecordChanges"/>).</summary>
    public const string DatabaseRecordChange = "DatabaseRecordChange";

    public static byte[] RecordChange(string requestId, string database, string kind, JsonElement body) => Encode(w =>
    {
        w.WriteStartObject();
        w.WriteString("Type", DatabaseRecordChange);
        w.WriteString("RequestId", requestId);
        w.WriteString("Database", database);
        w.WriteString("Kind", kind);
        w.WritePropertyName("Body");
        body.WriteTo(w);
        w.WriteEndObject();
    });

    /// <summary>
    /// A server-wide item every node keeps (a registered certificate, the server's client configuration):
    /// <c>{RequestId, Key, Value?}</c>, the value as JSON text; without Value the item is deleted.
    /// </summary>
    public const string PutServerItem = "PutServerItem";

    public static byte[] ServerItem(string requestId, string key, string? json) => Encode(w =>
    {
        w.WriteStartObject();
        w.WriteString("Type", PutServerItem);
        w.WriteString("RequestId", requestId);
        w.WriteString("Key", key);
        if (json != null)
            w.WriteString("Value", json);
        w.WriteEndObject();
    });

    /// <summary>A node joins a database's group as a promotable: <c>{Database, Tag, Mentor?}</c> (the member to feed it).</summary>
    public const string AddDatabaseNode = "AddDatabaseNode";

    /// <summary>A group's members in a new order (the clients' preference): <c>{Database, Members}</c>.</summary>
    public const string ReorderDatabaseGroup = "ReorderDatabaseGroup";

    /// <summary>A group's database is deleted: every node deletes its instance: <c>{Database}</c>.</summary>
    public const string DeleteDatabaseGroup = "DeleteDatabaseGroup";

    public static byte[] GroupChange(string type, string database, string? tag = null, IEnumerable<string>? members = null, string? mentor = null) => Encode(w =>
    {
        w.WriteStartObject();
        w.WriteString("Type", type);
        w.WriteString("Database", database);
        if (tag != null)
            w.WriteString("Tag", tag);
        if (mentor != null)
            w.WriteString("Mentor", mentor);
        if (members != null)
        {
            w.WriteStartArray("Members");
            foreach (string m in members)
                w.WriteStringValue(m);
            w.WriteEndArray();
        }
        w.WriteEndObject();
    });

    public static byte[] Encode(Action<Utf8JsonWriter> write)
    {
        var buffer = new ArrayBufferWriter<byte>(256);
        using (var w = new Utf8JsonWriter(buffer))
            write(w);
        return buffer.WrittenSpan.ToArray();
    }

    public static byte[] Node(string type, string tag, ClusterNodeInfo node, string? topologyId = null) => Encode(w =>
    {
        w.WriteStartObject();
        w.WriteString("Type", type);
        if (topologyId != null)
            w.WriteString("TopologyId", topologyId);
        w.WriteString("Tag", tag);
        w.WriteString("Url", node.Url);
        w.WriteString("RaftEndPoint", node.RaftEndPoint);
        w.WriteBoolean("Watcher", node.Watcher);
        w.WriteEndObject();
    });

    /// <summary>A node becomes a watcher (never leads) or a member again: <c>{Tag, Watcher}</c>.</summary>
    public const string SetNodeRole = "SetNodeRole";

    public static byte[] NodeRole(string tag, bool watcher) => Encode(w =>
    {
        w.WriteStartObject();
        w.WriteString("Type", SetNodeRole);
        w.WriteString("Tag", tag);
        w.WriteBoolean("Watcher", watcher);
        w.WriteEndObject();
    });

    public static byte[] Remove(string tag) => Encode(w =>
    {
        w.WriteStartObject();
        w.WriteString("Type", RemoveNode);
        w.WriteString("Tag", tag);
        w.WriteEndObject();
    });
}
