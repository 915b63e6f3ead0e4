using RavenLite.Server.Databases;

namespace RavenLite.Server.Replication;

/// <summary>
/// A database's replication in <c>/databases/{db}/stats</c> (<c>"Replication"</c>, RavenLite's addition): each outgoing
/// task's state and lag, and each source that replicated into it.
/// </summary>
public static class ReplicationStatsJson
{
    public static void Write(Utf8JsonWriter w, Database db)
    {
        ArgumentNullException.ThrowIfNull(w);
        ArgumentNullException.ThrowIfNull(db);
        w.WriteStartObject("Replication");
        w.WriteStartArray("Outgoing");
        foreach (var task in db.Replication.Configuration.Tasks)
        {
            var sender = db.Replication.Senders.FirstOrDefault(s => s.Task.TaskId == task.TaskId);
            w.WriteStartObject();
            w.WriteNumber("TaskId", task.TaskId);
            w.WriteString("Name", task.Name);
            w.WriteString("Status", task.Disabled ? "NotActive" : sender?.Status ?? "Reconnect");
            w.WriteString("Error", sender?.Error);
            ReplicationTaskJson.WriteProgress(w, db, sender);
            w.WriteEndObject();
        }
        w.WriteEndArray();
        w.WriteStartArray("Incoming");
        foreach (var source in db.Replication.IncomingSources)
        {
            w.WriteStartObject();
            w.WriteString("SourceDatabaseId", source.SourceDatabaseId);
            w.WriteString("SourceDatabaseName", source.SourceDatabaseName);
            w.WriteString("SourceUrl", source.SourceUrl);
            w.WriteBoolean("Connected", source.Connected);
            w.WriteNumber("LastEtag", source.LastEtag);
            w.WriteNumber("ItemsApplied", source.Applied);
            w.WriteNumber("ConflictsResolved", source.Resolved);
            w.WriteNumber("ConflictsKept", source.Conflicted);
            w.WriteNumber("AttachmentContentsReceived", source.Contents.Count);
            w.WriteNumber("AttachmentBytesReceived", source.Contents.Bytes);
            w.WriteString("LastHeard", Formatting.JsonDates.FormatDate(source.LastHeard));
            w.WriteString("Error", source.Error);
            w.WriteEndObject();
        }
        w.WriteEndArray();
        w.WriteEndObject();
    }
}
