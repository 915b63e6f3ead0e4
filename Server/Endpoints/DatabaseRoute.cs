using RavenLite.Server.BulkInsert;
using RavenLite.Server.Databases;
using RavenLite.Server.Http;

namespace RavenLite.Server.Endpoints;

/// <summary>Runs a handler for <c>/databases/{db}/...</c> with the database acquired (503 + Database-Missing when absent) and released after.</summary>
internal static class DatabaseRoute
{
    /// <summary>
    /// The handler with its database. With <paramref name="drainBodyOnMissing"/> (streamed bodies such as
    /// bulk insert, which the client keeps sending) a missing database is answered only after the body was
    /// read (<see cref="BodyDrainer"/>), so the client gets the error instead of a closed connection.
    /// </summary>
    public static RequestDelegate Handle(Func<HttpContext, Database, Task> handler, bool drainBodyOnMissing = false) => async context =>
    {
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        string name = (string)context.GetRouteValue("db")!;
        Database db;
        try
        {
            db = registry.Acquire(name);
        }
        catch (DomainException) when (drainBodyOnMissing)
        {
            await BodyDrainer.FromStart().DrainAsync(RequestBody.DecodeToPipe(context.Request), Endpoints.BulkInsertEndpoints.DrainLimit, context.RequestAborted).ConfigureAwait(false);
            context.Response.Headers.Connection = "close";
            throw;
        }
        try
        {
            // RavenDB's clients send the etag of the client configuration they hold; a different one tells them to fetch it.
            if (context.Request.Headers.TryGetValue("Client-Configuration-Etag", out var held))
            {
                long current = context.RequestServices.GetRequiredService<Configuration.ServerClientConfiguration>().EffectiveFor(db.Record.Client, db.Record.ClientEtag).Etag;
                if (current != 0 && held.ToString().Trim('"') != current.ToString(System.Globalization.CultureInfo.InvariantCulture))
                    context.Response.Headers["Refresh-Client-Configuration"] = "true";
            }
            await handler(context, db).ConfigureAwait(false);
        }
        finally
        {
            db.Release();
        }
    };
}
