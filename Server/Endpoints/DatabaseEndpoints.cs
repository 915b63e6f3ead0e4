using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Indexing;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>Database lifecycle (docs/protocol.md §3): create, delete, list, get record.</summary>
public static class DatabaseEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPut("/admin/databases", Create).Requires(Access.Operator);
        app.MapDelete("/admin/databases", Delete).Requires(Access.Operator);
        app.MapGet("/admin/databases", GetRecord).Requires(Access.Operator);
        app.MapGet("/databases/{db}/admin/record", DatabaseRoute.Handle((c, db) => WriteRecord(c, db))).Requires(Access.DatabaseAdmin);
        app.MapGet("/databases", List).Requires(Access.ValidUser);
        app.MapPost("/admin/compact", Compact).Requires(Access.Operator);
    }

    private static async Task Create(HttpContext context)
    {
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        var options = context.RequestServices.GetRequiredService<ServerOptions>();
        var body = await RequestBody.ReadAsync(context, 1 << 20).ConfigureAwait(false);
        string? name = RequestParsing.Query(context.Request, "name");
        if (body.Length > 0)
        {
            using var doc = DocumentJson.Parse(body, 8);
            if (doc.RootElement.ValueKind == JsonValueKind.Object && doc.RootElement.TryGetProperty("DatabaseName", out var n) && n.ValueKind == JsonValueKind.String)
            {
                string bodyName = n.GetString()!;
                if (name != null && !string.Equals(name, bodyName, StringComparison.OrdinalIgnoreCase))
                    throw new BadRequestException($"The name in the query string ('{name}') and DatabaseName in the body ('{bodyName}') differ.");
                name = bodyName;
            }
        }
        if (name == null)
            throw new BadRequestException("Database name is required (?name= or DatabaseName in the body).");
        if (long.TryParse(context.Request.Headers.ETag.ToString().Trim('"'), NumberStyles.None, CultureInfo.InvariantCulture, out _) && registry.Find(name) != null)
        {
            // An update of an existing record (UpdateDatabaseOperation sends the record's etag; a creation sends none,
            // or, from the Node client, "undefined"), not a creation.
            using var record = DocumentJson.Parse(body, 16);
            await DatabaseStateEndpoints.UpdateAsync(context, name, record.RootElement).ConfigureAwait(false);
            return;
        }
        int replicationFactor = RequestParsing.QueryInt(context.Request, "replicationFactor", 1, min: 1, max: 64);
        var cluster = context.RequestServices.GetRequiredService<Cluster.ClusterNode>();
        if (replicationFactor > 1 || cluster.Read(s => s.Nodes.Count) > 1)
        {
            // In a cluster the database is placed on a group of nodes through Raft (docs/cluster.md "Database groups").
            var (index, members) = await context.RequestServices.GetRequiredService<Cluster.DatabaseGroups>().CreateAsync(name, replicationFactor, context.RequestAborted, Encrypted(body)).ConfigureAwait(false);
            var urls = cluster.Read(s => members.Select(m => s.Nodes[m].Url).ToList());
            await JsonResponse.WriteAsync(context, 201, w =>
            {
                w.WriteStartObject();
                w.WriteNumber("RaftCommandIndex", index);
                w.WriteString("Name", name);
                w.WriteStartObject("Topology");
                w.WriteStartArray("Members");
                foreach (string m in members)
                    w.WriteStringValue(m);
                w.WriteEndArray();
                w.WriteNumber("ReplicationFactor", members.Count);
                w.WriteEndObject();
                w.WriteStartArray("NodesAddedTo");
                foreach (string u in urls)
                    w.WriteStringValue(u);
                w.WriteEndArray();
                w.WriteEndObject();
            }).ConfigureAwait(false);
            return;
        }
        registry.Create(name, Encrypted(body));
        await WriteCreatedAsync(context, registry.NextRaftIndex(), name).ConfigureAwait(false);
    }

    /// <summary>True when the record asks for an encrypted database (<c>"Encrypted": true</c>).</summary>
    private static bool Encrypted(ReadOnlyMemory<byte> body)
    {
        if (body.Length == 0)
            return false;
        using var doc = DocumentJson.Parse(body, 8);
        return doc.RootElement.ValueKind == JsonValueKind.Object && doc.RootElement.TryGetProperty("Encrypted", out var e) && e.ValueKind == JsonValueKind.True;
    }

    /// <summary>RavenDB's answer to a database created (or its record updated) on this node: <c>{RaftCommandIndex, Name, NodesAddedTo}</c>.</summary>
    internal static Task WriteCreatedAsync(HttpContext context, long raftIndex, string name)
    {
        string url = $"{context.Request.Scheme}://{context.Request.Host}";
        return JsonResponse.WriteAsync(context, 201, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", raftIndex);
            w.WriteString("Name", name);
            w.WriteStartArray("NodesAddedTo");
            w.WriteStringValue(url);
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }

    private static async Task Delete(HttpContext context)
    {
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        var body = await RequestBody.ReadAsync(context, 1 << 20).ConfigureAwait(false);
        var names = new List<string>();
        if (RequestParsing.Query(context.Request, "name") is { Length: > 0 } qn)
            names.Add(qn);
        if (body.Length > 0)
        {
            using var doc = DocumentJson.Parse(body, 8);
            if (doc.RootElement.ValueKind != JsonValueKind.Object || !doc.RootElement.TryGetProperty("DatabaseNames", out var arr) || arr.ValueKind != JsonValueKind.Array)
                throw new BadRequestException("Body must be {\"DatabaseNames\":[...]}.");
            foreach (var e in arr.EnumerateArray())
                names.Add(e.ValueKind == JsonValueKind.String ? e.GetString()! : throw new BadRequestException("DatabaseNames must hold strings."));
        }
        if (names.Count == 0)
            throw new BadRequestException("No database named: send {\"DatabaseNames\":[...]}.");
        foreach (string n in names)
            DatabaseRegistry.ValidateName(n);
        // A group's database is deleted through Raft: every node holding an instance deletes it (docs/cluster.md "Database groups").
        var cluster = context.RequestServices.GetRequiredService<Cluster.ClusterNode>();
        var grouped = names.Where(cluster.Groups.ContainsKey).ToList();
        var missing = names.Where(n => registry.Find(n) == null && !grouped.Contains(n)).ToList();
        if (missing.Count > 0)
            throw new DatabaseMissingException(missing[0]);
        // The deletion lock (set-lock): PreventDeletesError refuses the request, PreventDeletesIgnore leaves that database.
        foreach (string n in names.Except(grouped).ToList())
        {
            string mode = registry.ReadRecord(n).LockMode;
            if (mode == "PreventDeletesError")
                throw new BadRequestException($"Database '{n}' cannot be deleted because of the set lock mode ('{mode}'). Please consider changing the lock mode before deleting the database.");
            if (mode == "PreventDeletesIgnore")
                names.Remove(n);
        }
        long raft = 0;
        foreach (string n in grouped)
            raft = await context.RequestServices.GetRequiredService<Cluster.DatabaseGroups>().DeleteAsync(n, context.RequestAborted).ConfigureAwait(false);
        foreach (string n in names.Except(grouped))
            registry.Delete(n);
        if (raft == 0)
            raft = registry.NextRaftIndex();
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", raft);
            w.WriteStartArray("PendingDeletes");
            w.WriteEndArray();
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static readonly string[] TopologyEmptyArrays = ["Promotables", "Rehabs", "PriorityOrder"];
    private static readonly string[] TopologyEmptyObjects = ["PredefinedMentors", "DemotionReasons", "PromotablesStatus"];
    private static readonly string[] RecordEmptyObjects = ["RavenConnectionStrings", "SqlConnectionStrings",
                    "OlapConnectionStrings", "ElasticSearchConnectionStrings", "QueueConnectionStrings", "AiConnectionStrings"];
    private static readonly string[] RecordNulls = ["RevisionsForConflicts", "DataArchival", "Integrations", "Studio"];
    private static readonly string[] RecordEmptyArrays = ["ExternalReplications", "SinkPullReplications", "HubPullReplications", "RavenEtls", "SqlEtls",
                    "ElasticSearchEtls", "OlapEtls", "QueueEtls", "QueueSinks", "UnusedDatabaseIds"];

    /// <summary>
    /// <c>GET /admin/databases?name=</c>: the database record with every field RavenDB's clients read
    /// (GetDatabaseRecordOperation); RavenLite's single node is the whole topology, and the static indexes
    /// are listed under <c>Indexes</c>, auto indexes under <c>AutoIndexes</c>. 404 with <c>Database-Missing</c>
    /// when it does not exist (the clients answer null).
    /// </summary>
    private static Task GetRecord(HttpContext context)
    {
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        string name = RequestParsing.Required(context.Request, "name");
        string? stored = registry.Find(name);
        if (stored == null)
        {
            context.Response.Headers["Database-Missing"] = Uri.EscapeDataString(name);
            return JsonResponse.EmptyAsync(context, 404);
        }
        if (registry.ReadRecord(stored) is { Disabled: true } disabled)
            return WriteDisabledRecord(context, stored, disabled);
        var db = registry.Acquire(stored);
        try
        {
            return WriteRecord(context, db);
        }
        finally
        {
            db.Release();
        }
    }

    /// <summary>A disabled database's record: what its record file holds (it is not opened, so no indexes or tasks are listed).</summary>
    private static Task WriteDisabledRecord(HttpContext context, string name, DatabaseRecordFile record) => JsonResponse.WriteAsync(context, 200, w =>
    {
        w.WriteStartObject();
        w.WriteString("DatabaseName", name);
        w.WriteBoolean("Disabled", true);
        w.WriteBoolean("Encrypted", record.Encrypted);
        w.WriteString("LockMode", record.LockMode);
        w.WriteStartObject("Indexes");
        w.WriteEndObject();
        w.WriteStartObject("AutoIndexes");
        w.WriteEndObject();
        record.WriteSettingsAndClient(w);
        w.WriteNumber("Etag", 1);
        w.WriteEndObject();
    });

    // Kept whole: the database record written field by field in RavenDB's shape.
    /// <summary>The database record as RavenDB's clients read it, with RavenLite's settings, client configuration and backup tasks.</summary>
    private static Task WriteRecord(HttpContext context, Database db)
    {
        string stored = db.Name;
        var record = db.Record;
        var backups = db.Backups.Tasks;
        {
            var indexes = db.Indexes.All;
            string databaseId = db.Documents.DatabaseId;
            return JsonResponse.WriteAsync(context, 200, w =>
            {
                w.WriteStartObject();
                w.WriteString("DatabaseName", stored);
                w.WriteBoolean("Disabled", record.Disabled);
                w.WriteBoolean("Encrypted", record.Encrypted);
                w.WriteNumber("EtagForBackup", 0);
                w.WriteStartObject("DeletionInProgress");
                w.WriteEndObject();
                w.WriteStartObject("RollingIndexes");
                w.WriteEndObject();
                w.WriteString("DatabaseState", "Normal");
                w.WriteString("LockMode", record.LockMode);
                w.WriteStartObject("Topology");
                w.WriteStartArray("Members");
                w.WriteStringValue(db.Documents.NodeTag);
                w.WriteEndArray();
                foreach (string empty in TopologyEmptyArrays)
                {
                    w.WriteStartArray(empty);
                    w.WriteEndArray();
                }
                foreach (string empty in TopologyEmptyObjects)
                {
                    w.WriteStartObject(empty);
                    w.WriteEndObject();
                }
                w.WriteNumber("ReplicationFactor", 1);
                w.WriteBoolean("DynamicNodesDistribution", false);
                w.WriteStartObject("Stamp");
                w.WriteNumber("Index", 1);
                w.WriteNumber("Term", 1);
                w.WriteNumber("LeadersTicks", 0);
                w.WriteEndObject();
                w.WriteString("DatabaseTopologyIdBase64", databaseId);
                w.WriteString("ClusterTransactionIdBase64", db.Documents.ClusterTransactionId);
                w.WriteEndObject();
                w.WriteNull("Sharding");
                w.WriteNull("ConflictSolverConfig");
                if (record.DocumentsCompression is { } compression)
                {
                    w.WritePropertyName("DocumentsCompression");
                    w.WriteRawValue(compression.ToJsonString(), skipInputValidation: true);
                }
                else
                {
                    w.WriteStartObject("DocumentsCompression");
                    w.WriteStartArray("Collections");
                    w.WriteEndArray();
                    w.WriteBoolean("CompressAllCollections", false);
                    w.WriteBoolean("CompressRevisions", false);
                    w.WriteEndObject();
                }
                w.WriteStartObject("Indexes");
                foreach (var i in indexes.Where(i => !i.Definition.IsAnyAuto))
                {
                    w.WritePropertyName(i.Name);
                    IndexDefinitionJson.Write(w, i);
                }
                w.WriteEndObject();
                w.WriteStartObject("AutoIndexes");
                foreach (var i in indexes.Where(i => i.Definition.IsAnyAuto))
                {
                    w.WritePropertyName(i.Name);
                    AutoIndexDefinitionJson.Write(w, i.Definition);
                }
                w.WriteEndObject();
                foreach (var (property, code) in new[] { ("Sorters", record.Sorters), ("Analyzers", record.Analyzers) })
                {
                    w.WriteStartObject(property);
                    foreach (var (name, source) in code)
                    {
                        w.WriteStartObject(name);
                        w.WriteString("Name", name);
                        w.WriteString("Code", source);
                        w.WriteEndObject();
                    }
                    w.WriteEndObject();
                }
                w.WritePropertyName("IndexesHistory");
                w.WriteRawValue(record.IndexesHistory.ToJsonString(), skipInputValidation: true);
                foreach (string empty in RecordEmptyObjects)
                {
                    w.WriteStartObject(empty);
                    w.WriteEndObject();
                }
                foreach (string none in RecordNulls)
                    w.WriteNull(none);
                db.WriteConfigurations(w);
                foreach (string empty in RecordEmptyArrays)
                {
                    w.WriteStartArray(empty);
                    w.WriteEndArray();
                }
                record.WriteSettingsAndClient(w);
                w.WriteStartArray("PeriodicBackups");
                foreach (var task in backups)
                {
                    var json = System.Text.Json.Nodes.JsonNode.Parse(task.Json)!;
                    json["TaskId"] = task.TaskId;
                    json["Name"] = task.Name;
                    json["Disabled"] = task.Disabled;
                    w.WriteRawValue(json.ToJsonString(), skipInputValidation: true);
                }
                w.WriteEndArray();
                w.WriteNumber("TruncatedClusterTransactionCommandsCount", 0);
                w.WriteNumber("Etag", 1);
                w.WriteEndObject();
            });
        }
    }

    /// <summary>
    /// <c>POST /admin/compact</c> (<c>{DatabaseName, Documents, Indexes: [..]}</c>): a server operation that takes the
    /// database offline (503 meanwhile), rewrites its storage without free pages and merges the named indexes' files.
    /// </summary>
    private static async Task Compact(HttpContext context)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "compact settings").ConfigureAwait(false);
        var root = body.RootElement;
        string name = root.ValueKind == JsonValueKind.Object && root.TryGetProperty("DatabaseName", out var n) && n.ValueKind == JsonValueKind.String
            ? n.GetString()! : throw new BadRequestException("DatabaseName is required.");
        bool documents = root.TryGetProperty("Documents", out var d) && d.ValueKind == JsonValueKind.True;
        var indexes = root.TryGetProperty("Indexes", out var i) && i.ValueKind == JsonValueKind.Array
            ? i.EnumerateArray().Select(x => x.ValueKind == JsonValueKind.String ? x.GetString()! : throw new BadRequestException("Indexes must hold index names.")).ToList()
            : [];
        if (!documents && indexes.Count == 0)
            throw new BadRequestException("Nothing to compact: set Documents to true or name Indexes.");
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        string stored = registry.Find(name) ?? throw new DatabaseMissingException(name);
        var operations = context.RequestServices.GetRequiredService<Operations.ServerOperations>();
        var state = operations.Table.Start(operations.Table.NextId(), "DatabaseCompact");
        operations.Table.RunInBackground(state, () =>
        {
            using var key = registry.ReadRecord(stored).Encrypted ? registry.Keys.KeyFor(stored) : null;
            var result = registry.RunOffline(stored, dir => DatabaseCompaction.Run(dir, documents, indexes, state.Token, key));
            return Task.FromResult(JsonSerializer.SerializeToUtf8Bytes(new Dictionary<string, object>
            {
                ["$type"] = "Raven.Client.ServerWide.Operations.CompactionResult, Raven.Client",
                ["SizeBeforeCompactionInMb"] = result.StorageBytesBefore / (1 << 20),
                ["SizeAfterCompactionInMb"] = result.StorageBytesAfter / (1 << 20),
                ["StorageBytesBefore"] = result.StorageBytesBefore,
                ["StorageBytesAfter"] = result.StorageBytesAfter,
                ["IndexesCompacted"] = result.IndexesCompacted,
                ["Messages"] = new[] { $"Compacted '{stored}'." },
            }));
        }, "The compaction did not complete");
        await BackupEndpoints.OperationAnswer(context, "OperationId", state.Id, "OperationNodeTag").ConfigureAwait(false);
    }

    private static Task List(HttpContext context)
    {
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        bool namesOnly = string.Equals(RequestParsing.Query(context.Request, "namesOnly"), "true", StringComparison.OrdinalIgnoreCase);
        int start = RequestParsing.QueryInt(context.Request, "start", 0);
        int pageSize = RequestParsing.QueryInt(context.Request, "pageSize", int.MaxValue, 0);
        // On a secured server a ValidUser certificate sees the databases it has access to.
        var access = context.RequestServices.GetService<AccessPolicy>();
        var names = registry.Names.Where(n => access == null || access.CanSee(context, n)).Skip(start).Take(pageSize).ToList();
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Databases");
            foreach (string n in names)
            {
                if (namesOnly)
                {
                    w.WriteStringValue(n);
                    continue;
                }
                w.WriteStartObject();
                w.WriteString("Name", n);
                w.WriteBoolean("Disabled", registry.ReadRecord(n).Disabled);
                w.WriteBoolean("IsEncrypted", registry.ReadRecord(n).Encrypted);
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }
}
