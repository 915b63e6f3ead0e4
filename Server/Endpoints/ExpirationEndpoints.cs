using RavenLite.Server.Databases;
using RavenLite.Server.Expiration;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Expiration and refresh (docs/http-api.md "Expiration and refresh"): <c>POST admin/expiration/config</c>
/// (<c>{"Disabled":false,"DeleteFrequencyInSec":60}</c>) and <c>POST admin/refresh/config</c>
/// (<c>{"Disabled":false,"RefreshFrequencyInSec":60}</c>) switch the background task on or off; GET without
/// <c>admin/</c> reads them. Documents name their time in <c>@metadata.@expires</c> / <c>@refresh</c>.
/// </summary>
public static class ExpirationEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPost("/databases/{db}/admin/expiration/config", DatabaseRoute.Handle((c, db) => Set(c, db, refresh: false))).Requires(Access.DatabaseAdmin);
        app.MapPost("/databases/{db}/admin/refresh/config", DatabaseRoute.Handle((c, db) => Set(c, db, refresh: true))).Requires(Access.DatabaseAdmin);
        app.MapGet("/databases/{db}/expiration/config", DatabaseRoute.Handle((c, db) => Get(c, db.Expiration.Expiration, "DeleteFrequencyInSec"))).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/refresh/config", DatabaseRoute.Handle((c, db) => Get(c, db.Expiration.Refresh, "RefreshFrequencyInSec"))).Requires(Access.DatabaseRead);
    }

    private static async Task Set(HttpContext context, Database db, bool refresh)
    {
        using var body = await RequestBody.ReadJsonAsync(context, refresh ? "refresh configuration" : "expiration configuration").ConfigureAwait(false);
        await RecordChangeRoute.RunAndAnswerAsync(context, db, refresh ? RecordChanges.Refresh : RecordChanges.Expiration, body.RootElement).ConfigureAwait(false);
    }

    private static Task Get(HttpContext context, ExpirationConfiguration? configuration, string frequencyName) =>
        JsonResponse.WriteAsync(context, 200, w =>
        {
            if (configuration == null)
                w.WriteNullValue();
            else
                configuration.Write(w, frequencyName);
        });
}
