using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Formatting;
using RavenLite.Server.Http;
using RavenLite.Server.Security;
using RavenLite.Server.Subscriptions;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Data subscriptions over HTTP (their workers use the TCP port, <see cref="Tcp.TcpServer"/>): create, update,
/// delete, list, state, drop a worker, try a query, enable/disable (<c>/admin/tasks/state</c>), and <c>/info/tcp</c>
/// (where workers connect).
/// </summary>
public static class SubscriptionEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPut("/databases/{db}/subscriptions", DatabaseRoute.Handle(Create)).Requires(Access.DatabaseReadWrite);
        app.MapPost("/databases/{db}/subscriptions/update", DatabaseRoute.Handle(Update)).Requires(Access.DatabaseReadWrite);
        app.MapDelete("/databases/{db}/subscriptions", DatabaseRoute.Handle(Delete)).Requires(Access.DatabaseReadWrite);
        app.MapGet("/databases/{db}/subscriptions", DatabaseRoute.Handle(List)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/subscriptions/state", DatabaseRoute.Handle(State)).Requires(Access.DatabaseRead);
        app.MapPost("/databases/{db}/subscriptions/drop", DatabaseRoute.Handle(Drop)).Requires(Access.DatabaseReadWrite);
        app.MapPost("/databases/{db}/subscriptions/try", DatabaseRoute.Handle(Try)).Requires(Access.DatabaseRead);
        app.MapPost("/databases/{db}/admin/tasks/state", DatabaseRoute.Handle(ToggleState)).Requires(Access.DatabaseAdmin);
        app.MapGet("/info/tcp", TcpInfo).Requires(Access.ValidUser);
        app.MapGet("/info/remote-task/tcp", TcpInfo).Requires(Access.ValidUser);
    }

    private static async Task TcpInfo(HttpContext context)
    {
        int port = await context.RequestServices.GetRequiredService<Tcp.TcpServer>().Port.ConfigureAwait(false);
        string host = context.Request.Host.Host;
        string url = $"tcp://{(host.Contains(':', StringComparison.Ordinal) && !host.StartsWith('[') ? "[" + host + "]" : host)}:{port.ToString(CultureInfo.InvariantCulture)}";
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteString("Url", url);
            // A secured server's TCP port is TLS with the server certificate; the clients accept exactly the one named here.
            if (context.RequestServices.GetService<Security.ServerCertificate>() is { } certificate)
                w.WriteString("Certificate", Convert.ToBase64String(certificate.Current.RawData));
            else
                w.WriteNull("Certificate");
            w.WriteStartArray("Urls");
            w.WriteStringValue(url);
            w.WriteEndArray();
            w.WriteString("NodeTag", NodeTag.Of(context));
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static string? String(JsonElement root, string name) =>
        root.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.String ? v.GetString() : null;

    private static async Task Create(HttpContext context, Database db)
    {
        using var doc = await RequestBody.ReadJsonAsync(context, "subscription").ConfigureAwait(false);
        var root = doc.RootElement;
        if (root.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("The subscription is {Name?, Query, ChangeVector?, Disabled?}.");
        var (_, id) = await RecordChangeRoute.RunWithResultAsync(context, db, Databases.OngoingTaskChanges.PutSubscription, root).ConfigureAwait(false);
        await AnswerAsync(context, 201, db, id).ConfigureAwait(false);
    }

    /// <summary><c>{Name, RaftCommandIndex}</c> of subscription <paramref name="id"/> (its id is the index that made it).</summary>
    private static Task AnswerAsync(HttpContext context, int status, Database db, long id)
    {
        var state = db.Subscriptions.All().FirstOrDefault(s => s.SubscriptionId == id)
            ?? throw new NotFoundException(RavenExceptionTypes.SubscriptionDoesNotExist, $"Subscription {id} is gone already.");
        return JsonResponse.WriteAsync(context, status, w =>
        {
            w.WriteStartObject();
            w.WriteString("Name", state.SubscriptionName);
            w.WriteNumber("RaftCommandIndex", state.SubscriptionId);
            w.WriteEndObject();
        });
    }

    private static async Task Update(HttpContext context, Database db)
    {
        using var doc = await RequestBody.ReadJsonAsync(context, "subscription").ConfigureAwait(false);
        var root = doc.RootElement;
        if (root.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("The update is {Name or Id, Query?, ChangeVector?, Disabled?, CreateNew?}.");
        var (_, id) = await RecordChangeRoute.RunWithResultAsync(context, db, Databases.OngoingTaskChanges.UpdateSubscription, root).ConfigureAwait(false);
        await AnswerAsync(context, 200, db, id).ConfigureAwait(false);
    }

    private static async Task Delete(HttpContext context, Database db)
    {
        string name = RequestParsing.Query(context.Request, "taskName") ?? RequestParsing.Required(context.Request, "name");
        await RecordChangeRoute.RunAsync(context, db, Databases.OngoingTaskChanges.DeleteSubscription,
            JsonSerializer.SerializeToElement(new Dictionary<string, string> { ["Name"] = name })).ConfigureAwait(false);
        await JsonResponse.EmptyAsync(context, 204).ConfigureAwait(false);
    }

    private static void WriteState(Utf8JsonWriter w, SubscriptionState s, Database db)
    {
        w.WriteStartObject();
        w.WriteString("Query", s.Query);
        w.WriteString("ChangeVectorForNextBatchStartingPoint", s.ChangeVectorForNextBatchStartingPoint);
        w.WriteNumber("SubscriptionId", s.SubscriptionId);
        w.WriteString("SubscriptionName", s.SubscriptionName);
        w.WriteString("MentorNode", s.MentorNode);
        w.WriteString("NodeTag", db.Ownership.ResponsibleNode(s.SubscriptionId, s.MentorNode) ?? db.Documents.NodeTag); // the node that serves it
        w.WriteString("LastBatchAckTime", s.LastBatchAckTime is { } a ? JsonDates.FormatDate(a) : null);
        w.WriteString("LastClientConnectionTime", s.LastClientConnectionTime is { } c ? JsonDates.FormatDate(c) : null);
        w.WriteNumber("RaftCommandIndex", s.SubscriptionId);
        w.WriteBoolean("Disabled", s.Disabled);
        w.WriteBoolean("Connected", db.Subscriptions.IsConnected(s.SubscriptionName)); // RavenLite's own
        w.WriteEndObject();
    }

    private static Task List(HttpContext context, Database db)
    {
        var all = db.Subscriptions.All();
        if (RequestParsing.Query(context.Request, "name") is { } name)
            all = all.Where(s => string.Equals(s.SubscriptionName, name, StringComparison.OrdinalIgnoreCase)).ToList();
        int start = RequestParsing.QueryInt(context.Request, "start", 0);
        int pageSize = RequestParsing.QueryInt(context.Request, "pageSize", int.MaxValue);
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var s in all.OrderBy(s => s.SubscriptionId).Skip(start).Take(pageSize))
                WriteState(w, s, db);
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }

    private static Task State(HttpContext context, Database db)
    {
        string name = RequestParsing.Required(context.Request, "name");
        var state = db.Subscriptions.Get(name) ?? throw new NotFoundException(RavenExceptionTypes.SubscriptionDoesNotExist, $"There is no subscription '{name}'.");
        return JsonResponse.WriteAsync(context, 200, w => WriteState(w, state, db));
    }

    private static Task Drop(HttpContext context, Database db)
    {
        string name = RequestParsing.Required(context.Request, "name");
        if (db.Subscriptions.Get(name) == null)
            throw new NotFoundException(RavenExceptionTypes.SubscriptionDoesNotExist, $"There is no subscription '{name}'.");
        db.Subscriptions.Drop(name, "The worker was dropped by request (drop connection).", canReconnect: false);
        return JsonResponse.EmptyAsync(context, 204);
    }

    private static async Task ToggleState(HttpContext context, Database db)
    {
        string? taskName = RequestParsing.Query(context.Request, "taskName") is { Length: > 0 } t ? t : null;
        string key = RequestParsing.Query(context.Request, "key") ?? "";
        if (taskName == null && key.Length == 0)
            throw new BadRequestException("Name the task with taskName or key (its id).");
        string type = RequestParsing.Required(context.Request, "type");
        bool disable = string.Equals(RequestParsing.Query(context.Request, "disable"), "true", StringComparison.OrdinalIgnoreCase);
        if (!type.StartsWith("Subscription", StringComparison.OrdinalIgnoreCase))
        {
            string kind = Databases.OngoingTaskChanges.TaskType(type);
            bool Named(string name) => string.Equals(name, taskName, StringComparison.OrdinalIgnoreCase);
            long taskId = long.TryParse(key, NumberStyles.None, CultureInfo.InvariantCulture, out long k) ? k : kind switch
            {
                "Replication" => db.Replication.Configuration.Tasks.FirstOrDefault(t => Named(t.Name))?.TaskId ?? 0,
                "Backup" => db.Backups.Tasks.FirstOrDefault(t => Named(t.Name))?.TaskId ?? 0,
                _ => db.Etl.Configuration.Tasks.FirstOrDefault(t => Named(t.Name))?.TaskId ?? 0,
            };
            long index = await RecordChangeRoute.RunAsync(context, db, Databases.OngoingTaskChanges.TaskState,
                Databases.OngoingTaskChanges.TaskBody(taskId, kind, disable)).ConfigureAwait(false);
            await JsonResponse.WriteAsync(context, 200, w =>
            {
                w.WriteStartObject();
                w.WriteNumber("TaskId", taskId);
                w.WriteNumber("RaftCommandIndex", index);
                w.WriteEndObject();
            }).ConfigureAwait(false);
            return;
        }
        long? id = long.TryParse(key, NumberStyles.None, CultureInfo.InvariantCulture, out long n) && n > 0 ? n : null;
        var update = new Dictionary<string, object> { ["Disabled"] = disable };
        if ((taskName ?? (id == null ? key : null)) is { } subscriptionName)
            update["Name"] = subscriptionName;
        else
            update["Id"] = id!.Value;
        var (_, subscriptionId) = await RecordChangeRoute.RunWithResultAsync(context, db, Databases.OngoingTaskChanges.UpdateSubscription,
            JsonSerializer.SerializeToElement(update)).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("TaskId", subscriptionId);
            w.WriteNumber("RaftCommandIndex", subscriptionId);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    /// <summary>The documents a subscription query would send first (<c>pageSize</c>, default 1 batch of 25), without creating it.</summary>
    private static async Task Try(HttpContext context, Database db)
    {
        using var doc = await RequestBody.ReadJsonAsync(context, "subscription").ConfigureAwait(false);
        string query = String(doc.RootElement, "Query") ?? throw new BadRequestException("Try needs {Query}.");
        int pageSize = RequestParsing.QueryInt(context.Request, "pageSize", 25, 1, 1024);
        var matcher = db.Subscriptions.Compile(query);
        var results = new List<byte[]>();
        using (var tx = db.Environment.ReadTransaction())
        using (var projection = matcher.BeginBatch(tx))
        {
            foreach (var d in db.Documents.Scan(tx, matcher.Collection))
            {
                if (matcher.Apply(d, projection, tx) is { } output)
                    results.Add(output);
                if (results.Count >= pageSize)
                    break;
            }
        }
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var r in results)
                w.WriteRawValue(r, skipInputValidation: true);
            w.WriteEndArray();
            w.WriteStartObject("Includes");
            w.WriteEndObject();
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }
}
