using RavenLite.Server.Databases;
using RavenLite.Server.Formatting;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// <c>GET /databases/{db}/task?key=|taskName=&amp;type=</c> (RavenDB's <c>GetOngoingTaskInfoOperation</c>): one ongoing
/// task — a replication, a periodic backup, a subscription or an ETL — by id or name, in RavenDB's <c>OngoingTask*</c> shapes;
/// a missing task is a bare 404 (the clients answer null).
/// </summary>
public static class OngoingTaskEndpoints
{
    /// <summary>Maps the route.</summary>
    public static void Map(IEndpointRouteBuilder app) =>
        app.MapGet("/databases/{db}/task", DatabaseRoute.Handle(Get)).Requires(Access.DatabaseRead);

    private static Task Get(HttpContext context, Database db)
    {
        string type = RequestParsing.Required(context.Request, "type");
        string? name = RequestParsing.Query(context.Request, "taskName");
        long? id = name != null ? null
            : long.TryParse(RequestParsing.Required(context.Request, "key"), NumberStyles.None, CultureInfo.InvariantCulture, out long k) ? k
            : throw new BadRequestException("'key' must be a task id (or name the task with taskName).");
        string node = NodeTag.Of(context);
        bool Matches(long taskId, string taskName) => name != null ? string.Equals(taskName, name, StringComparison.OrdinalIgnoreCase) : taskId == id;
        switch (type)
        {
            case "Replication":
                if (db.Replication.Configuration.Tasks.FirstOrDefault(t => Matches(t.TaskId, t.Name)) is { } replication)
                    return JsonResponse.WriteAsync(context, 200, w => Replication.ReplicationTaskJson.Write(w, db, replication, node));
                break;
            case "Backup":
                if (db.Backups.Tasks.FirstOrDefault(t => Matches(t.TaskId, t.Name)) is { } backup)
                    return JsonResponse.WriteAsync(context, 200, w => WriteBackup(w, db, backup, node));
                break;
            case "Subscription":
                if (db.Subscriptions.All().FirstOrDefault(s => Matches(s.SubscriptionId, s.SubscriptionName)) is { } subscription)
                    return JsonResponse.WriteAsync(context, 200, w => WriteSubscription(w, db, subscription, node));
                break;
            case "RavenEtl":
            case "SqlEtl":
                if (db.Etl.Configuration.Tasks.FirstOrDefault(t => t.TaskType == type && Matches(t.TaskId, t.Name)) is { } etl)
                    return JsonResponse.WriteAsync(context, 200, w => Etl.EtlTaskJson.Write(w, db, etl, node));
                break;
            default:
                throw new BadRequestException($"Task type '{type}' is not one this server runs (Replication, Backup, Subscription, RavenEtl, SqlEtl).");
        }
        return JsonResponse.EmptyAsync(context, 404);
    }

    private static void WriteCommon(Utf8JsonWriter w, Database db, long taskId, string type, string name, bool disabled, string? mentor, string node)
    {
        w.WriteNumber("TaskId", taskId);
        w.WriteString("TaskType", type);
        w.WriteString("TaskName", name);
        w.WriteString("TaskState", disabled ? "Disabled" : "Enabled");
        string responsible = db.Ownership.ResponsibleNode(taskId, mentor) ?? node;
        w.WriteString("TaskConnectionStatus", disabled ? "NotActive" : responsible != node ? "NotOnThisNode" : "Active");
        w.WriteStartObject("ResponsibleNode");
        w.WriteString("NodeTag", responsible);
        w.WriteString("NodeUrl", db.Ownership.UrlOf(responsible) ?? db.Options.ServerUrl);
        w.WriteEndObject();
        w.WriteString("MentorNode", mentor);
        w.WriteNull("Error");
    }

    internal static void WriteBackup(Utf8JsonWriter w, Database db, Backups.PeriodicBackupConfiguration task, string node)
    {
        var status = db.Backups.StatusOf(task.TaskId);
        w.WriteStartObject();
        WriteCommon(w, db, task.TaskId, "Backup", task.Name, task.Disabled, task.MentorNode, node);
        w.WriteString("BackupType", task.Type.ToString());
        w.WriteStartArray("BackupDestinations");
        w.WriteStringValue("Local");
        w.WriteEndArray();
        JsonDates.WriteDateOrNull(w, "LastFullBackup", status?.LastFullBackup);
        JsonDates.WriteDateOrNull(w, "LastIncrementalBackup", status?.LastIncrementalBackup);
        w.WriteNull("OnGoingBackup");
        if (!task.Disabled && db.Backups.NextRun(task) is { } next)
        {
            w.WriteStartObject("NextBackup");
            w.WriteString("TimeSpan", (next.At - DateTime.UtcNow < TimeSpan.Zero ? TimeSpan.Zero : next.At - DateTime.UtcNow).ToString("c", CultureInfo.InvariantCulture));
            w.WriteString("DateTime", JsonDates.FormatDate(next.At));
            w.WriteBoolean("IsFull", next.Full);
            w.WriteEndObject();
        }
        else
            w.WriteNull("NextBackup");
        w.WriteStartObject("RetentionPolicy");
        w.WriteBoolean("Disabled", task.MinimumBackupAgeToKeep == null);
        if (task.MinimumBackupAgeToKeep is { } keep)
            w.WriteString("MinimumBackupAgeToKeep", keep.ToString("c", CultureInfo.InvariantCulture));
        else
            w.WriteNull("MinimumBackupAgeToKeep");
        w.WriteEndObject();
        w.WriteBoolean("IsEncrypted", false);
        w.WriteString("LastExecutingNodeTag", node);
        w.WriteEndObject();
    }

    private static void WriteSubscription(Utf8JsonWriter w, Database db, Subscriptions.SubscriptionState s, string node)
    {
        w.WriteStartObject();
        WriteCommon(w, db, s.SubscriptionId, "Subscription", s.SubscriptionName, s.Disabled, s.MentorNode, node);
        w.WriteString("Query", s.Query);
        w.WriteString("SubscriptionName", s.SubscriptionName);
        w.WriteNumber("SubscriptionId", s.SubscriptionId);
        w.WriteString("ChangeVectorForNextBatchStartingPoint", s.ChangeVectorForNextBatchStartingPoint);
        w.WriteBoolean("Disabled", s.Disabled);
        JsonDates.WriteDateOrNull(w, "LastBatchAckTime", s.LastBatchAckTime);
        JsonDates.WriteDateOrNull(w, "LastClientConnectionTime", s.LastClientConnectionTime);
        w.WriteEndObject();
    }

}
