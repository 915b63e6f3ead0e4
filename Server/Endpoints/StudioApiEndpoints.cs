using RavenLite.Server.Databases;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// What the Studio reads beyond RavenDB's API: <c>GET /studio-api/metrics</c> (cumulative counters of the server and
/// of each open database, sampled by the dashboard every second, which charts their rates) and
/// <c>GET /studio-api/storage?database=</c> (the storage engine's page layout, <see cref="Storage.Debugging.StorageLayout"/>).
/// </summary>
public static class StudioApiEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapGet("/studio-api/metrics", Metrics).Requires(Access.Operator);
        app.MapGet("/studio-api/storage", Storage).Requires(Access.Operator);
    }

    private static Task Metrics(HttpContext context)
    {
        var requests = context.RequestServices.GetRequiredService<RequestMetrics>();
        var samples = context.RequestServices.GetRequiredService<Monitoring.ServerMetrics>().Sample();
        var (count, p50, p99) = requests.LastSecond();
        using var process = Process.GetCurrentProcess();
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteString("Time", DateTime.UtcNow);
            w.WriteNumber("Requests", requests.Total);
            w.WriteNumber("RequestsLastSecond", count);
            w.WriteNumber("RequestP50Ms", Math.Round(p50, 3));
            w.WriteNumber("RequestP99Ms", Math.Round(p99, 3));
            w.WriteNumber("ManagedHeapBytes", GC.GetTotalMemory(false));
            w.WriteNumber("WorkingSetBytes", process.WorkingSet64);
            w.WritePropertyName("Databases");
            System.Text.Json.JsonSerializer.Serialize(w, samples);
            w.WriteEndObject();
        });
    }

    private static async Task Storage(HttpContext context)
    {
        string name = RequestParsing.Query(context.Request, "database") ?? throw new BadRequestException("Name the database: /studio-api/storage?database=NAME.");
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        var db = registry.Acquire(name);
        try
        {
            var layout = db.Environment.GetLayout(4096);
            var answer = new
            {
                Database = db.Name,
                layout.PageSize,
                layout.Pages,
                layout.FreePages,
                layout.ReusePendingPages,
                layout.JournalPendingPages,
                layout.Trees,
                PageMap = new { layout.PagesPerCell, layout.Owners, layout.Cells },
                layout.Journal,
            };
            await JsonResponse.WriteAsync(context, 200, w => System.Text.Json.JsonSerializer.Serialize(w, answer)).ConfigureAwait(false);
        }
        finally
        {
            db.Release();
        }
    }
}
