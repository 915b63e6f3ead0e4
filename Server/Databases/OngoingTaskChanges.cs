using RavenLite.Server.Backups;
using RavenLite.Server.Etl;
using RavenLite.Server.Replication;

namespace RavenLite.Server.Databases;

/// <summary>
/// The ongoing tasks of a database record as record changes (docs/cluster.md "Ongoing tasks"): connection strings (Raven
/// and Sql), external replication tasks, ETL tasks, periodic backups and data subscriptions, their deletion and their enabling. Like every record change they
/// apply on every member of a group in Raft order, so every member holds the same tasks under the same ids (a new
/// task's id is the change's Raft index); <see cref="Database.Ownership"/> decides which member runs each.
/// </summary>
public static class OngoingTaskChanges
{
    /// <summary>A <c>RavenConnectionString</c> or <c>SqlConnectionString</c> (by its <c>Type</c>), added or replaced by name.</summary>
    public const string PutConnectionString = "PutConnectionString";

    /// <summary><c>{"Name": .., "Type": "Raven" | "Sql"}</c>: the connection string goes (400 while a task uses it).</summary>
    public const string DeleteConnectionString = "DeleteConnectionString";

    /// <summary>RavenDB's <c>ExternalReplication</c> (TaskId 0: a new task).</summary>
    public const string PutExternalReplication = "PutExternalReplication";

    /// <summary>RavenDB's <c>PeriodicBackupConfiguration</c> (TaskId 0: a new task).</summary>
    public const string PutPeriodicBackup = "PutPeriodicBackup";

    /// <summary><c>{"TaskId": n, "Configuration": RavenEtlConfiguration | SqlEtlConfiguration}</c> (TaskId 0: a new task).</summary>
    public const string PutEtl = "PutEtl";

    /// <summary><c>{"ConfigurationName": .., "TransformationName": ..}</c>: the transformation loads again from the start.</summary>
    public const string ResetEtl = "ResetEtl";

    /// <summary><c>{"TaskId": n, "Type": "Replication" | "Backup" | "RavenEtl" | "SqlEtl"}</c>: the task goes.</summary>
    public const string DeleteTask = "DeleteTask";

    /// <summary><c>{"TaskId": n, "Type": "Replication" | "Backup" | "RavenEtl" | "SqlEtl", "Disabled": bool}</c>.</summary>
    public const string TaskState = "TaskState";

    /// <summary>A new data subscription: <c>{Name?, Query, ChangeVector?, Disabled?, MentorNode?}</c> (RavenDB's <c>SubscriptionCreationOptions</c>).</summary>
    public const string PutSubscription = "PutSubscription";

    /// <summary>A subscription changed: <c>{Name | Id, Query?, ChangeVector?, Disabled?, CreateNew?}</c> (RavenDB's <c>SubscriptionUpdateOptions</c>).</summary>
    public const string UpdateSubscription = "UpdateSubscription";

    /// <summary><c>{"Name": ..}</c>: the subscription goes.</summary>
    public const string DeleteSubscription = "DeleteSubscription";

    private static readonly HashSet<string> Kinds = [PutConnectionString, DeleteConnectionString, PutExternalReplication, PutPeriodicBackup, PutEtl, ResetEtl, DeleteTask, TaskState,
        PutSubscription, UpdateSubscription, DeleteSubscription];

    /// <summary>True for the kinds this class prepares.</summary>
    public static bool Knows(string kind) => Kinds.Contains(kind);

    /// <summary>The task types <see cref="DeleteTask"/> and <see cref="TaskState"/> change (other names: 400).</summary>
    public static string TaskType(string type) => type.ToUpperInvariant() switch
    {
        "REPLICATION" => "Replication",
        "BACKUP" => "Backup",
        "RAVENETL" => "RavenEtl",
        "SQLETL" => "SqlEtl",
        _ => throw new BadRequestException($"Task type '{type}': the tasks changed here are Replication, Backup, RavenEtl and SqlEtl (subscriptions have their own routes)."),
    };

    /// <summary>The body of <see cref="DeleteTask"/> or <see cref="TaskState"/>.</summary>
    public static JsonElement TaskBody(long taskId, string type, bool? disabled = null) =>
        JsonSerializer.SerializeToElement(disabled is { } d
            ? new Dictionary<string, object> { ["TaskId"] = taskId, ["Type"] = TaskType(type), ["Disabled"] = d }
            : new Dictionary<string, object> { ["TaskId"] = taskId, ["Type"] = TaskType(type) });

    /// <summary>See <see cref="RecordChanges.Prepare"/>.</summary>
    public static RecordChanges.Apply Prepare(string kind, JsonElement body, Database? asked)
    {
        switch (kind)
        {
            case PutConnectionString when IsSql(body):
            {
                var connectionString = SqlConnectionString.Parse(body);
                return async (db, _, _) => await db.Etl.PutConnectionStringAsync(connectionString).ConfigureAwait(false);
            }
            case PutConnectionString:
            {
                var connectionString = RavenConnectionString.Parse(body);
                return async (db, _, _) =>
                {
                    long result = await db.Replication.PutConnectionStringAsync(connectionString).ConfigureAwait(false);
                    db.Etl.Reconcile(); // ETL tasks loading through it reconnect
                    return result;
                };
            }
            case DeleteConnectionString when IsSql(body):
            {
                string name = RavenConnectionString.Text(body, "Name");
                if (asked != null)
                {
                    asked.Etl.CheckUnused(name, EtlKind.Sql);
                    if (!asked.Etl.HasConnectionString(name))
                        throw new NotFoundException(RavenExceptionTypes.RavenException, $"There is no Sql connection string named '{name}' in database '{asked.Name}'.");
                }
                return async (db, _, _) => await db.Etl.DeleteConnectionStringAsync(name).ConfigureAwait(false) ? 1 : 0;
            }
            case DeleteConnectionString:
            {
                string name = RavenConnectionString.Text(body, "Name");
                asked?.Etl.CheckUnused(name, EtlKind.Raven);
                if (asked != null && !asked.Replication.CheckDeletable(name))
                    throw new NotFoundException(RavenExceptionTypes.RavenException, $"There is no connection string named '{name}' in database '{asked.Name}'.");
                return async (db, _, _) => await db.Replication.DeleteConnectionStringAsync(name).ConfigureAwait(false) ? 1 : 0;
            }
            case PutEtl:
            {
                long given = body.ValueKind == JsonValueKind.Object && body.TryGetProperty("TaskId", out var gid) && gid.TryGetInt64(out long g) ? g : 0;
                var configuration = body.ValueKind == JsonValueKind.Object && body.TryGetProperty("Configuration", out var cfg) ? cfg.Clone()
                    : throw new BadRequestException("The body must be {\"TaskId\": n, \"Configuration\": {...}}.");
                var task = EtlTask.Parse(configuration) with { TaskId = given };
                asked?.Etl.Check(task);
                return (db, _, index) => db.Etl.PutTaskAsync(task, index);
            }
            case ResetEtl:
            {
                string configuration = RavenConnectionString.Text(body, "ConfigurationName"), transformation = RavenConnectionString.Text(body, "TransformationName");
                if (asked != null && asked.Etl.Find(configuration)?.Transforms.Any(t => t.Name.Equals(transformation, StringComparison.OrdinalIgnoreCase)) != true)
                    throw new NotFoundException(RavenExceptionTypes.RavenException, $"There is no ETL task '{configuration}' with a transformation '{transformation}' in database '{asked.Name}'.");
                return async (db, _, _) =>
                {
                    await db.Etl.ResetAsync(configuration, transformation).ConfigureAwait(false);
                    return 0;
                };
            }
            case PutExternalReplication:
            {
                var task = ExternalReplicationTask.Parse(body);
                asked?.Replication.Check(task);
                return (db, _, index) => db.Replication.PutTaskAsync(task, index);
            }
            case PutPeriodicBackup:
            {
                var parsed = PeriodicBackupConfiguration.Parse(body, periodic: true, asked != null ? DefaultBackupFolder(asked) : Path.GetTempPath());
                BackupWriter.EnsureWritable(parsed.FolderPath);
                long given = parsed.TaskId;
                if (asked != null && given != 0 && asked.Backups.Get(given) == null)
                    throw new BadRequestException($"There is no backup task {given} to update; leave TaskId 0 to create one.");
                var json = body.Clone();
                // Parsed afresh per instance: a configuration object is the instance's own (its id and times are set on it).
                return (db, _, index) => db.Backups.PutAsync(PeriodicBackupConfiguration.Parse(json, periodic: true, DefaultBackupFolder(db)), index);
            }
            case DeleteTask:
            case TaskState:
            {
                long taskId = body.ValueKind == JsonValueKind.Object && body.TryGetProperty("TaskId", out var id) && id.TryGetInt64(out long n) ? n
                    : throw new BadRequestException("The body must name a TaskId.");
                string type = TaskType(RavenConnectionString.Text(body, "Type"));
                if (asked != null && !Exists(asked, taskId, type))
                    throw new NotFoundException(RavenExceptionTypes.RavenException, $"There is no {type} task {taskId} in database '{asked.Name}'.");
                if (kind == DeleteTask)
                    return async (db, _, _) => await (type switch
                    {
                        "Replication" => db.Replication.DeleteTaskAsync(taskId),
                        "Backup" => db.Backups.DeleteAsync(taskId),
                        _ => db.Etl.DeleteTaskAsync(taskId),
                    }).ConfigureAwait(false) ? 1 : 0;
                bool disabled = body.TryGetProperty("Disabled", out var dis) && dis.ValueKind == JsonValueKind.True;
                return async (db, _, _) => await (type switch
                {
                    "Replication" => db.Replication.SetDisabledAsync(taskId, disabled),
                    "Backup" => db.Backups.SetDisabledAsync(taskId, disabled),
                    _ => db.Etl.SetDisabledAsync(taskId, disabled),
                }).ConfigureAwait(false) ? 1 : 0;
            }
            case PutSubscription:
            {
                string query = Text(body, "Query") ?? throw new BadRequestException("A subscription needs a Query (RQL: from Orders where ...).");
                string? name = Text(body, "Name"), changeVector = Text(body, "ChangeVector"), mentor = Text(body, "MentorNode");
                bool disabled = body.TryGetProperty("Disabled", out var d) && d.ValueKind == JsonValueKind.True;
                if (asked != null)
                {
                    asked.Subscriptions.Compile(query);
                    if (name != null && asked.Subscriptions.Get(name) != null)
                        throw new BadRequestException($"A subscription named '{name}' already exists.");
                }
                return async (db, _, index) =>
                    (await db.Subscriptions.CreateAsync(name, query, changeVector, disabled, mentor, index).ConfigureAwait(false)).SubscriptionId;
            }
            case UpdateSubscription:
            {
                long? id = body.TryGetProperty("Id", out var i) && i.TryGetInt64(out long n) ? n : null;
                string? name = Text(body, "Name"), query = Text(body, "Query"), changeVector = Text(body, "ChangeVector");
                if (name == null && id == null)
                    throw new BadRequestException("An update names the subscription by Name or Id.");
                bool? disabled = body.TryGetProperty("Disabled", out var d) && d.ValueKind is JsonValueKind.True or JsonValueKind.False ? d.GetBoolean() : null;
                bool createNew = body.TryGetProperty("CreateNew", out var c) && c.ValueKind == JsonValueKind.True;
                if (asked != null)
                {
                    if (query != null)
                        asked.Subscriptions.Compile(query);
                    bool exists = name != null ? asked.Subscriptions.Get(name) != null : asked.Subscriptions.All().Any(s => s.SubscriptionId == id);
                    if (!exists && !(createNew && query != null))
                        throw new NotFoundException(RavenExceptionTypes.SubscriptionDoesNotExist, $"There is no subscription '{name ?? id?.ToString(CultureInfo.InvariantCulture)}'.");
                }
                return async (db, _, index) =>
                    (await db.Subscriptions.UpdateAsync(name, id, query, changeVector, disabled, createNew, index).ConfigureAwait(false)).SubscriptionId;
            }
            case DeleteSubscription:
            {
                string name = Text(body, "Name") ?? throw new BadRequestException("The body must be {\"Name\": subscription name}.");
                if (asked != null && asked.Subscriptions.Get(name) == null)
                    throw new NotFoundException(RavenExceptionTypes.SubscriptionDoesNotExist, $"There is no subscription '{name}'.");
                return async (db, _, _) => await db.Subscriptions.DeleteAsync(name).ConfigureAwait(false) ? 1 : 0;
            }
            default:
                throw new BadRequestException($"'{kind}' is not an ongoing-task change.");
        }
    }

    private static string? Text(JsonElement body, string name) =>
        body.ValueKind == JsonValueKind.Object && body.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.String && v.GetString() is { Length: > 0 } s ? s : null;

    private static bool Exists(Database db, long taskId, string type) => type switch
    {
        "Replication" => db.Replication.Configuration.Tasks.Any(t => t.TaskId == taskId),
        "Backup" => db.Backups.Get(taskId) != null,
        _ => db.Etl.Configuration.Tasks.Any(t => t.TaskId == taskId && t.TaskType == type),
    };

    private static bool IsSql(JsonElement body) =>
        body.ValueKind == JsonValueKind.Object && RavenConnectionString.Property(body, "Type") is { ValueKind: JsonValueKind.String } t && t.GetString()!.Equals("Sql", StringComparison.OrdinalIgnoreCase);

    /// <summary>Where a backup task without a destination writes: <c>{DataDir}/Backups/{database}</c>.</summary>
    private static string DefaultBackupFolder(Database db) => Path.Combine(Path.GetFullPath(db.Options.DataDir), "Backups", db.Name.ToLowerInvariant());
}
