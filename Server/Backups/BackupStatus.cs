using RavenLite.Server.Formatting;
namespace RavenLite.Server.Backups;

#pragma warning disable CA1507 // the JSON names are RavenDB's wire names, equal to some member names by coincidence

/// <summary>
/// What a periodic backup task last did (stored beside its configuration): the backup folder its incrementals extend,
/// the last file, times of the last full and incremental backups, the last etag backed up and the last error.
/// Written as RavenDB's <c>PeriodicBackupStatus</c> by <see cref="WriteRavenStatus"/>.
/// </summary>
public sealed record BackupStatus
{
    /// <summary>The task.</summary>
    public long TaskId { get; init; }

    /// <summary>Type of the last backup.</summary>
    public BackupType Type { get; init; }

    /// <summary>The backup folder of the current chain (null: none yet).</summary>
    public string? FolderPath { get; init; }

    /// <summary>The last file written.</summary>
    public string? FileName { get; init; }

    /// <summary>When the last full backup was taken.</summary>
    public DateTime? LastFullBackup { get; init; }

    /// <summary>When the last incremental backup was taken.</summary>
    public DateTime? LastIncrementalBackup { get; init; }

    /// <summary>True when the last backup was full.</summary>
    public bool IsFull { get; init; }

    /// <summary>The database's last etag in the last backup.</summary>
    public long LastEtag { get; init; }

    /// <summary>How long the last backup took.</summary>
    public long DurationInMs { get; init; }

    /// <summary>The last failure (null after a success).</summary>
    public string? Error { get; init; }

    /// <summary>When it failed.</summary>
    public DateTime? ErrorAt { get; init; }

    /// <summary>The operation of the last run.</summary>
    public long LastOperationId { get; init; }

    /// <summary>Serialized for storage.</summary>
    public byte[] ToJson() => JsonSerializer.SerializeToUtf8Bytes(this);

    /// <summary>Read from storage.</summary>
    public static BackupStatus Parse(JsonElement json) => json.Deserialize<BackupStatus>() ?? throw new JsonException("A backup status is null.");

    /// <summary>RavenDB's <c>PeriodicBackupStatus</c> for this task.</summary>
    public void WriteRavenStatus(Utf8JsonWriter w, string nodeTag)
    {
        w.WriteStartObject();
        w.WriteNumber("TaskId", TaskId);
        w.WriteString("BackupType", Type.ToString());
        w.WriteBoolean("IsFull", IsFull);
        w.WriteString("NodeTag", nodeTag);
        JsonDates.WriteDateOrNull(w, "LastFullBackup", LastFullBackup);
        JsonDates.WriteDateOrNull(w, "LastIncrementalBackup", LastIncrementalBackup);
        JsonDates.WriteDateOrNull(w, "LastFullBackupInternal", LastFullBackup);
        JsonDates.WriteDateOrNull(w, "LastIncrementalBackupInternal", LastIncrementalBackup);
        w.WriteStartObject("LocalBackup");
        w.WriteString("BackupDirectory", FolderPath);
        w.WriteString("FileName", FileName);
        w.WriteBoolean("TempFolderUsed", false);
        JsonDates.WriteDateOrNull(w, "LastFullBackup", LastFullBackup);
        JsonDates.WriteDateOrNull(w, "LastIncrementalBackup", LastIncrementalBackup);
        w.WriteNumber(IsFull ? "FullBackupDurationInMs" : "IncrementalBackupDurationInMs", DurationInMs);
        w.WriteNull("Exception");
        w.WriteEndObject();
        w.WriteNumber("LastEtag", LastEtag);
        w.WriteString("FolderName", FolderPath == null ? null : Path.GetFileName(FolderPath));
        w.WriteNumber("DurationInMs", DurationInMs);
        w.WriteNumber("LastOperationId", LastOperationId);
        w.WriteBoolean("IsEncrypted", false);
        w.WriteNumber("Version", 1);
        if (Error == null)
        {
            w.WriteNull("Error");
        }
        else
        {
            w.WriteStartObject("Error");
            w.WriteString("Exception", Error);
            JsonDates.WriteDateOrNull(w, "At", ErrorAt);
            w.WriteEndObject();
        }
        w.WriteEndObject();
    }

}
