using RavenLite.Server.Backups;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Operations;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Backup and restore as RavenDB's clients call them (docs/http-api.md "Backup and restore"):
/// <c>POST /databases/{db}/admin/backup</c> (one-time backup, <c>BackupConfiguration</c>),
/// <c>POST /databases/{db}/admin/periodic-backup</c> (create or update a task: <c>{RaftCommandIndex, TaskId}</c>),
/// <c>POST /databases/{db}/admin/backup/database?isFullBackup=&amp;taskId=</c> (run a task now),
/// <c>GET /periodic-backup/status?name=&amp;taskId=</c>, <c>DELETE /databases/{db}/admin/tasks?id=&amp;type=Backup</c>,
/// and <c>POST /admin/restore/database</c> (<c>RestoreBackupConfiguration</c>: a server operation). Backups and restores are
/// operations: they answer <c>{OperationId}</c> at once and report through <c>/operations/state</c>.
/// </summary>
public static class BackupEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPost("/databases/{db}/admin/backup", DatabaseRoute.Handle(OneTime)).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/admin/periodic-backup", DatabaseRoute.Handle(PutTask)).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/admin/backup/database", DatabaseRoute.Handle(RunTask)).Requires(Access.DatabaseAdmin);
        app.MapDelete("/databases/{db}/admin/tasks", DatabaseRoute.Handle(DeleteTask)).Requires(Access.DatabaseAdmin);
        app.MapGet("/periodic-backup/status", Status).Requires(Access.DatabaseRead);
        app.MapPost("/admin/restore/database", Restore).Requires(Access.Operator);
    }

    private static async Task OneTime(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "backup configuration").ConfigureAwait(false);
        var config = PeriodicBackupConfiguration.Parse(body.RootElement, periodic: false);
        BackupWriter.EnsureWritable(config.FolderPath);
        var state = db.Backups.Start(config, 0, full: true, RequestParsing.QueryLong(context.Request, "operationId"));
        await OperationAnswer(context, "OperationId", state.Id, "OperationNodeTag").ConfigureAwait(false);
    }

    private static async Task PutTask(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "periodic backup configuration").ConfigureAwait(false);
        var (index, taskId) = await RecordChangeRoute.RunWithResultAsync(context, db, OngoingTaskChanges.PutPeriodicBackup, body.RootElement).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", index);
            w.WriteNumber("TaskId", taskId);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static Task RunTask(HttpContext context, Database db)
    {
        long taskId = RequestParsing.QueryLong(context.Request, "taskId") ?? throw new BadRequestException("Query string parameter 'taskId' must be a number.");
        bool full = !string.Equals(RequestParsing.Query(context.Request, "isFullBackup"), "false", StringComparison.OrdinalIgnoreCase);
        var state = db.Backups.Start(null, taskId, full, RequestParsing.QueryLong(context.Request, "operationId"));
        return OperationAnswer(context, "OperationId", state.Id, "ResponsibleNode");
    }

    private static async Task DeleteTask(HttpContext context, Database db)
    {
        long id = RequestParsing.QueryLong(context.Request, "id") ?? throw new BadRequestException("Query string parameter 'id' must be a number.");
        string type = RequestParsing.Required(context.Request, "type");
        long index = await RecordChangeRoute.RunAsync(context, db, OngoingTaskChanges.DeleteTask, OngoingTaskChanges.TaskBody(id, type)).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", index);
            w.WriteNumber("TaskId", id);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static async Task Status(HttpContext context)
    {
        string name = RequestParsing.Required(context.Request, "name");
        long taskId = RequestParsing.QueryLong(context.Request, "taskId") ?? throw new BadRequestException("Query string parameter 'taskId' must be a number.");
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        var db = registry.Acquire(name);
        try
        {
            if (db.Backups.Get(taskId) == null)
                throw new NotFoundException(RavenExceptionTypes.RavenException, $"There is no backup task {taskId} in database '{db.Name}'.");
            var status = db.Backups.StatusOf(taskId);
            await JsonResponse.WriteAsync(context, 200, w =>
            {
                w.WriteStartObject();
                w.WriteBoolean("IsSharded", false);
                w.WritePropertyName("Status");
                if (status == null)
                    w.WriteNullValue();
                else
                    status.WriteRavenStatus(w, db.Documents.NodeTag);
                w.WriteEndObject();
            }).ConfigureAwait(false);
        }
        finally
        {
            db.Release();
        }
    }

    private static async Task Restore(HttpContext context)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "restore configuration").ConfigureAwait(false);
        var request = DatabaseRestorer.Parse(body.RootElement);
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        if (registry.Find(request.DatabaseName) != null)
            throw new BadRequestException($"Cannot restore into database '{request.DatabaseName}': it already exists (a restore creates a new database).");
        DatabaseRestorer.Chain(request); // 400 now for a folder without backups
        var operations = context.RequestServices.GetRequiredService<ServerOperations>();
        var options = context.RequestServices.GetRequiredService<ServerOptions>();
        var logger = context.RequestServices.GetRequiredService<ILogger<DatabaseRegistry>>();
        var state = operations.Table.Start(operations.Table.NextId(), "DatabaseRestore");
        operations.Table.RunInBackground(state, () =>
        {
            long at = DatabaseRestorer.Restore(registry, request, options, logger, state.Token);
            return Task.FromResult(System.Text.Json.JsonSerializer.SerializeToUtf8Bytes(new Dictionary<string, object>
            {
                ["$type"] = "Raven.Client.Documents.Operations.Backups.RestoreResult, Raven.Client",
                ["DatabaseName"] = request.DatabaseName,
                ["TransactionId"] = at,
                ["Messages"] = new[] { $"Restored '{request.DatabaseName}' from {request.BackupLocation}." },
            }));
        }, "The restore did not complete");
        await OperationAnswer(context, "OperationId", state.Id, "OperationNodeTag").ConfigureAwait(false);
    }

    /// <summary>The answer of a request that started an operation: <c>{"OperationId": id, "OperationNodeTag"|"ResponsibleNode": "A"}</c>.</summary>
    internal static Task OperationAnswer(HttpContext context, string idName, long id, string nodeName) =>
        JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber(idName, id);
            w.WriteString(nodeName, NodeTag.Of(context));
            w.WriteEndObject();
        });
}
