using RavenLite.Server.Databases;

namespace RavenLite.Server.Endpoints;

/// <summary>Runs a handler for <c>/databases/{db}/...</c> with the database acquired (503 + Database-Missing when absent) and released after.</summary>
internal static class DatabaseRoute
{
    public static RequestDelegate Handle(Func<HttpContext, Database, Task> handler) => async context =>
    {
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        string name = (string)context.GetRouteValue("db")!;
        var db = registry.Acquire(name);
        try
        {
            await handler(context, db).ConfigureAwait(false);
        }
        finally
        {
            db.Release();
        }
    };
}
