using RavenLite.Server.Http;
using RavenLite.Server.Logging;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// <c>GET /admin/logs/configuration</c> and <c>POST /admin/logs/configuration</c> <c>{Mode}</c> (RavenDB's
/// <c>GetLogsConfigurationOperation</c>, <c>SetLogsConfigurationOperation</c>): the log mode (<see cref="LogMode"/>).
/// RavenLite logs to standard output, so there is no log folder, retention or compression to set.
/// </summary>
public static class LogEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapGet("/admin/logs/configuration", Get).Requires(Access.Operator);
        app.MapPost("/admin/logs/configuration", Set).Requires(Access.Operator);
    }

    private static Task Get(HttpContext context)
    {
        var mode = context.RequestServices.GetRequiredService<LogMode>();
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteString("CurrentMode", mode.Current);
            w.WriteString("Mode", mode.Configured);
            w.WriteString("Path", "");
            w.WriteBoolean("UseUtcTime", true);
            w.WriteNull("RetentionTime");
            w.WriteNull("RetentionSize");
            w.WriteBoolean("Compress", false);
            w.WriteEndObject();
        });
    }

    private static async Task Set(HttpContext context)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "log configuration").ConfigureAwait(false);
        string mode = body.RootElement.ValueKind == JsonValueKind.Object && body.RootElement.TryGetProperty("Mode", out var m) && m.ValueKind == JsonValueKind.String
            ? m.GetString()! : throw new BadRequestException($"The body must be {{\"Mode\": {string.Join(" | ", LogMode.Modes)}}}.");
        context.RequestServices.GetRequiredService<LogMode>().Set(mode);
        context.Response.StatusCode = 204;
    }
}
