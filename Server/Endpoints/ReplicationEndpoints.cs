using RavenLite.Server.Databases;
using RavenLite.Server.Http;
using RavenLite.Server.Replication;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Replication as RavenDB's clients set it up (docs/replication.md "Setting it up"):
/// <c>PUT|GET|DELETE /databases/{db}/admin/connection-strings</c> (Raven connection strings),
/// <c>POST /databases/{db}/admin/tasks/external-replication</c> (<c>{Watcher}</c>: create or update a task),
/// <c>GET /databases/{db}/tasks</c> (the ongoing tasks, or one with <c>?key=&amp;type=Replication</c>); deleting and
/// toggling a task go through the shared <c>/admin/tasks</c> routes with <c>type=Replication</c>.
/// </summary>
public static class ReplicationEndpoints
{
    // The kinds RavenDB's answer lists beside Raven's; none are kept here.
    private static readonly string[] OtherConnectionStrings = ["SqlConnectionStrings", "OlapConnectionStrings", "ElasticSearchConnectionStrings", "QueueConnectionStrings", "AiConnectionStrings"];

    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPut("/databases/{db}/admin/connection-strings", DatabaseRoute.Handle(PutConnectionString)).Requires(Access.DatabaseAdmin);
        app.MapGet("/databases/{db}/admin/connection-strings", DatabaseRoute.Handle(GetConnectionStrings)).Requires(Access.DatabaseAdmin);
        app.MapDelete("/databases/{db}/admin/connection-strings", DatabaseRoute.Handle(DeleteConnectionString)).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/admin/tasks/external-replication", DatabaseRoute.Handle(PutTask)).Requires(Access.DatabaseAdmin);
        app.MapGet("/databases/{db}/tasks", DatabaseRoute.Handle(GetTasks)).Requires(Access.DatabaseRead);
    }

    private static async Task PutConnectionString(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "connection string").ConfigureAwait(false);
        var connectionString = RavenConnectionString.Parse(body.RootElement);
        long index = await db.Replication.PutConnectionStringAsync(connectionString).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", index);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static Task GetConnectionStrings(HttpContext context, Database db)
    {
        string? name = RequestParsing.Query(context.Request, "connectionStringName") is { Length: > 0 } n ? n : null;
        var strings = db.Replication.Configuration.ConnectionStrings.Values.Where(c => name == null || c.Name.Equals(name, StringComparison.OrdinalIgnoreCase)).ToList();
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartObject("RavenConnectionStrings");
            foreach (var cs in strings)
            {
                w.WritePropertyName(cs.Name);
                cs.Write(w);
            }
            w.WriteEndObject();
            foreach (string other in OtherConnectionStrings)
            {
                w.WriteStartObject(other);
                w.WriteEndObject();
            }
            w.WriteEndObject();
        });
    }

    private static async Task DeleteConnectionString(HttpContext context, Database db)
    {
        string name = RequestParsing.Required(context.Request, "connectionString");
        string type = RequestParsing.Query(context.Request, "type") ?? "Raven";
        if (!type.Equals("Raven", StringComparison.OrdinalIgnoreCase))
            throw new BadRequestException($"Connection strings of type '{type}' are not kept here.");
        if (!await db.Replication.DeleteConnectionStringAsync(name).ConfigureAwait(false))
            throw new NotFoundException(RavenExceptionTypes.RavenException, $"There is no connection string named '{name}' in database '{db.Name}'.");
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", 0);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static async Task PutTask(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "external replication").ConfigureAwait(false);
        var watcher = RavenConnectionString.Property(body.RootElement, "Watcher") ?? throw new BadRequestException("The body must be {\"Watcher\": {...}}.");
        long id = await db.Replication.PutTaskAsync(ExternalReplicationTask.Parse(watcher)).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", id);
            w.WriteNumber("TaskId", id);
            w.WriteString("ResponsibleNode", NodeTag.Of(context));
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static Task GetTasks(HttpContext context, Database db)
    {
        string? key = RequestParsing.Query(context.Request, "key");
        string? type = RequestParsing.Query(context.Request, "type");
        string node = NodeTag.Of(context);
        if (key != null)
        {
            if (type != null && !type.Equals("Replication", StringComparison.OrdinalIgnoreCase))
                throw new BadRequestException($"Tasks of type '{type}' are not listed here; this route lists Replication tasks.");
            long id = long.TryParse(key, NumberStyles.None, CultureInfo.InvariantCulture, out long k) ? k : throw new BadRequestException("'key' must be a task id.");
            var task = db.Replication.Configuration.Tasks.FirstOrDefault(t => t.TaskId == id)
                ?? throw new NotFoundException(RavenExceptionTypes.RavenException, $"There is no replication task {id} in database '{db.Name}'.");
            return JsonResponse.WriteAsync(context, 200, w => ReplicationTaskJson.Write(w, db, task, node));
        }
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("OngoingTasks");
            foreach (var task in db.Replication.Configuration.Tasks)
                ReplicationTaskJson.Write(w, db, task, node);
            w.WriteEndArray();
            w.WriteNumber("SubscriptionsCount", db.Subscriptions.All().Count);
            w.WriteStartArray("PullReplications");
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }
}
