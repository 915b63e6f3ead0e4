using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Security;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Studio helpers: <c>POST /databases/{db}/studio/sample-data</c> (RavenDB's route) fills an empty
/// database with <see cref="SampleData"/> in one transaction and answers 204 once it is durable; a
/// database that already holds documents is refused (400), as RavenDB does, so nothing is overwritten.
/// </summary>
public static class StudioEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app) => app.MapPost("/databases/{db}/studio/sample-data", DatabaseRoute.Handle(CreateSampleData)).Requires(Access.DatabaseReadWrite);

    private static async Task CreateSampleData(HttpContext context, Database db)
    {
        var types = Operations.SampleDataSetup.Parse(RequestParsing.Query(context.Request, "operateOnTypes"));
        await Operations.SampleDataSetup.CreateAsync(db, context.RequestServices.GetRequiredService<DatabaseRegistry>(), types, context.RequestAborted).ConfigureAwait(false);
        await JsonResponse.EmptyAsync(context, 204).ConfigureAwait(false);
    }
}
