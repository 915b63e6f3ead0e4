using RavenLite.Server.Databases;
using RavenLite.Server.Etl;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// ETL as RavenDB's clients set it up (docs/etl.md): <c>PUT /databases/{db}/admin/etl[?id=]</c> (AddEtlOperation,
/// UpdateEtlOperation), <c>RESET /databases/{db}/admin/etl?configurationName=&amp;transformationName=</c>
/// (ResetEtlOperation), <c>POST /databases/{db}/admin/etl/sql/test</c> and <c>/admin/etl/raven/test</c> (a script run
/// on one document, nothing loaded), <c>GET /databases/{db}/etl/stats</c>. Tasks are listed, deleted and toggled through
/// the shared task routes with <c>type=RavenEtl|SqlEtl</c>; connection strings of type Sql through <c>/admin/connection-strings</c>.
/// </summary>
public static class EtlEndpoints
{
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPut("/databases/{db}/admin/etl", DatabaseRoute.Handle(Put)).Requires(Access.DatabaseAdmin);
        app.MapMethods("/databases/{db}/admin/etl", ["RESET"], DatabaseRoute.Handle(Reset)).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/admin/etl/sql/test", DatabaseRoute.Handle((c, db) => Test(c, db, EtlKind.Sql))).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/admin/etl/raven/test", DatabaseRoute.Handle((c, db) => Test(c, db, EtlKind.Raven))).Requires(Access.DatabaseAdmin);
        app.MapGet("/databases/{db}/etl/stats", DatabaseRoute.Handle(Stats)).Requires(Access.DatabaseRead);
    }

    private static async Task Put(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "ETL configuration").ConfigureAwait(false);
        long given = RequestParsing.QueryLong(context.Request, "id") ?? 0;
        var change = JsonSerializer.SerializeToElement(new Dictionary<string, object> { ["TaskId"] = given, ["Configuration"] = body.RootElement });
        var (index, id) = await RecordChangeRoute.RunWithResultAsync(context, db, OngoingTaskChanges.PutEtl, change).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", index);
            w.WriteNumber("TaskId", id);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static Task Reset(HttpContext context, Database db) =>
        RecordChangeRoute.RunAndAnswerAsync(context, db, OngoingTaskChanges.ResetEtl, JsonSerializer.SerializeToElement(new Dictionary<string, string>
        {
            ["ConfigurationName"] = RequestParsing.Required(context.Request, "configurationName"),
            ["TransformationName"] = RequestParsing.Required(context.Request, "transformationName"),
        }));

    private static async Task Test(HttpContext context, Database db, EtlKind kind)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "ETL script test").ConfigureAwait(false);
        var result = await EtlTest.RunAsync(db, body.RootElement, kind, context.RequestAborted).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            if (kind == EtlKind.Sql)
                EtlTest.WriteSql(w, result);
            else
                EtlTest.WriteRaven(w, result);
        }).ConfigureAwait(false);
    }

    private static Task Stats(HttpContext context, Database db)
    {
        string? name = RequestParsing.Query(context.Request, "name");
        string node = NodeTag.Of(context);
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var task in db.Etl.Configuration.Tasks.Where(t => name == null || t.Name.Equals(name, StringComparison.OrdinalIgnoreCase)))
                EtlTaskJson.Write(w, db, task, node);
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }
}
