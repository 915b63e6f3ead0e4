using System.Globalization;
using System.Text.Json.Nodes;
using RavenLite.Client.Backups;
using RavenLite.Client.Http;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Replication;

/// <summary>A database somewhere (this server or another) that replication sends to (RavenDB's <c>RavenConnectionString</c>).</summary>
/// <param name="Name">The connection string's name, which tasks refer to.</param>
/// <param name="Database">The destination database.</param>
/// <param name="TopologyDiscoveryUrls">The destination server's URLs (any one that answers is used).</param>
public sealed record RavenConnectionString(string Name, string Database, IReadOnlyList<string> TopologyDiscoveryUrls);

/// <summary>An external replication task (RavenDB's <c>ExternalReplication</c>).</summary>
public sealed class ExternalReplication
{
    /// <summary>0 to create a task; an existing id to update it.</summary>
    public long TaskId { get; set; }

    /// <summary>The task's name.</summary>
    public string? Name { get; set; }

    /// <summary>The <see cref="RavenConnectionString"/> it sends to.</summary>
    public string ConnectionStringName { get; set; } = "";

    /// <summary>Send each write only once it is this old (null: at once).</summary>
    public TimeSpan? DelayReplicationFor { get; set; }

    /// <summary>True to keep it off.</summary>
    public bool Disabled { get; set; }
}

/// <summary><c>PUT /databases/{db}/admin/connection-strings</c>: adds or replaces a Raven or an Sql connection string.</summary>
public sealed class PutConnectionStringOperation : IMaintenanceOperation<long>
{
    private readonly JsonObject _body;

    /// <summary>A Raven connection string (replication, RavenDB ETL).</summary>
    public PutConnectionStringOperation(RavenConnectionString connectionString)
    {
        ArgumentNullException.ThrowIfNull(connectionString);
        _body = new JsonObject
        {
            ["Name"] = connectionString.Name,
            ["Database"] = connectionString.Database,
            ["TopologyDiscoveryUrls"] = new JsonArray([.. connectionString.TopologyDiscoveryUrls.Select(u => (JsonNode?)u)]),
            ["Type"] = "Raven",
        };
    }

    /// <summary>An Sql connection string (SQL ETL to PostgreSQL).</summary>
    public PutConnectionStringOperation(Etl.SqlConnectionString connectionString)
    {
        ArgumentNullException.ThrowIfNull(connectionString);
        _body = new JsonObject
        {
            ["Name"] = connectionString.Name,
            ["ConnectionString"] = connectionString.ConnectionString,
            ["FactoryName"] = connectionString.FactoryName,
            ["Type"] = "Sql",
        };
    }

    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) =>
        new PostForNumberCommand(db => $"/databases/{Uri.EscapeDataString(db)}/admin/connection-strings", _body, "RaftCommandIndex", HttpMethod.Put);
}

/// <summary><c>POST /databases/{db}/admin/tasks/external-replication</c>: creates or updates a task; returns its task id.</summary>
public sealed class UpdateExternalReplicationOperation(ExternalReplication task) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) => new PostForNumberCommand(db => $"/databases/{Uri.EscapeDataString(db)}/admin/tasks/external-replication", new JsonObject
    {
        ["Watcher"] = new JsonObject
        {
            ["TaskId"] = task.TaskId,
            ["Name"] = task.Name,
            ["ConnectionStringName"] = task.ConnectionStringName,
            ["DelayReplicationFor"] = (task.DelayReplicationFor ?? TimeSpan.Zero).ToString("c", CultureInfo.InvariantCulture),
            ["Disabled"] = task.Disabled,
        },
    }, "TaskId");
}

/// <summary><c>DELETE /databases/{db}/admin/tasks?id=&amp;type=Replication</c>: deletes a replication task.</summary>
public sealed class DeleteReplicationTaskOperation(long taskId) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) =>
        new PostForNumberCommand(db => string.Create(CultureInfo.InvariantCulture, $"/databases/{Uri.EscapeDataString(db)}/admin/tasks?id={taskId}&type=Replication"), null, "TaskId", HttpMethod.Delete);
}

/// <summary>How far a replication task has got (RavenDB's <c>OngoingTaskReplication</c>, with RavenLite's progress).</summary>
public sealed record ReplicationTaskInfo(long TaskId, string Name, string ConnectionStatus, string? Error, long LastAcknowledgedEtag, long EtagLag, double TimeLagMs);

/// <summary><c>GET /databases/{db}/tasks?key=&amp;type=Replication</c>: a replication task's state and progress.</summary>
public sealed class GetReplicationTaskInfoOperation(long taskId) : IMaintenanceOperation<ReplicationTaskInfo>
{
    /// <inheritdoc />
    public RavenCommand<ReplicationTaskInfo> GetCommand(DocumentConventions conventions) => new InfoCommand(taskId);

    private sealed class InfoCommand(long taskId) : RavenCommand<ReplicationTaskInfo>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Get, string.Create(CultureInfo.InvariantCulture, $"{DatabasePath(database)}/tasks?key={taskId}&type=Replication"));

        public override async Task<ReplicationTaskInfo> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            var t = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
            return new ReplicationTaskInfo((long)t["TaskId"]!, (string)t["TaskName"]!, (string)t["TaskConnectionStatus"]!, (string?)t["Error"],
                (long)t["LastAcknowledgedEtag"]!, (long)t["EtagLag"]!, (double)t["TimeLagMs"]!);
        }
    }
}

/// <summary>One version of a document in conflict: its change vector and JSON (null: a delete).</summary>
public sealed record ConflictVersion(string ChangeVector, JsonObject? Document, DateTime LastModified);

/// <summary><c>GET /databases/{db}/replication/conflicts?docId=</c>: the versions of a document in conflict (empty when none).</summary>
public sealed class GetConflictsOperation(string id) : IMaintenanceOperation<IReadOnlyList<ConflictVersion>>
{
    /// <inheritdoc />
    public RavenCommand<IReadOnlyList<ConflictVersion>> GetCommand(DocumentConventions conventions) => new ConflictsCommand(id);

    private sealed class ConflictsCommand(string id) : RavenCommand<IReadOnlyList<ConflictVersion>>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Get, $"{DatabasePath(database)}/replication/conflicts?docId={Uri.EscapeDataString(id)}");

        public override async Task<IReadOnlyList<ConflictVersion>> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
            return [.. (json["Results"] as JsonArray ?? []).OfType<JsonObject>().Select(r => new ConflictVersion((string)r["ChangeVector"]!, r["Doc"]?.DeepClone() as JsonObject,
                DateTime.Parse((string)r["LastModified"]!, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal)))];
        }
    }
}

/// <summary><c>POST /admin/replication/conflicts/solver?name={db}</c>: how the database settles concurrent versions (a script per collection; else the latest, or keep them in conflict).</summary>
public sealed class ModifyConflictSolverOperation(bool resolveToLatest, IReadOnlyDictionary<string, string>? scriptsByCollection = null) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions)
    {
        var byCollection = new JsonObject();
        foreach (var (collection, script) in scriptsByCollection ?? new Dictionary<string, string>())
            byCollection[collection] = new JsonObject { ["Script"] = script };
        return new PostForNumberCommand(db => $"/admin/replication/conflicts/solver?name={Uri.EscapeDataString(db)}",
            new JsonObject { ["ResolveToLatest"] = resolveToLatest, ["ResolveByCollection"] = byCollection }, "RaftCommandIndex");
    }
}
