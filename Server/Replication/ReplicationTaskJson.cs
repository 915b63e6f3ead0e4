using RavenLite.Server.Databases;
using RavenLite.Server.Documents;

namespace RavenLite.Server.Replication;

/// <summary>
/// A replication task as RavenDB's <c>OngoingTaskReplication</c> (<c>GET /databases/{db}/tasks</c>), with RavenLite's
/// progress beside it: the last etag the destination acknowledged, the lag behind this database in etags and in time.
/// </summary>
public static class ReplicationTaskJson
{
    public static void Write(Utf8JsonWriter w, Database db, ExternalReplicationTask task, string nodeTag)
    {
        ArgumentNullException.ThrowIfNull(w);
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(task);
        var sender = db.Replication.Senders.FirstOrDefault(s => s.Task.TaskId == task.TaskId);
        db.Replication.Configuration.ConnectionStrings.TryGetValue(task.ConnectionStringName, out var cs);
        w.WriteStartObject();
        w.WriteNumber("TaskId", task.TaskId);
        w.WriteString("TaskType", "Replication");
        w.WriteString("TaskName", task.Name);
        w.WriteString("TaskState", task.Disabled ? "Disabled" : "Enabled");
        // In a group one member runs the task (docs/cluster.md "Ongoing tasks"); the others say so, as RavenDB's do.
        string responsible = db.Ownership.ResponsibleNode(task.TaskId, task.MentorNode) ?? nodeTag;
        w.WriteString("TaskConnectionStatus", task.Disabled ? "NotActive" : responsible != nodeTag ? "NotOnThisNode" : sender?.Status ?? "Reconnect");
        w.WriteStartObject("ResponsibleNode");
        w.WriteString("NodeTag", responsible);
        w.WriteString("NodeUrl", db.Ownership.UrlOf(responsible) ?? db.Options.ServerUrl);
        w.WriteEndObject();
        w.WriteString("MentorNode", task.MentorNode);
        if (sender?.Error is { } error)
            w.WriteString("Error", error);
        else
            w.WriteNull("Error");
        w.WriteString("ConnectionStringName", task.ConnectionStringName);
        w.WriteString("DestinationDatabase", cs?.Database);
        w.WriteString("DestinationUrl", sender?.ConnectedUrl);
        w.WriteStartArray("TopologyDiscoveryUrls");
        foreach (var u in cs?.TopologyDiscoveryUrls ?? [])
            w.WriteStringValue(u);
        w.WriteEndArray();
        w.WriteString("DelayReplicationFor", task.DelayReplicationFor.ToString("c", CultureInfo.InvariantCulture));
        WriteProgress(w, db, sender);
        w.WriteEndObject();
    }

    /// <summary>The sender's progress: <c>LastAcknowledgedEtag</c>, <c>LastDatabaseEtag</c>, <c>EtagLag</c>, <c>LastAcknowledgedAt</c>, <c>TimeLagMs</c>.</summary>
    internal static void WriteProgress(Utf8JsonWriter w, Database db, ReplicationSender? sender)
    {
        long last, acknowledged = Math.Max(0, sender?.LastAcknowledgedEtag ?? 0);
        DateTime? oldestPending;
        using (var tx = db.Environment.ReadTransaction())
        {
            last = DocumentsStorage.LastEtag(tx);
            var pending = acknowledged < last ? db.Documents.ScanByEtag(tx, acknowledged).FirstOrDefault() : null;
            oldestPending = pending?.Document?.LastModified ?? pending?.Tombstone?.Deleted;
        }
        w.WriteNumber("LastAcknowledgedEtag", acknowledged);
        w.WriteNumber("LastDatabaseEtag", last);
        w.WriteNumber("EtagLag", Math.Max(0, last - acknowledged));
        if (sender?.LastAcknowledgedAt is { } at)
            w.WriteString("LastAcknowledgedAt", Formatting.JsonDates.FormatDate(at));
        else
            w.WriteNull("LastAcknowledgedAt");
        // Behind by the age of the oldest write the destination has not acknowledged.
        double lagMs = oldestPending is { } oldest && oldest > DateTime.MinValue ? Math.Max(0, (DateTime.UtcNow - oldest).TotalMilliseconds) : 0;
        w.WriteNumber("TimeLagMs", Math.Round(lagMs));
    }
}
