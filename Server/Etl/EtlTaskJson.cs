using RavenLite.Server.Databases;

namespace RavenLite.Server.Etl;

/// <summary>
/// An ETL task as RavenDB's <c>OngoingTaskRavenEtl</c> / <c>OngoingTaskSqlEtl</c> (<c>GET /databases/{db}/tasks</c>,
/// <c>/task?type=RavenEtl|SqlEtl</c>), with RavenLite's progress beside it: per transformation its state, last
/// processed etag, lag in etags and in time, documents loaded and its error.
/// </summary>
public static class EtlTaskJson
{
    public static void Write(Utf8JsonWriter w, Database db, EtlTask task, string nodeTag)
    {
        ArgumentNullException.ThrowIfNull(w);
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(task);
        var processes = db.Etl.Processes.Where(p => p.Task.TaskId == task.TaskId).ToList();
        string responsible = db.Ownership.ResponsibleNode(task.TaskId, task.MentorNode) ?? nodeTag;
        string? error = processes.Select(p => p.Error).FirstOrDefault(e => e != null);
        w.WriteStartObject();
        w.WriteNumber("TaskId", task.TaskId);
        w.WriteString("TaskType", task.TaskType);
        w.WriteString("TaskName", task.Name);
        w.WriteString("TaskState", task.Disabled || task.Transforms.All(t => t.Disabled) ? "Disabled" : task.Transforms.Any(t => t.Disabled) ? "PartiallyEnabled" : "Enabled");
        w.WriteString("TaskConnectionStatus", task.Disabled ? "NotActive" : responsible != nodeTag ? "NotOnThisNode"
            : processes.Count > 0 && processes.All(p => p.State == "Running") ? "Active" : processes.Count == 0 ? "NotActive" : "Reconnect");
        w.WriteStartObject("ResponsibleNode");
        w.WriteString("NodeTag", responsible);
        w.WriteString("NodeUrl", db.Ownership.UrlOf(responsible) ?? db.Options.ServerUrl);
        w.WriteEndObject();
        w.WriteString("MentorNode", task.MentorNode);
        w.WriteString("Error", error);
        w.WriteString("ConnectionStringName", task.ConnectionStringName);
        if (task.Kind == EtlKind.Raven)
        {
            db.Replication.Configuration.ConnectionStrings.TryGetValue(task.ConnectionStringName, out var cs);
            w.WriteString("DestinationDatabase", cs?.Database);
            w.WriteString("DestinationUrl", cs is { TopologyDiscoveryUrls.Count: > 0 } ? cs.TopologyDiscoveryUrls[0] : null);
            w.WriteStartArray("TopologyDiscoveryUrls");
            foreach (string u in cs?.TopologyDiscoveryUrls ?? [])
                w.WriteStringValue(u);
            w.WriteEndArray();
        }
        else
        {
            var cs = db.Etl.Configuration.SqlConnectionStrings.GetValueOrDefault(task.ConnectionStringName);
            var (server, database) = cs?.Describe() ?? (null, null);
            w.WriteString("DestinationServer", server);
            w.WriteString("DestinationDatabase", database);
            w.WriteBoolean("ConnectionStringDefined", cs != null);
        }
        w.WritePropertyName("Configuration");
        task.Write(w, withType: false);
        w.WriteStartArray("Transformations");
        foreach (var t in task.Transforms)
        {
            var p = processes.FirstOrDefault(x => x.Transformation.Name == t.Name);
            w.WriteStartObject();
            w.WriteString("Name", t.Name);
            w.WriteString("State", t.Disabled || task.Disabled ? "Disabled" : p?.State ?? (responsible != nodeTag ? "NotOnThisNode" : "NotRunning"));
            if (p != null)
            {
                var (etags, ms) = p.Lag();
                w.WriteNumber("LastProcessedEtag", p.LastProcessedEtag);
                w.WriteNumber("EtagLag", etags);
                w.WriteNumber("TimeLagMs", Math.Round(ms));
                w.WriteNumber("Loaded", p.Loaded);
                w.WriteNumber("FailedBatches", p.Failures);
                Formatting.JsonDates.WriteDateOrNull(w, "LastBatchAt", p.LastBatchAt);
                w.WriteString("Error", p.Error);
            }
            w.WriteEndObject();
        }
        w.WriteEndArray();
        w.WriteEndObject();
    }
}
