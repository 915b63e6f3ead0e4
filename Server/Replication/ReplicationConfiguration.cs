using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Replication;

/// <summary>
/// A database's replication settings (docs/replication.md "Setting it up"): RavenDB connection strings and external
/// replication tasks. Stored as JSON under <c>State/ReplicationConfiguration</c> (docs/format/documents.md), written
/// through the merger so an answer means it is durable. Immutable: a change makes a new one.
/// </summary>
public sealed record ReplicationConfiguration(IReadOnlyDictionary<string, RavenConnectionString> ConnectionStrings, IReadOnlyList<ExternalReplicationTask> Tasks)
{
    internal static readonly byte[] StateKey = "ReplicationConfiguration"u8.ToArray();

    /// <summary>No connection strings, no tasks.</summary>
    public static ReplicationConfiguration Empty { get; } = new(new Dictionary<string, RavenConnectionString>(StringComparer.OrdinalIgnoreCase), []);

    /// <summary>The stored configuration, or <see cref="Empty"/>.</summary>
    public static ReplicationConfiguration Read(Transaction tx)
    {
        using var json = Documents.DocumentsStorage.ReadState(tx, StateKey);
        if (json == null)
            return Empty;
        var strings = new Dictionary<string, RavenConnectionString>(StringComparer.OrdinalIgnoreCase);
        foreach (var cs in json.RootElement.GetProperty(nameof(ConnectionStrings)).EnumerateArray())
        {
            var parsed = RavenConnectionString.Parse(cs);
            strings[parsed.Name] = parsed;
        }
        var tasks = json.RootElement.GetProperty(nameof(Tasks)).EnumerateArray().Select(ExternalReplicationTask.Parse).ToList();
        return new ReplicationConfiguration(strings, tasks);
    }

    /// <summary>Writes it to <c>State</c> in <paramref name="tx"/>.</summary>
    public void Write(WriteTransaction tx) => Documents.DocumentsStorage.WriteState(tx, StateKey, w =>
    {
        w.WriteStartObject();
        w.WriteStartArray(nameof(ConnectionStrings));
        foreach (var cs in ConnectionStrings.Values)
            cs.Write(w);
        w.WriteEndArray();
        w.WriteStartArray(nameof(Tasks));
        foreach (var t in Tasks)
            t.Write(w);
        w.WriteEndArray();
        w.WriteEndObject();
    });

    /// <summary>With <paramref name="connectionString"/> added or replaced.</summary>
    public ReplicationConfiguration With(RavenConnectionString connectionString) =>
        this with { ConnectionStrings = new Dictionary<string, RavenConnectionString>(ConnectionStrings, StringComparer.OrdinalIgnoreCase) { [connectionString.Name] = connectionString } };

    /// <summary>With <paramref name="task"/> added or replaced (by id).</summary>
    public ReplicationConfiguration With(ExternalReplicationTask task) =>
        this with { Tasks = [.. Tasks.Where(t => t.TaskId != task.TaskId), task] };
}

/// <summary>RavenDB's <c>RavenConnectionString</c>: a database on another (or this) server, reached through any of its URLs.</summary>
public sealed record RavenConnectionString(string Name, string Database, IReadOnlyList<string> TopologyDiscoveryUrls)
{
    /// <summary>Reads one as RavenDB's clients send it (<c>{Name, Database, TopologyDiscoveryUrls, Type: "Raven"}</c>); 400 when it is not one.</summary>
    public static RavenConnectionString Parse(JsonElement json)
    {
        if (json.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("A connection string is a JSON object.");
        string type = Property(json, "Type") is { ValueKind: JsonValueKind.String } t ? t.GetString()! : "Raven";
        if (!type.Equals("Raven", StringComparison.OrdinalIgnoreCase))
            throw new BadRequestException($"Connection strings of type '{type}' are not supported here; this server keeps Raven connection strings (for replication).");
        string name = Text(json, nameof(Name));
        string database = Text(json, nameof(Database));
        var urls = new List<string>();
        if (Property(json, nameof(TopologyDiscoveryUrls)) is { ValueKind: JsonValueKind.Array } list)
        {
            foreach (var u in list.EnumerateArray())
            {
                string url = u.GetString() ?? "";
                if (!Uri.TryCreate(url, UriKind.Absolute, out var uri) || (uri.Scheme != Uri.UriSchemeHttp && uri.Scheme != Uri.UriSchemeHttps))
                    throw new BadRequestException($"Connection string '{name}': '{url}' is not an http:// or https:// URL.");
                urls.Add(url.TrimEnd('/'));
            }
        }
        if (urls.Count == 0)
            throw new BadRequestException($"Connection string '{name}' names no TopologyDiscoveryUrls.");
        return new RavenConnectionString(name, database, urls);
    }

    public void Write(Utf8JsonWriter w)
    {
        w.WriteStartObject();
        w.WriteString(nameof(Name), Name);
        w.WriteString(nameof(Database), Database);
        w.WriteStartArray(nameof(TopologyDiscoveryUrls));
        foreach (var u in TopologyDiscoveryUrls)
            w.WriteStringValue(u);
        w.WriteEndArray();
        w.WriteString("Type", "Raven");
        w.WriteEndObject();
    }

    /// <summary>A property by name in any casing (the Node client sends camelCase or PascalCase, as its conventions say).</summary>
    internal static JsonElement? Property(JsonElement json, string name)
    {
        foreach (var p in json.EnumerateObject())
            if (p.Name.Equals(name, StringComparison.OrdinalIgnoreCase))
                return p.Value;
        return null;
    }

    internal static string Text(JsonElement json, string name) =>
        Property(json, name) is { ValueKind: JsonValueKind.String } v && v.GetString() is { Length: > 0 } s
            ? s
            : throw new BadRequestException($"'{name}' is required.");
}

/// <summary>RavenDB's <c>ExternalReplication</c> task: this database's documents flow to the connection string's database.</summary>
public sealed record ExternalReplicationTask(long TaskId, string Name, string ConnectionStringName, bool Disabled, TimeSpan DelayReplicationFor, string? MentorNode = null)
{
    /// <summary>Reads the task as stored or as the clients send it (the <c>Watcher</c> of <c>UpdateExternalReplicationOperation</c>); 400 when it is not one.</summary>
    public static ExternalReplicationTask Parse(JsonElement json)
    {
        if (json.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("An external replication is a JSON object.");
        long id = RavenConnectionString.Property(json, nameof(TaskId)) is { ValueKind: JsonValueKind.Number } n ? n.GetInt64() : 0;
        string name = RavenConnectionString.Property(json, nameof(Name)) is { ValueKind: JsonValueKind.String } s ? s.GetString() ?? "" : "";
        bool disabled = RavenConnectionString.Property(json, nameof(Disabled)) is { ValueKind: JsonValueKind.True };
        var delay = TimeSpan.Zero;
        if (RavenConnectionString.Property(json, nameof(DelayReplicationFor)) is { ValueKind: JsonValueKind.String } d
            && !TimeSpan.TryParse(d.GetString(), CultureInfo.InvariantCulture, out delay))
            throw new BadRequestException($"DelayReplicationFor '{d.GetString()}' is not a time span (hh:mm:ss).");
        if (delay < TimeSpan.Zero)
            throw new BadRequestException("DelayReplicationFor must not be negative.");
        string? mentor = RavenConnectionString.Property(json, nameof(MentorNode)) is { ValueKind: JsonValueKind.String } m && m.GetString() is { Length: > 0 } tag ? tag : null;
        return new ExternalReplicationTask(id, name, RavenConnectionString.Text(json, nameof(ConnectionStringName)), disabled, delay, mentor);
    }

    public void Write(Utf8JsonWriter w)
    {
        w.WriteStartObject();
        w.WriteNumber(nameof(TaskId), TaskId);
        w.WriteString(nameof(Name), Name);
        w.WriteString(nameof(ConnectionStringName), ConnectionStringName);
        w.WriteBoolean(nameof(Disabled), Disabled);
        w.WriteString(nameof(DelayReplicationFor), DelayReplicationFor.ToString("c", CultureInfo.InvariantCulture));
        if (MentorNode != null)
            w.WriteString(nameof(MentorNode), MentorNode);
        w.WriteEndObject();
    }
}
