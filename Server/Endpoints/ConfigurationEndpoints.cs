using System.Text.Json.Nodes;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Client configuration and database settings (docs/http-api.md "Administration"):
/// <c>GET /databases/{db}/configuration/client</c> (<c>{Etag, Configuration}</c>: the database's, else the server's),
/// <c>PUT /databases/{db}/admin/configuration/client</c>, <c>GET|PUT /configuration/client</c> and
/// <c>/admin/configuration/client</c> (server-wide), and <c>PUT /databases/{db}/admin/configuration/settings</c>
/// (per-database overrides of <see cref="DatabaseRecordFile.KnownSettings"/>; the database reopens to apply them).
/// Clients holding an older configuration etag get <c>Refresh-Client-Configuration: true</c> (<see cref="DatabaseRoute"/>).
/// </summary>
public static class ConfigurationEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapGet("/databases/{db}/configuration/client", DatabaseRoute.Handle(GetClient)).Requires(Access.DatabaseRead);
        app.MapPut("/databases/{db}/admin/configuration/client", DatabaseRoute.Handle(PutClient)).Requires(Access.DatabaseAdmin);
        app.MapGet("/configuration/client", GetServerClient).Requires(Access.ValidUser);
        app.MapPut("/admin/configuration/client", PutServerClient).Requires(Access.Operator);
        app.MapPut("/databases/{db}/admin/configuration/settings", DatabaseRoute.Handle(PutSettings)).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/admin/documents-compression/config", DatabaseRoute.Handle(PutCompression)).Requires(Access.DatabaseAdmin);
    }

    private static Task GetClient(HttpContext context, Database db)
    {
        var (configuration, etag) = context.RequestServices.GetRequiredService<ServerClientConfiguration>().EffectiveFor(db.Record.Client, db.Record.ClientEtag);
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("Etag", etag);
            w.WritePropertyName("Configuration");
            if (configuration == null)
                w.WriteNullValue();
            else
                w.WriteRawValue(configuration.ToJsonString(), skipInputValidation: true);
            w.WriteEndObject();
        });
    }

    private static async Task PutClient(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "client configuration").ConfigureAwait(false);
        await RecordChangeRoute.RunAsync(context, db, RecordChanges.ClientConfiguration, body.RootElement).ConfigureAwait(false);
        context.Response.StatusCode = 204; // RavenDB's clients read no body here
    }

    private static Task GetServerClient(HttpContext context)
    {
        var server = context.RequestServices.GetRequiredService<ServerClientConfiguration>();
        var client = server.Client?.DeepClone() as JsonObject;
        if (client != null)
            client["Etag"] = server.Etag;
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            if (client == null)
                w.WriteNullValue();
            else
                w.WriteRawValue(client.ToJsonString(), skipInputValidation: true);
        });
    }

    private static async Task PutServerClient(HttpContext context)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "client configuration").ConfigureAwait(false);
        await context.RequestServices.GetRequiredService<Cluster.ServerItems>()
            .PutClientConfigurationAsync(DatabaseRecordFile.ParseClientConfiguration(body.RootElement), context.RequestAborted).ConfigureAwait(false);
        context.Response.StatusCode = 204;
    }

    /// <summary>RavenDB's <c>UpdateDocumentsCompressionConfigurationOperation</c>: kept in the record (RavenLite compresses every collection anyway).</summary>
    private static async Task PutCompression(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "documents compression configuration").ConfigureAwait(false);
        await RecordChangeRoute.RunAndAnswerAsync(context, db, RecordChanges.DocumentsCompression, body.RootElement).ConfigureAwait(false);
    }

    private static async Task PutSettings(HttpContext context, Database db)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "database settings").ConfigureAwait(false);
        await RecordChangeRoute.RunAsync(context, db, RecordChanges.Settings, body.RootElement).ConfigureAwait(false);
        context.Response.StatusCode = 204;
    }
}
