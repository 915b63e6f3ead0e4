using System.Collections.Immutable;

namespace RavenLite.Server.Cluster;

/// <summary>
/// What the cluster agrees on through Raft (docs/cluster.md): its topology id and its nodes — each node's tag, HTTP URL,
/// Raft endpoint and role (member or watcher). Changed only by applying committed commands
/// (<see cref="ClusterCommands"/>) in log order, so every node holds the same state at the same index.
/// </summary>
public sealed class ClusterState
{
    private readonly SortedDictionary<string, ClusterNodeInfo> _nodes = new(StringComparer.Ordinal);
    // Immutable and replaced whole on each change (groups change rarely): every request to a database reads it without
    // the state's lock (Groups).
    private volatile ImmutableSortedDictionary<string, DatabaseGroup> _databases = ImmutableSortedDictionary.Create<string, DatabaseGroup>(StringComparer.OrdinalIgnoreCase);
    private readonly Dictionary<string, SortedDictionary<string, ClusterValue>> _values = new(StringComparer.OrdinalIgnoreCase); // database → lower-cased key → value
    private readonly Dictionary<string, Dictionary<string, long>> _identities = new(StringComparer.OrdinalIgnoreCase); // database → "prefix|" → last value
    private readonly Dictionary<string, ClusterValueResult?> _recent = new(StringComparer.Ordinal); // request id → result, of the latest commands
    private readonly Queue<string> _recentOrder = new(); // the same ids, oldest first
    private readonly SortedSet<string> _deleted = new(StringComparer.OrdinalIgnoreCase); // groups deleted: their members delete their instances
    private readonly Dictionary<string, List<RecordChange>> _recordChanges = new(StringComparer.OrdinalIgnoreCase); // database → every change, by index
    private readonly Dictionary<string, List<ClusterTransaction>> _transactions = new(StringComparer.OrdinalIgnoreCase); // database → latest committed, by index
    private readonly SortedDictionary<string, ServerItem> _serverItems = new(StringComparer.Ordinal); // key → item; a deleted one is kept without its value

    /// <summary>
    /// How many committed cluster-wide transactions a database keeps for its members to apply. A member further behind
    /// gets those documents by replication from the others (with the same <c>RAFT:</c> entries), as any other write.
    /// </summary>
    public const int TransactionsKept = 1024;

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

    /// <summary>The database groups as last applied, readable without the state's lock (an immutable map).</summary>
    public ImmutableSortedDictionary<string, DatabaseGroup> Groups => _databases;

    /// <summary>Names of deleted groups (until a group of that name is made again): each node deletes its instance.</summary>
    public IReadOnlyCollection<string> Deleted => _deleted;

    /// <summary>A database's compare-exchange value (key in any casing), or null.</summary>
    public ClusterValue? Value(string database, string key) =>
        _values.TryGetValue(database, out var values) && values.TryGetValue(key.ToLowerInvariant(), out var v) ? v : null;

    /// <summary>A database's compare-exchange values whose keys start with <paramref name="prefix"/>, in key order.</summary>
    public List<ClusterValue> Values(string database, string prefix, int start, int pageSize) =>
        _values.TryGetValue(database, out var values)
            ? [.. values.Where(v => v.Key.StartsWith(prefix.ToLowerInvariant(), StringComparison.Ordinal)).Skip(start).Take(pageSize).Select(v => v.Value)]
            : [];

    /// <summary>A database's identities (<c>"prefix|"</c> → last value handed out).</summary>
    public IReadOnlyDictionary<string, long> Identities(string database) =>
        _identities.TryGetValue(database, out var identities) ? identities : new Dictionary<string, long>();

    /// <summary>A database's committed cluster-wide transactions after Raft index <paramref name="after"/>, in index order.</summary>
    public List<ClusterTransaction> Transactions(string database, long after) =>
        _transactions.TryGetValue(database, out var list) ? list.FindAll(t => t.Index > after) : [];

    /// <summary>The server-wide items whose keys start with <paramref name="prefix"/>, deleted ones included (their Json null).</summary>
    public List<ServerItem> ServerItems(string prefix) => [.. _serverItems.Values.Where(i => i.Key.StartsWith(prefix, StringComparison.Ordinal))];

    /// <summary>A database's record changes after Raft index <paramref name="after"/>, in index order.</summary>
    public List<RecordChange> RecordChanges(string database, long after) =>
        _recordChanges.TryGetValue(database, out var list) ? list.FindAll(c => c.Index > after) : [];

    /// <summary>How an identity is named: lower-cased, ending with one <c>|</c>.</summary>
    public static string IdentityKey(string name) => name.TrimEnd('|').ToLowerInvariant() + "|";

    /// <summary>
    /// How many of the latest commands with a request id are remembered, with their results. A command whose request id
    /// is remembered is not applied again: a node (or a client, with RavenDB's <c>raft-request-id</c>) that could not
    /// tell whether its command committed — the leader failed meanwhile — sends it again safely, and reads the result
    /// the first one had.
    /// </summary>
    public const int RecentKept = 4096;

    /// <summary>The result a command with <paramref name="requestId"/> had, while it is remembered (null: not applied, or one without a result).</summary>
    public ClusterValueResult? Result(string requestId) => _recent.GetValueOrDefault(requestId);

    /// <summary>True when the command with <paramref name="requestId"/> was applied (and is still remembered).</summary>
    public bool Applied(string requestId) => _recent.ContainsKey(requestId);

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
        if (command.TryGetProperty("RequestId", out var requestId) && _recent.ContainsKey(requestId.GetString()!))
        {
            LastApplied = index; // sent again: applied once already
            return;
        }
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
            case ClusterCommands.SetNodeRole:
            {
                string tag = command.GetProperty("Tag").GetString()!;
                if (_nodes.TryGetValue(tag, out var info))
                {
                    _nodes[tag] = info with { Watcher = command.GetProperty("Watcher").GetBoolean() };
                    TopologyEtag = index;
                }
                break;
            }
            case ClusterCommands.RemoveNode:
                _nodes.Remove(command.GetProperty("Tag").GetString()!);
                TopologyEtag = index;
                break;
            case ClusterCommands.PutValue:
            case ClusterCommands.DeleteValue:
                ApplyValue(command, index);
                break;
            case ClusterCommands.NextIdentity:
            {
                string database = command.GetProperty("Database").GetString()!;
                string name = IdentityKey(command.GetProperty("Name").GetString()!);
                if (!_identities.TryGetValue(database, out var identities))
                    _identities[database] = identities = new Dictionary<string, long>(StringComparer.Ordinal);
                long next = identities.GetValueOrDefault(name) + 1;
                identities[name] = next;
                Answer(command, new ClusterValueResult(true, next, null));
                break;
            }
            case ClusterCommands.SetMemberState:
            {
                string database = command.GetProperty("Database").GetString()!;
                string tag = command.GetProperty("Tag").GetString()!;
                bool rehab = command.GetProperty("Rehab").GetBoolean();
                if (_databases.TryGetValue(database, out var group) && group.All.Contains(tag))
                {
                    _databases = _databases.SetItem(database, rehab
                        ? group with { Members = [.. group.Members.Where(m => m != tag)], Etag = index, Rehabs = [.. group.Rehabs.Where(r => r != tag), tag] }
                        : group with
                        {
                            Members = [.. group.Members.Where(m => m != tag), tag],
                            Etag = index,
                            Rehabs = [.. group.Rehabs.Where(r => r != tag)],
                            Promotables = [.. group.Promotables.Where(p => p != tag)],
                        });
                }
                break;
            }
            case ClusterCommands.PutDatabaseGroup:
                if (command.TryGetProperty("RequestId", out _))
                {
                    // Asked of any node, so two may race for one name: the first committed wins.
                    bool exists = _databases.ContainsKey(command.GetProperty("Name").GetString()!);
                    Answer(command, new ClusterValueResult(!exists, index, null));
                    if (exists)
                        break;
                }
                _deleted.Remove(command.GetProperty("Name").GetString()!);
                _databases = _databases.SetItem(command.GetProperty("Name").GetString()!, new DatabaseGroup(
                    [.. command.GetProperty("Members").EnumerateArray().Select(m => m.GetString()!)], index)
                {
                    ClusterTransactionId = command.TryGetProperty("ClusterTransactionId", out var id) ? id.GetString() : null,
                    Encrypted = command.TryGetProperty("Encrypted", out var encrypted) && encrypted.ValueKind == JsonValueKind.True,
                });
                break;
            case ClusterCommands.ClusterTransaction:
                ApplyTransaction(command, index);
                break;
            case ClusterCommands.PutServerItem:
            {
                string key = command.GetProperty("Key").GetString()!;
                _serverItems[key] = new ServerItem(key, index, command.TryGetProperty("Value", out var value) ? value.GetString() : null);
                Answer(command, new ClusterValueResult(true, index, null));
                break;
            }
            case ClusterCommands.AddDatabaseNode:
            {
                string database = command.GetProperty("Database").GetString()!;
                string tag = command.GetProperty("Tag").GetString()!;
                if (_databases.TryGetValue(database, out var group) && _nodes.ContainsKey(tag) && !group.All.Contains(tag))
                {
                    var mentors = new Dictionary<string, string>(group.PredefinedMentors, StringComparer.Ordinal);
                    if (command.TryGetProperty("Mentor", out var mentor) && mentor.GetString() is { Length: > 0 } m)
                        mentors[tag] = m;
                    _databases = _databases.SetItem(database, group with { Promotables = [.. group.Promotables, tag], Etag = index, PredefinedMentors = mentors });
                }
                break;
            }
            case ClusterCommands.ReorderDatabaseGroup:
            {
                string database = command.GetProperty("Database").GetString()!;
                var order = command.GetProperty("Members").EnumerateArray().Select(m => m.GetString()!).ToList();
                if (_databases.TryGetValue(database, out var group) && order.Order(StringComparer.Ordinal).SequenceEqual(group.Members.Order(StringComparer.Ordinal)))
                    _databases = _databases.SetItem(database, group with { Members = order, Etag = index });
                break;
            }
            case ClusterCommands.DeleteDatabaseGroup:
            {
                string database = command.GetProperty("Database").GetString()!;
                if (_databases.ContainsKey(database))
                {
                    _databases = _databases.Remove(database);
                    _deleted.Add(database);
                    _values.Remove(database);
                    _identities.Remove(database);
                    _transactions.Remove(database);
                    _recordChanges.Remove(database);
                }
                break;
            }
            case ClusterCommands.DatabaseRecordChange:
            {
                string database = command.GetProperty("Database").GetString()!;
                if (!_recordChanges.TryGetValue(database, out var changes))
                    _recordChanges[database] = changes = [];
                changes.Add(new RecordChange(index, command.GetProperty("Kind").GetString()!, command.GetProperty("Body").GetRawText()));
                Answer(command, null);
                break;
            }
        }
        LastApplied = index;
    }

    /// <summary>
    /// A compare-exchange put or delete: it happens when the expected index is the value's (0: absent), and a value
    /// written takes the command's Raft index as its own — the same on every node.
    /// </summary>
    private void ApplyValue(JsonElement command, long index)
    {
        string database = command.GetProperty("Database").GetString()!;
        string key = command.GetProperty("Key").GetString()!;
        long expected = command.GetProperty("Index").GetInt64();
        if (!_values.TryGetValue(database, out var values))
            _values[database] = values = new SortedDictionary<string, ClusterValue>(StringComparer.Ordinal);
        values.TryGetValue(key.ToLowerInvariant(), out var current);
        bool matches = expected == (current?.Index ?? 0);
        ClusterValueResult result;
        if (!matches)
        {
            result = new ClusterValueResult(false, current?.Index ?? 0, current?.Json);
        }
        else if (command.GetProperty("Type").GetString() == ClusterCommands.PutValue)
        {
            var written = new ClusterValue(key, index, command.GetProperty("Value").GetString()!);
            values[key.ToLowerInvariant()] = written;
            result = new ClusterValueResult(true, index, written.Json);
        }
        else
        {
            values.Remove(key.ToLowerInvariant());
            result = new ClusterValueResult(current != null, index, current?.Json);
        }
        Answer(command, result);
    }

    /// <summary>
    /// A cluster-wide transaction of a group's database (docs/cluster.md "Cluster-wide transactions"): every
    /// compare-exchange index and every document's atomic guard (<c>rvn-atomic/{id}</c>, whose index is the Raft index
    /// of the last cluster-wide transaction that wrote the document) must be as the transaction expects, or nothing
    /// happens and the answer names each mismatch. Otherwise its values and guards take the command's Raft index, and
    /// its documents are kept for every member to write (each member applies them in index order).
    /// </summary>
    private void ApplyTransaction(JsonElement command, long index)
    {
        string database = command.GetProperty("Database").GetString()!;
        if (!_values.TryGetValue(database, out var values))
            _values[database] = values = new SortedDictionary<string, ClusterValue>(StringComparer.Ordinal);
        var violations = new List<string>();
        foreach (var v in command.GetProperty("Values").EnumerateArray())
        {
            string key = v.GetProperty("Key").GetString()!;
            long expected = v.GetProperty("Index").GetInt64();
            long current = values.GetValueOrDefault(key.ToLowerInvariant())?.Index ?? 0;
            bool delete = !v.TryGetProperty("Value", out _);
            if (current != expected && !(delete && expected == 0 && current != 0))
                violations.Add($"compare-exchange '{key}': expected index {expected}, actual {current}");
        }
        foreach (var g in command.GetProperty("Guards").EnumerateArray())
        {
            string id = g.GetProperty("Id").GetString()!;
            long expected = g.GetProperty("Index").GetInt64();
            long current = values.GetValueOrDefault(ClusterValue.GuardOf(id))?.Index ?? 0;
            if (current != expected)
                violations.Add(expected == 0
                    ? $"document '{id}' was written by another cluster-wide transaction (at index {current}), but this one expected it to be new"
                    : $"document '{id}' was last written by the cluster-wide transaction at index {current}, but this one loaded the version of index {expected}");
        }
        if (violations.Count > 0)
        {
            Answer(command, new ClusterValueResult(false, 0, string.Join("; ", violations)));
            return;
        }
        foreach (var v in command.GetProperty("Values").EnumerateArray())
        {
            string key = v.GetProperty("Key").GetString()!;
            if (v.TryGetProperty("Value", out var json))
                values[key.ToLowerInvariant()] = new ClusterValue(key, index, json.GetString()!);
            else
                values.Remove(key.ToLowerInvariant());
        }
        foreach (var g in command.GetProperty("Guards").EnumerateArray())
        {
            string guard = ClusterValue.GuardOf(g.GetProperty("Id").GetString()!);
            if (g.GetProperty("Delete").GetBoolean())
                values.Remove(guard);
            else
                values[guard] = new ClusterValue(guard, index, ClusterValue.GuardJson);
        }
        if (!_transactions.TryGetValue(database, out var transactions))
            _transactions[database] = transactions = [];
        transactions.Add(new ClusterTransaction(index, command.GetProperty("RequestId").GetString()!, command.GetProperty("Documents").GetRawText()));
        if (transactions.Count > TransactionsKept)
            transactions.RemoveRange(0, transactions.Count - TransactionsKept);
        Answer(command, new ClusterValueResult(true, index, null));
    }

    /// <summary>Remembers a command's request id and result (the oldest remembered is forgotten past <see cref="RecentKept"/>).</summary>
    private void Answer(JsonElement command, ClusterValueResult? result)
    {
        string requestId = command.GetProperty("RequestId").GetString()!;
        _recent[requestId] = result;
        _recentOrder.Enqueue(requestId);
        while (_recentOrder.Count > RecentKept)
            _recent.Remove(_recentOrder.Dequeue());
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
            w.WriteStartArray(nameof(group.Rehabs));
            foreach (string r in group.Rehabs)
                w.WriteStringValue(r);
            w.WriteEndArray();
            w.WriteStartArray(nameof(group.Promotables));
            foreach (string p in group.Promotables)
                w.WriteStringValue(p);
            w.WriteEndArray();
            w.WriteNumber(nameof(group.Etag), group.Etag);
            if (group.ClusterTransactionId != null)
                w.WriteString(nameof(group.ClusterTransactionId), group.ClusterTransactionId);
            if (group.Encrypted)
                w.WriteBoolean(nameof(group.Encrypted), true);
            w.WriteStartObject(nameof(group.PredefinedMentors));
            foreach (var (promotable, mentor) in group.PredefinedMentors)
                w.WriteString(promotable, mentor);
            w.WriteEndObject();
            w.WriteEndObject();
        }
        w.WriteEndObject();
        w.WriteStartObject("Identities");
        foreach (var (database, identities) in _identities)
        {
            w.WriteStartObject(database);
            foreach (var (name, value) in identities)
                w.WriteNumber(name, value);
            w.WriteEndObject();
        }
        w.WriteEndObject();
        w.WriteStartObject("Values");
        foreach (var (database, values) in _values)
        {
            w.WriteStartArray(database);
            foreach (var v in values.Values)
            {
                w.WriteStartObject();
                w.WriteString("Key", v.Key);
                w.WriteNumber("Index", v.Index);
                w.WriteString("Json", v.Json);
                w.WriteEndObject();
            }
            w.WriteEndArray();
        }
        w.WriteEndObject();
        w.WriteStartArray(nameof(Deleted));
        foreach (string name in _deleted)
            w.WriteStringValue(name);
        w.WriteEndArray();
        w.WriteStartArray("Recent");
        foreach (string id in _recentOrder)
        {
            w.WriteStartObject();
            w.WriteString("RequestId", id);
            if (_recent[id] is { } r)
            {
                w.WriteBoolean("Successful", r.Successful);
                w.WriteNumber("Index", r.Index);
                if (r.Json != null)
                    w.WriteString("Json", r.Json);
            }
            w.WriteEndObject();
        }
        w.WriteEndArray();
        WriteByDatabase(w, "RecordChanges", _recordChanges, c => (c.Index, "Kind", c.Kind, "Body", c.Body));
        WriteByDatabase(w, "Transactions", _transactions, t => (t.Index, "RequestId", t.RequestId, "Documents", t.Documents));
        w.WriteStartArray("ServerItems");
        foreach (var item in _serverItems.Values)
        {
            w.WriteStartObject();
            w.WriteString("Key", item.Key);
            w.WriteNumber("Index", item.Index);
            if (item.Json != null)
                w.WriteString("Json", item.Json);
            w.WriteEndObject();
        }
        w.WriteEndArray();
        w.WriteEndObject();
    }

    /// <summary>Writes <c>{database: [{Index, (text): .., (json): {..}}]}</c> — record changes and transactions alike.</summary>
    private static void WriteByDatabase<T>(Utf8JsonWriter w, string name, Dictionary<string, List<T>> byDatabase,
        Func<T, (long Index, string TextName, string Text, string JsonName, string Json)> fields)
    {
        w.WriteStartObject(name);
        foreach (var (database, list) in byDatabase)
        {
            w.WriteStartArray(database);
            foreach (var item in list)
            {
                var (index, textName, text, jsonName, json) = fields(item);
                w.WriteStartObject();
                w.WriteNumber("Index", index);
                w.WriteString(textName, text);
                w.WritePropertyName(jsonName);
                w.WriteRawValue(json, skipInputValidation: true);
                w.WriteEndObject();
            }
            w.WriteEndArray();
        }
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
        _databases = _databases.Clear();
        if (snapshot.TryGetProperty(nameof(Databases), out var databases))
            foreach (var d in databases.EnumerateObject())
                _databases = _databases.SetItem(d.Name, new DatabaseGroup([.. d.Value.GetProperty("Members").EnumerateArray().Select(m => m.GetString()!)], d.Value.GetProperty("Etag").GetInt64())
                {
                    Rehabs = d.Value.TryGetProperty("Rehabs", out var rehabs) ? [.. rehabs.EnumerateArray().Select(r => r.GetString()!)] : [],
                    Promotables = d.Value.TryGetProperty("Promotables", out var promotables) ? [.. promotables.EnumerateArray().Select(p => p.GetString()!)] : [],
                    ClusterTransactionId = d.Value.TryGetProperty("ClusterTransactionId", out var id) ? id.GetString() : null,
                    Encrypted = d.Value.TryGetProperty("Encrypted", out var encrypted) && encrypted.ValueKind == JsonValueKind.True,
                    PredefinedMentors = d.Value.TryGetProperty("PredefinedMentors", out var mentors)
                        ? mentors.EnumerateObject().ToDictionary(m => m.Name, m => m.Value.GetString()!, StringComparer.Ordinal)
                        : new Dictionary<string, string>(StringComparer.Ordinal),
                });
        _identities.Clear();
        if (snapshot.TryGetProperty("Identities", out var allIdentities))
            foreach (var database in allIdentities.EnumerateObject())
                _identities[database.Name] = database.Value.EnumerateObject().ToDictionary(p => p.Name, p => p.Value.GetInt64(), StringComparer.Ordinal);
        _values.Clear();
        if (snapshot.TryGetProperty("Values", out var all))
        {
            foreach (var database in all.EnumerateObject())
            {
                var values = _values[database.Name] = new SortedDictionary<string, ClusterValue>(StringComparer.Ordinal);
                foreach (var v in database.Value.EnumerateArray())
                {
                    string key = v.GetProperty("Key").GetString()!;
                    values[key.ToLowerInvariant()] = new ClusterValue(key, v.GetProperty("Index").GetInt64(), v.GetProperty("Json").GetString()!);
                }
            }
        }
        _deleted.Clear();
        if (snapshot.TryGetProperty(nameof(Deleted), out var deleted))
            foreach (var name in deleted.EnumerateArray())
                _deleted.Add(name.GetString()!);
        _recent.Clear();
        _recentOrder.Clear();
        if (snapshot.TryGetProperty("Recent", out var recent))
        {
            foreach (var r in recent.EnumerateArray())
            {
                string id = r.GetProperty("RequestId").GetString()!;
                _recent[id] = r.TryGetProperty("Successful", out var ok)
                    ? new ClusterValueResult(ok.GetBoolean(), r.GetProperty("Index").GetInt64(), r.TryGetProperty("Json", out var j) ? j.GetString() : null)
                    : null;
                _recentOrder.Enqueue(id);
            }
        }
        _recordChanges.Clear();
        if (snapshot.TryGetProperty("RecordChanges", out var allChanges))
            foreach (var database in allChanges.EnumerateObject())
                _recordChanges[database.Name] = [.. database.Value.EnumerateArray().Select(c => new RecordChange(c.GetProperty("Index").GetInt64(), c.GetProperty("Kind").GetString()!, c.GetProperty("Body").GetRawText()))];
        _transactions.Clear();
        if (snapshot.TryGetProperty("Transactions", out var allTransactions))
            foreach (var database in allTransactions.EnumerateObject())
                _transactions[database.Name] = [.. database.Value.EnumerateArray().Select(t => new ClusterTransaction(t.GetProperty("Index").GetInt64(), t.GetProperty("RequestId").GetString()!, t.GetProperty("Documents").GetRawText()))];
        _serverItems.Clear();
        if (snapshot.TryGetProperty("ServerItems", out var items))
            foreach (var item in items.EnumerateArray())
            {
                string key = item.GetProperty("Key").GetString()!;
                _serverItems[key] = new ServerItem(key, item.GetProperty("Index").GetInt64(), item.TryGetProperty("Json", out var j) ? j.GetString() : null);
            }
    }
}

/// <summary>
/// A node of the cluster: its HTTP URL, its Raft endpoint (<c>host:port</c>), and whether it is a watcher — it never
/// leads (Raft standby) and new database groups are not placed on it.
/// </summary>
public sealed record ClusterNodeInfo(string Url, string RaftEndPoint, bool Watcher);

/// <summary>
/// A database's group: the nodes (tags, in the clients' order) that each hold an instance, replicating to each other;
/// <paramref name="Etag"/> is the Raft index of its last change. <see cref="Rehabs"/> are members the cluster observer
/// found unreachable: they keep their instance and are fed, and come back once caught up; <see cref="Promotables"/>
/// are nodes added to the group, fed until they have caught up.
/// </summary>
public sealed record DatabaseGroup(IReadOnlyList<string> Members, long Etag)
{
    public IReadOnlyList<string> Rehabs { get; init; } = [];

    /// <summary>Nodes added to the group that are being fed by the members; the observer makes each a member once it has caught up.</summary>
    public IReadOnlyList<string> Promotables { get; init; } = [];

    /// <summary>The id of the <c>RAFT:</c> change-vector entries its cluster-wide transactions add, the same on every member (null: a group made before it had one).</summary>
    public string? ClusterTransactionId { get; init; }

    /// <summary>An encrypted database: each member creates its instance encrypted, with the key distributed to it.</summary>
    public bool Encrypted { get; init; }

    /// <summary>Mentors asked for when a node was added (RavenDB's <c>PredefinedMentors</c>: promotable → member).</summary>
    public IReadOnlyDictionary<string, string> PredefinedMentors { get; init; } = new Dictionary<string, string>(StringComparer.Ordinal);

    /// <summary>Every node that holds an instance: members, then rehabs, then promotables.</summary>
    public IEnumerable<string> All => Members.Concat(Rehabs).Concat(Promotables);

    /// <summary>
    /// The member that feeds promotable or rehab <paramref name="tag"/> and tells the observer whether it has caught up:
    /// the mentor asked for while it is a member, else one picked by the tag's hash among the members sorted by tag —
    /// the same on every node, and another one once the first leaves the members. Null when the group has no member.
    /// </summary>
    public string? MentorOf(string tag)
    {
        if (PredefinedMentors.TryGetValue(tag, out string? mentor) && Members.Contains(mentor, StringComparer.Ordinal))
            return mentor;
        if (Members.Count == 0)
            return null;
        var sorted = Members.Order(StringComparer.Ordinal).ToList();
        return sorted[(int)(System.IO.Hashing.XxHash32.HashToUInt32(Encoding.UTF8.GetBytes(tag)) % (uint)sorted.Count)];
    }

    /// <summary>
    /// Where node <paramref name="me"/>'s instance replicates to: a member feeds the other members, the rehabs and the
    /// promotables it mentors; a rehab or promotable sends what it holds to the members and rehabs.
    /// </summary>
    public IEnumerable<string> DestinationsOf(string me) =>
        Members.Contains(me, StringComparer.Ordinal)
            ? Members.Concat(Rehabs).Concat(Promotables.Where(p => MentorOf(p) == me)).Where(t => t != me)
            : Members.Concat(Rehabs).Where(t => t != me);
}

/// <summary>A compare-exchange value of a database of a group: its key as first written, the Raft index that wrote it, and its JSON (<c>{"Object":..,"@metadata":..}</c>).</summary>
public sealed record ClusterValue(string Key, long Index, string Json)
{
    /// <summary>The key of a document's atomic guard (lower-cased, as values are kept).</summary>
    public static string GuardOf(string documentId) => ("rvn-atomic/" + documentId).ToLowerInvariant();

    /// <summary>What an atomic guard holds.</summary>
    public const string GuardJson = "{\"Object\":null}";
}

/// <summary>A change to a group database's record (<see cref="Databases.RecordChanges"/>): its Raft index, kind and JSON body.</summary>
public sealed record RecordChange(long Index, string Kind, string Body);

/// <summary>
/// A committed cluster-wide transaction of a group's database: its Raft index, the request id of the node that asked
/// it (which answers with the results of its own write), and its documents (<c>[{Type: PUT|DELETE, Id, Document}]</c>)
/// for the members to write.
/// </summary>
public sealed record ClusterTransaction(long Index, string RequestId, string Documents);

/// <summary>
/// What a compare-exchange command did: whether it happened, the index (the new one, or the current one when it did
/// not), and the value. For a cluster-wide transaction that did not happen, <see cref="Json"/> says why.
/// </summary>
public sealed record ClusterValueResult(bool Successful, long Index, string? Json);

/// <summary>A server-wide item of the cluster (a registered certificate, the server's client configuration): its JSON, null once deleted.</summary>
public sealed record ServerItem(string Key, long Index, string? Json);
