using RavenLite.Server.Counters;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Security;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Counters (docs/http-api.md "Counters"): <c>GET /databases/{db}/counters?docId=&amp;counter=..&amp;full=</c> reads them,
/// <c>POST /databases/{db}/counters</c> applies a <c>CounterBatch</c> (increments, puts, deletes and gets on
/// any number of documents) in one transaction through the merger and answers the counters it touched.
/// </summary>
public static class CounterEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapGet("/databases/{db}/counters", DatabaseRoute.Handle(Get)).Requires(Access.DatabaseRead);
        // A short handler whose command completes inline (the rest is writing the answer): it stays on the reading thread.
        app.MapPost("/databases/{db}/counters", DatabaseRoute.Handle(Post)).WithMetadata(ThreadPoolHop.StayOnReadingThread).Requires(Access.DatabaseReadWrite);
    }

    private static Task Get(HttpContext context, Database db)
    {
        string id = RequestParsing.Required(context.Request, "docId");
        db.Documents.ValidateId(id);
        var names = context.Request.Query["counter"].Select(s => s ?? "").Distinct(StringComparer.Ordinal).ToList();
        bool full = string.Equals(RequestParsing.Query(context.Request, "full"), "true", StringComparison.OrdinalIgnoreCase);
        List<CounterDetail?> details;
        using (var tx = db.Environment.ReadTransaction())
            details = CounterBatch.Read(tx, db.Documents, id, names);
        return JsonResponse.WriteAsync(context, 200, w => CounterBatch.WriteDetails(w, details, full));
    }

    private static async Task Post(HttpContext context, Database db)
    {
        var options = db.Options;
        var body = await RequestBody.ReadAsync(context, options.MaxRequestBodyBytes).ConfigureAwait(false);
        using var json = DocumentJson.Parse(body, 6);
        var root = json.RootElement;
        if (root.ValueKind != JsonValueKind.Object || !root.TryGetProperty("Documents", out var docs) || docs.ValueKind != JsonValueKind.Array)
            throw new BadRequestException("Body must be a counter batch {\"Documents\":[{\"DocumentId\":..,\"Operations\":[..]}]}.");
        bool full = root.TryGetProperty("ReplyWithAllNodesValues", out var r) && r.ValueKind == JsonValueKind.True;
        var batches = new List<CounterBatch>();
        int i = 0;
        foreach (var d in docs.EnumerateArray())
            batches.Add(CounterBatch.Parse(d, $"Documents[{i++}]", db.Documents));
        bool writes = batches.Any(b => b.Operations.Any(o => o.Type != CounterBatch.OpType.Get));
        if (writes)
        {
            var command = new DelegateCommand<bool>(ctx =>
            {
                foreach (var b in batches)
                    b.Apply(ctx);
                return true;
            }, body.Length, completeInline: true);
            await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        }
        else
        {
            // Only reads: answered from a snapshot, no write transaction.
            using var tx = db.Environment.ReadTransaction();
            foreach (var b in batches)
            {
                b.Results.Clear();
                b.Results.AddRange(CounterBatch.Read(tx, db.Documents, b.DocumentId, b.Operations.Select(o => o.Name).ToList()));
            }
        }
        await JsonResponse.WriteAsync(context, 200, w => CounterBatch.WriteDetails(w, batches.SelectMany(b => b.Results), full)).ConfigureAwait(false);
    }
}
