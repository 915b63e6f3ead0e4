using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Security;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Identities (docs/http-api.md "Identities"): per-prefix counters behind <c>prefix|</c> ids.
/// <c>POST identity/next?name=</c> takes the next value, <c>POST identity/seed?name=&amp;value=&amp;force=</c>
/// raises (or with force sets) it, <c>GET debug/identities</c> lists them as <c>{"users|": 3}</c>. Writes go
/// through the merger, in the same tree the batch and PUT <c>prefix|</c> ids use, so the two never hand out a value twice.
/// </summary>
public static class IdentityEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPost("/databases/{db}/identity/next", DatabaseRoute.Handle(Next)).Requires(Access.DatabaseReadWrite);
        app.MapPost("/databases/{db}/identity/seed", DatabaseRoute.Handle(Seed)).Requires(Access.DatabaseReadWrite);
        app.MapGet("/databases/{db}/debug/identities", DatabaseRoute.Handle(List)).Requires(Access.DatabaseRead);
    }

    private static string Name(HttpContext context, Database db)
    {
        string name = RequestParsing.Required(context.Request, "name");
        if (name.TrimEnd('|').Length == 0)
            throw new BadRequestException("An identity name must not be empty.");
        db.Documents.ValidateId(name);
        return name;
    }

    private static async Task Next(HttpContext context, Database db)
    {
        string name = Name(context, db);
        long value;
        var cluster = context.RequestServices.GetRequiredService<Cluster.ClusterNode>();
        if (cluster.Groups.ContainsKey(db.Name))
        {
            // A group's database: the identity is the cluster's (docs/cluster.md "Identities").
            value = await cluster.NextIdentityAsync(db.Name, name, context.RequestAborted).ConfigureAwait(false);
        }
        else
        {
            var command = new DelegateCommand<long>(ctx => ctx.NextIdentity(name));
            await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
            value = command.Result;
        }
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("NewIdentityValue", value);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static async Task Seed(HttpContext context, Database db)
    {
        string name = Name(context, db);
        long value = RequestParsing.QueryLong(context.Request, "value") ?? throw new BadRequestException("Query string parameter 'value' is required (an integer).");
        if (value < 0)
            throw new BadRequestException($"An identity cannot be seeded with a negative value ({value}).");
        bool force = string.Equals(RequestParsing.Query(context.Request, "force"), "true", StringComparison.OrdinalIgnoreCase);
        var command = new DelegateCommand<long>(ctx => ctx.SeedIdentity(name, value, force));
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("NewSeedValue", command.Result);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static Task List(HttpContext context, Database db)
    {
        List<(string Name, long Value)> identities;
        using (var tx = db.Environment.ReadTransaction())
            identities = DocumentsStorage.Identities(tx);
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            foreach (var (name, value) in identities)
                w.WriteNumber(name, value);
            w.WriteEndObject();
        });
    }
}
