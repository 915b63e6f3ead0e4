using System.IO.Compression;
using Cronos;

namespace RavenLite.Server.Backups;

#pragma warning disable CA1507 // the JSON names are RavenDB's wire names, equal to some member names by coincidence

/// <summary>
/// A backup task as RavenDB's <c>PeriodicBackupConfiguration</c> (and, without the schedule, its one-time
/// <c>BackupConfiguration</c>): <c>BackupType</c>, <c>LocalSettings.FolderPath</c>, <c>SnapshotSettings</c>
/// (<c>CompressionLevel</c>, <c>ExcludeIndexes</c>), <c>FullBackupFrequency</c> / <c>IncrementalBackupFrequency</c>
/// (cron, five fields, UTC), <c>RetentionPolicy</c> (<c>MinimumBackupAgeToKeep</c>), <c>Disabled</c>. Destinations
/// other than a local folder (S3, Azure, FTP, ...) are refused: this server has no network beyond its clients.
/// </summary>
public sealed class PeriodicBackupConfiguration
{
    private static readonly string[] RemoteDestinations = ["S3Settings", "GlacierSettings", "AzureSettings", "FtpSettings", "GoogleCloudSettings"];

    /// <summary>The task id (assigned when stored).</summary>
    public long TaskId { get; set; }

    /// <summary>The task's name.</summary>
    public string Name { get; set; } = "";

    /// <summary>True when the schedule is off.</summary>
    public bool Disabled { get; set; }

    /// <summary>Dump or snapshot.</summary>
    public BackupType Type { get; init; }

    /// <summary>The local folder backup folders are made in.</summary>
    public string FolderPath { get; init; } = "";

    /// <summary>Leave Lucene index files out.</summary>
    public bool ExcludeIndexes { get; init; }

    /// <summary>Zip compression.</summary>
    public CompressionLevel Compression { get; init; } = CompressionLevel.Fastest;

    /// <summary>Cron of full backups (null: none scheduled).</summary>
    public CronExpression? Full { get; init; }

    /// <summary>Cron of incremental backups (null: none scheduled).</summary>
    public CronExpression? Incremental { get; init; }

    /// <summary>Backup folders older than this are deleted after a full backup (null: kept).</summary>
    public TimeSpan? MinimumBackupAgeToKeep { get; init; }

    /// <summary>When the task was stored (UTC): the schedule's starting point.</summary>
    public DateTime CreatedAt { get; set; } = DateTime.UtcNow;

    /// <summary>The configuration as received, written back by the task list.</summary>
    public byte[] Json { get; set; } = [];

    /// <summary>The node that runs the task while it is a member of the group (RavenDB's <c>MentorNode</c>); null: the cluster picks one.</summary>
    public string? MentorNode { get; init; }

    /// <summary>The request for one backup of this task.</summary>
    public BackupRequest Request(bool incremental, string? chainFolder) =>
        new(Type, FolderPath, incremental, chainFolder, ExcludeIndexes, Compression);

    /// <summary>Parses a configuration; 400 naming what is wrong. <paramref name="periodic"/> requires a schedule.</summary>
    /// <param name="root">The configuration.</param>
    /// <param name="periodic">A periodic task (it needs a schedule).</param>
    /// <param name="defaultFolder">Where a task without a destination backs up (RavenDB accepts one without; here it is a
    /// folder of the server's data directory), kept in the configuration; null: a destination is required.</param>
    public static PeriodicBackupConfiguration Parse(JsonElement root, bool periodic, string? defaultFolder = null)
    {
        if (root.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("A backup configuration is a JSON object.");
        foreach (string remote in RemoteDestinations)
            if (root.TryGetProperty(remote, out var r) && r.ValueKind == JsonValueKind.Object && !(r.TryGetProperty("Disabled", out var d) && d.ValueKind == JsonValueKind.True))
                throw new BadRequestException($"{remote}: RavenLite backs up to a local folder only (LocalSettings.FolderPath).");
        string folder = root.TryGetProperty("LocalSettings", out var local) && local.ValueKind == JsonValueKind.Object
                        && local.TryGetProperty("FolderPath", out var fp) && fp.ValueKind == JsonValueKind.String ? fp.GetString() ?? "" : "";
        if (folder.Length == 0 && defaultFolder != null)
        {
            folder = defaultFolder;
            var withFolder = System.Text.Json.Nodes.JsonNode.Parse(root.GetRawText())!.AsObject();
            withFolder["LocalSettings"] = new System.Text.Json.Nodes.JsonObject { ["FolderPath"] = folder, ["Disabled"] = false };
            using var rewritten = JsonDocument.Parse(withFolder.ToJsonString());
            return Parse(rewritten.RootElement, periodic);
        }
        if (folder.Length == 0)
            throw new BadRequestException("LocalSettings.FolderPath is required: the folder backups are written to.");
        if (!Path.IsPathFullyQualified(folder))
            throw new BadRequestException($"LocalSettings.FolderPath '{folder}' must be an absolute path.");
        var type = BackupType.Backup;
        if (root.TryGetProperty("BackupType", out var bt) && bt.ValueKind == JsonValueKind.String && !Enum.TryParse(bt.GetString(), ignoreCase: true, out type))
            throw new BadRequestException($"BackupType '{bt.GetString()}' is not 'Backup' or 'Snapshot'.");
        bool exclude = false;
        var level = CompressionLevel.Fastest;
        if (root.TryGetProperty("SnapshotSettings", out var ss) && ss.ValueKind == JsonValueKind.Object)
        {
            exclude = ss.TryGetProperty("ExcludeIndexes", out var ex) && ex.ValueKind == JsonValueKind.True;
            if (ss.TryGetProperty("CompressionLevel", out var cl) && cl.ValueKind == JsonValueKind.String && !Enum.TryParse(cl.GetString(), ignoreCase: true, out level))
                throw new BadRequestException($"SnapshotSettings.CompressionLevel '{cl.GetString()}' is not Optimal, Fastest, NoCompression or SmallestSize.");
        }
        var full = Cron(root, "FullBackupFrequency");
        var incremental = Cron(root, "IncrementalBackupFrequency");
        if (periodic && full == null && incremental == null)
            throw new BadRequestException("A periodic backup needs FullBackupFrequency or IncrementalBackupFrequency (cron, e.g. '0 2 * * *').");
        if (incremental != null && type != BackupType.Snapshot)
            throw new BadRequestException("IncrementalBackupFrequency needs BackupType 'Snapshot': RavenLite's incremental backups are storage snapshots; a 'Backup' task writes full .ravendbdump files (FullBackupFrequency).");
        TimeSpan? keep = null;
        if (root.TryGetProperty("RetentionPolicy", out var rp) && rp.ValueKind == JsonValueKind.Object
            && !(rp.TryGetProperty("Disabled", out var rd) && rd.ValueKind == JsonValueKind.True)
            && rp.TryGetProperty("MinimumBackupAgeToKeep", out var age) && age.ValueKind == JsonValueKind.String)
        {
            if (!TimeSpan.TryParse(age.GetString(), System.Globalization.CultureInfo.InvariantCulture, out var k) || k <= TimeSpan.Zero)
                throw new BadRequestException($"RetentionPolicy.MinimumBackupAgeToKeep '{age.GetString()}' is not a positive time span (d.hh:mm:ss).");
            keep = k;
        }
        return new PeriodicBackupConfiguration
        {
            TaskId = root.TryGetProperty("TaskId", out var id) && id.ValueKind == JsonValueKind.Number && id.TryGetInt64(out long n) ? n : 0,
            Name = root.TryGetProperty("Name", out var name) && name.ValueKind == JsonValueKind.String ? name.GetString() ?? "" : "",
            Disabled = root.TryGetProperty("Disabled", out var dis) && dis.ValueKind == JsonValueKind.True,
            Type = type,
            FolderPath = folder,
            ExcludeIndexes = exclude,
            Compression = level,
            Full = full,
            Incremental = incremental,
            MinimumBackupAgeToKeep = keep,
            MentorNode = root.TryGetProperty("MentorNode", out var mentor) && mentor.ValueKind == JsonValueKind.String && mentor.GetString() is { Length: > 0 } m ? m : null,
            Json = JsonSerializer.SerializeToUtf8Bytes(root),
        };
    }

    private static CronExpression? Cron(JsonElement root, string name)
    {
        if (!root.TryGetProperty(name, out var v) || v.ValueKind != JsonValueKind.String || string.IsNullOrWhiteSpace(v.GetString()))
            return null;
        try
        {
            return CronExpression.Parse(v.GetString()!, CronFormat.Standard);
        }
        catch (CronFormatException e)
        {
            throw new BadRequestException($"{name} '{v.GetString()}' is not a cron expression of five fields: {e.Message}");
        }
    }
}
