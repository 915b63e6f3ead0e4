using System.Globalization;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Backups;

#pragma warning disable CA1507 // the JSON names are RavenDB's wire names, equal to these members' names by design

/// <summary>What a backup writes: a portable <c>.ravendbdump</c> (<see cref="Backup"/>) or the storage pages, exact and with incrementals (<see cref="Snapshot"/>).</summary>
public enum BackupType
{
    /// <summary>A full <c>.ravendb-full-backup</c> dump each time (RavenDB reads it too).</summary>
    Backup,

    /// <summary>A <c>.ravendb-snapshot</c> of the storage, then <c>.ravendb-incremental-backup</c> files of changed pages.</summary>
    Snapshot,
}

/// <summary>A backup to a local folder (RavenDB's <c>BackupConfiguration</c> with <c>LocalSettings</c>).</summary>
public class BackupConfiguration
{
    /// <summary>Dump or snapshot.</summary>
    public BackupType BackupType { get; set; } = BackupType.Snapshot;

    /// <summary>Absolute folder on the server's machine where backup folders are made.</summary>
    public string FolderPath { get; set; } = "";

    /// <summary>Leave Lucene index files out of snapshots (restored indexes are built again).</summary>
    public bool ExcludeIndexes { get; set; }

    internal virtual JsonObject ToJson() => new()
    {
        ["BackupType"] = BackupType.ToString(),
        ["LocalSettings"] = new JsonObject { ["FolderPath"] = FolderPath },
        ["SnapshotSettings"] = new JsonObject { ["ExcludeIndexes"] = ExcludeIndexes },
    };
}

/// <summary>A scheduled backup task (RavenDB's <c>PeriodicBackupConfiguration</c>).</summary>
public sealed class PeriodicBackupConfiguration : BackupConfiguration
{
    /// <summary>0 to create a task; an existing id to update it.</summary>
    public long TaskId { get; set; }

    /// <summary>The task's name.</summary>
    public string? Name { get; set; }

    /// <summary>True to keep the schedule off.</summary>
    public bool Disabled { get; set; }

    /// <summary>Cron (five fields, UTC) of full backups, e.g. <c>0 2 * * *</c>.</summary>
    public string? FullBackupFrequency { get; set; }

    /// <summary>Cron of incremental backups (Snapshot tasks only).</summary>
    public string? IncrementalBackupFrequency { get; set; }

    /// <summary>Backup folders older than this are deleted after each full backup (null: kept).</summary>
    public TimeSpan? MinimumBackupAgeToKeep { get; set; }

    internal override JsonObject ToJson()
    {
        var json = base.ToJson();
        json["TaskId"] = TaskId;
        json["Name"] = Name;
        json["Disabled"] = Disabled;
        json["FullBackupFrequency"] = FullBackupFrequency;
        json["IncrementalBackupFrequency"] = IncrementalBackupFrequency;
        if (MinimumBackupAgeToKeep is { } keep)
            json["RetentionPolicy"] = new JsonObject { ["Disabled"] = false, ["MinimumBackupAgeToKeep"] = keep.ToString("c", CultureInfo.InvariantCulture) };
        return json;
    }
}

/// <summary><c>POST /databases/{db}/admin/backup</c>: a one-time full backup; returns the operation id (await it with <see cref="OperationCompletion"/>).</summary>
public sealed class BackupOperation(BackupConfiguration configuration) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) => new PostForNumberCommand(db => $"/databases/{Uri.EscapeDataString(db)}/admin/backup", configuration.ToJson(), "OperationId");
}

/// <summary><c>POST /databases/{db}/admin/periodic-backup</c>: creates or updates a backup task; returns its task id.</summary>
public sealed class UpdatePeriodicBackupOperation(PeriodicBackupConfiguration configuration) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) => new PostForNumberCommand(db => $"/databases/{Uri.EscapeDataString(db)}/admin/periodic-backup", configuration.ToJson(), "TaskId");
}

/// <summary><c>POST /databases/{db}/admin/backup/database?isFullBackup=&amp;taskId=</c>: runs a task now; returns the operation id.</summary>
public sealed class StartBackupOperation(bool isFullBackup, long taskId) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) =>
        new PostForNumberCommand(db => string.Create(CultureInfo.InvariantCulture, $"/databases/{Uri.EscapeDataString(db)}/admin/backup/database?isFullBackup={(isFullBackup ? "true" : "false")}&taskId={taskId}"), null, "OperationId");
}

/// <summary><c>DELETE /databases/{db}/admin/tasks?id=&amp;type=Backup</c>: deletes a backup task (its files stay).</summary>
public sealed class DeleteBackupTaskOperation(long taskId) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) =>
        new PostForNumberCommand(db => string.Create(CultureInfo.InvariantCulture, $"/databases/{Uri.EscapeDataString(db)}/admin/tasks?id={taskId}&type=Backup"), null, "TaskId", HttpMethod.Delete);
}

/// <summary>What a backup task did last (RavenDB's <c>PeriodicBackupStatus</c>, the fields RavenLite fills).</summary>
public sealed record PeriodicBackupStatus(long TaskId, bool IsFull, DateTime? LastFullBackup, DateTime? LastIncrementalBackup, string? BackupDirectory, string? FileName, long LastEtag, string? Error);

/// <summary><c>GET /periodic-backup/status?name={db}&amp;taskId=</c>: the task's status; null before its first backup.</summary>
public sealed class GetPeriodicBackupStatusOperation(long taskId) : IMaintenanceOperation<PeriodicBackupStatus?>
{
    /// <inheritdoc />
    public RavenCommand<PeriodicBackupStatus?> GetCommand(DocumentConventions conventions) => new StatusCommand(taskId);

    private sealed class StatusCommand(long taskId) : RavenCommand<PeriodicBackupStatus?>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Get, string.Create(CultureInfo.InvariantCulture, $"/periodic-backup/status?name={Uri.EscapeDataString(database ?? throw new InvalidOperationException("This operation needs a database."))}&taskId={taskId}"));

        public override async Task<PeriodicBackupStatus?> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            var s = (await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false))["Status"] as JsonObject;
            if (s == null)
                return null;
            static DateTime? Date(JsonNode? n) => n is JsonValue v && v.TryGetValue(out string? text) ? DateTime.Parse(text, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal) : null;
            return new PeriodicBackupStatus((long)s["TaskId"]!, (bool)s["IsFull"]!, Date(s["LastFullBackup"]), Date(s["LastIncrementalBackup"]),
                (string?)s["LocalBackup"]?["BackupDirectory"], (string?)s["LocalBackup"]?["FileName"], (long)s["LastEtag"]!, (string?)s["Error"]?["Exception"]);
        }
    }
}

/// <summary>A restore (RavenDB's <c>RestoreBackupConfiguration</c>): a backup folder into a new database.</summary>
public sealed class RestoreBackupConfiguration
{
    /// <summary>The new database.</summary>
    public string DatabaseName { get; set; } = "";

    /// <summary>The backup folder (on the server's machine).</summary>
    public string BackupLocation { get; set; } = "";

    /// <summary>Restore up to and including this file (null: all of the folder).</summary>
    public string? LastFileNameToRestore { get; set; }

    /// <summary>Leave the indexes out.</summary>
    public bool SkipIndexes { get; set; }

    /// <summary>Restore the database's backup tasks disabled.</summary>
    public bool DisableOngoingTasks { get; set; }
}

/// <summary><c>POST /admin/restore/database</c>: starts a restore; returns the server operation's id (<see cref="OperationCompletion.WaitForServerOperationAsync"/>).</summary>
public sealed class RestoreBackupOperation(RestoreBackupConfiguration configuration) : IServerOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) => new PostForNumberCommand(_ => "/admin/restore/database", new JsonObject
    {
        ["DatabaseName"] = configuration.DatabaseName,
        ["BackupLocation"] = configuration.BackupLocation,
        ["LastFileNameToRestore"] = configuration.LastFileNameToRestore,
        ["SkipIndexes"] = configuration.SkipIndexes,
        ["DisableOngoingTasks"] = configuration.DisableOngoingTasks,
        ["Type"] = "Local",
    }, "OperationId", databaseRequired: false);
}

/// <summary>A POST (or other method) whose answer is an object holding one number that the caller wants.</summary>
internal sealed class PostForNumberCommand(Func<string, string> path, JsonObject? body, string field, HttpMethod? method = null, bool databaseRequired = true) : RavenCommand<long>
{
    public override HttpRequestMessage CreateRequest(string? database)
    {
        string db = database ?? (databaseRequired ? throw new InvalidOperationException("This operation needs a database: set DocumentStore.Database or pass one.") : "");
        var request = new HttpRequestMessage(method ?? HttpMethod.Post, path(db));
        if (body != null)
            request.Content = JsonContent(body);
        return request;
    }

    public override async Task<long> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
        (long?)(await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false))[field] ?? throw new Exceptions.RavenException($"The answer has no {field}.");
}
