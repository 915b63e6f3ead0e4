using RavenLite.Server.Databases;
using RavenLite.Server.Http;
using RavenLite.Server.Replication;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Replication as RavenDB's clients set it up (docs/replication.md "Setting it up"):
/// <c>PUT|GET|DELETE /databases/{db}/admin/connection-strings</c> (Raven connection strings, and Sql ones for ETL),
/// <c>POST /databases/{db}/admin/tasks/external-replication</c> (<c>{Watcher}</c>: create or update a task),
/// <c>GET /databases/{db}/tasks</c> (the ongoing tasks — replications and ETL —, or one with <c>?key=&amp;type=</c>); deleting and
/// toggling a task go through the shared <c>/admin/tasks</c> routes with <c>type=Replication</c>;
/// <c>GET /databases/{db}/replication/conflicts[?docId=]</c> and <c>POST /admin/replication/conflicts/solver?name=</c>.
/// </summary>
public static class ReplicationEndpoints
{
    // The kinds RavenDB's answer lists beside Raven and Sql; none are kept here.
    private static readonly string[] OtherConnectionStrings = ["OlapConnectionStrings", "ElasticSearchConnectionStrings", "QueueConnectionStrings", "AiConnectionStrings"];

    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPut("/databases/{db}/admin/connection-strings", DatabaseRoute.Handle(PutConnectionString)).Requires(Access.DatabaseAdmin);
        app.MapGet("/databases/{db}/admin/connection-strings", DatabaseRoute.Handle(GetConnectionStrings)).Requires(Access.DatabaseAdmin);
        app.MapDelete("/databases/{db}/admin/connection-strings", DatabaseRoute.Handle(DeleteConnectionString)).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/admin/tasks/external-replication", DatabaseRoute.Handle(PutTask)).Requires(Access.DatabaseAdmin);
        app.MapGet("/databases/{db}/tasks", DatabaseRoute.Handle(GetTasks)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/replication/conflicts", DatabaseRoute.Handle(GetConflicts)).Requires(Access.DatabaseRead);
        app.MapPost("/admin/replication/conflicts/solver", PutSolver).Requires(Access.DatabaseAdmin);
    }

    private static async Task PutSolver(HttpContext context)
    {
        string name = RequestParsing.Required(context.Request, "name");
        using var body = await RequestBody.ReadJsonAsync(context, "conflict solver").ConfigureAwait(false);
        var solver = ConflictSolver.Parse(body.RootElement);
        var db = context.RequestServices.GetRequiredService<DatabaseRegistry>().Acquire(name);
        try
        {
            long index = await RecordChangeRoute.RunAsync(context, db, RecordChanges.ConflictSolver, body.RootElement).ConfigureAwait(false);
            await JsonResponse.WriteAsync(context, 200, w =>
            {
                w.WriteStartObject();
                w.WriteNumber("RaftCommandIndex", index);
                w.WriteString("Key", db.Name);
                w.WritePropertyName("Solver");
                solver.Write(w);
                w.WriteEndObject();
            }).ConfigureAwait(false);
        }
        finally
        {
            db.Release();
        }
    }

    /// <summary>
    /// <c>?docId=</c>: the versions of that document in conflict (<c>{Id, Results: [{ChangeVector, Doc, LastModified}], LargestEtag}</c>);
    /// without it, the ids in conflict (<c>{TotalResults, Results: [{Id, LastModified, ConflictsPerDocument}]}</c>).
    /// </summary>
    private static Task GetConflicts(HttpContext context, Database db)
    {
        string? docId = RequestParsing.Query(context.Request, "docId");
        using var tx = db.Environment.ReadTransaction();
        long largest = Documents.DocumentsStorage.LastEtag(tx);
        if (docId != null)
        {
            var versions = Documents.DocumentConflicts.Of(tx, db.Documents.KeyOf(docId));
            return JsonResponse.WriteAsync(context, 200, w =>
            {
                w.WriteStartObject();
                w.WriteString("Id", docId);
                w.WriteStartArray("Results");
                foreach (var v in versions)
                {
                    w.WriteStartObject();
                    w.WriteString("ChangeVector", v.ChangeVector);
                    w.WritePropertyName("Doc");
                    if (v.Json == null)
                        w.WriteNullValue();
                    else
                        w.WriteRawValue(v.Json, skipInputValidation: true);
                    w.WriteString("LastModified", Formatting.JsonDates.FormatDate(v.LastModified));
                    w.WriteString("Collection", v.Collection);
                    w.WriteEndObject();
                }
                w.WriteEndArray();
                w.WriteNumber("LargestEtag", largest);
                w.WriteEndObject();
            });
        }
        int start = RequestParsing.QueryInt(context.Request, "start", 0, 0, int.MaxValue);
        int pageSize = RequestParsing.QueryInt(context.Request, "pageSize", int.MaxValue, 0, int.MaxValue);
        var all = Documents.DocumentConflicts.All(tx);
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("TotalResults", all.Count);
            w.WriteStartArray("Results");
            foreach (var (id, count, modified) in all.Skip(start).Take(pageSize))
            {
                w.WriteStartObject();
                w.WriteString("Id", id);
                w.WriteString("LastModified", Formatting.JsonDates.FormatDate(modified));
                w.WriteNumber("ConflictsPerDocument", count);
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }

    private static async Task PutConnectionString(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "connection string").ConfigureAwait(false);
        long index = await RecordChangeRoute.RunAsync(context, db, OngoingTaskChanges.PutConnectionString, body.RootElement).ConfigureAwait(false);
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
        string? type = RequestParsing.Query(context.Request, "type") is { Length: > 0 } t ? t : null;
        bool Named(string cs) => name == null || cs.Equals(name, StringComparison.OrdinalIgnoreCase);
        bool raven = type == null || type.Equals("Raven", StringComparison.OrdinalIgnoreCase), sql = type == null || type.Equals("Sql", StringComparison.OrdinalIgnoreCase);
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartObject("RavenConnectionStrings");
            foreach (var cs in db.Replication.Configuration.ConnectionStrings.Values.Where(c => raven && Named(c.Name)))
            {
                w.WritePropertyName(cs.Name);
                cs.Write(w);
            }
            w.WriteEndObject();
            w.WriteStartObject("SqlConnectionStrings");
            foreach (var cs in db.Etl.Configuration.SqlConnectionStrings.Values.Where(c => sql && Named(c.Name)))
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
        if (!type.Equals("Raven", StringComparison.OrdinalIgnoreCase) && !type.Equals("Sql", StringComparison.OrdinalIgnoreCase))
            throw new BadRequestException($"Connection strings of type '{type}' are not kept here (Raven and Sql are).");
        long index = await RecordChangeRoute.RunAsync(context, db, OngoingTaskChanges.DeleteConnectionString,
            JsonSerializer.SerializeToElement(new Dictionary<string, string> { ["Name"] = name, ["Type"] = type })).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", index);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static async Task PutTask(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "external replication").ConfigureAwait(false);
        var watcher = RavenConnectionString.Property(body.RootElement, "Watcher") ?? throw new BadRequestException("The body must be {\"Watcher\": {...}}.");
        var (index, id) = await RecordChangeRoute.RunWithResultAsync(context, db, OngoingTaskChanges.PutExternalReplication, watcher).ConfigureAwait(false);
        string? mentor = db.Replication.Configuration.Tasks.FirstOrDefault(t => t.TaskId == id)?.MentorNode;
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", index);
            w.WriteNumber("TaskId", id);
            w.WriteString("ResponsibleNode", db.Ownership.ResponsibleNode(id, mentor) ?? NodeTag.Of(context));
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
            long id = long.TryParse(key, NumberStyles.None, CultureInfo.InvariantCulture, out long k) ? k : throw new BadRequestException("'key' must be a task id.");
            if (type != null && (type.Equals("RavenEtl", StringComparison.OrdinalIgnoreCase) || type.Equals("SqlEtl", StringComparison.OrdinalIgnoreCase)))
            {
                var etl = db.Etl.Configuration.Tasks.FirstOrDefault(t => t.TaskId == id)
                    ?? throw new NotFoundException(RavenExceptionTypes.RavenException, $"There is no ETL task {id} in database '{db.Name}'.");
                return JsonResponse.WriteAsync(context, 200, w => Etl.EtlTaskJson.Write(w, db, etl, node));
            }
            if (type != null && !type.Equals("Replication", StringComparison.OrdinalIgnoreCase))
                throw new BadRequestException($"Tasks of type '{type}' are not listed here; this route lists Replication, RavenEtl and SqlEtl tasks.");
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
            foreach (var task in db.Etl.Configuration.Tasks)
                Etl.EtlTaskJson.Write(w, db, task, node);
            foreach (var task in db.Backups.Tasks)
                OngoingTaskEndpoints.WriteBackup(w, db, task, node);
            w.WriteEndArray();
            w.WriteNumber("SubscriptionsCount", db.Subscriptions.All().Count);
            w.WriteStartArray("PullReplications");
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }
}
