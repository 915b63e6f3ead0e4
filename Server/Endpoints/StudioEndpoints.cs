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
        var docs = SampleData.Generate().ToList();
        var command = new DelegateCommand<int>(ctx =>
        {
            // Checked inside the write transaction: no write can slip in between the check and the insert.
            if (DocumentsStorage.CountDocuments(ctx.Transaction) > 0)
                throw new BadRequestException("You cannot create sample data in a database that already contains documents.");
            foreach (var (id, json) in docs)
                ctx.Put(id, json, null);
            return docs.Count;
        }, docs.Sum(d => (long)d.Json.Length));
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        await JsonResponse.EmptyAsync(context, 204).ConfigureAwait(false);
    }
}
