using RavenLite.Server.CompareExchange;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Security;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Compare-exchange (docs/http-api.md "Compare-exchange"): <c>GET /databases/{db}/cmpxchg?key=..</c> or
/// <c>?startsWith=&amp;start=&amp;pageSize=</c> reads values; <c>PUT ?key=&amp;index=</c> stores one when its index
/// matches (0: only when absent); <c>DELETE ?key=&amp;index=</c> removes one. A put or delete whose index does
/// not match is not an error: it answers <c>Successful: false</c> with the current index and value, as RavenDB does.
/// </summary>
public static class CompareExchangeEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapGet("/databases/{db}/cmpxchg", DatabaseRoute.Handle(Get)).Requires(Access.DatabaseRead);
        app.MapPut("/databases/{db}/cmpxchg", DatabaseRoute.Handle(Put)).Requires(Access.DatabaseReadWrite);
        app.MapDelete("/databases/{db}/cmpxchg", DatabaseRoute.Handle(Delete)).Requires(Access.DatabaseReadWrite);
    }

    /// <summary>True when <paramref name="db"/> is a database of a group: its values are the cluster's (docs/cluster.md "Compare-exchange").</summary>
    private static bool OfGroup(HttpContext context, Database db, out Cluster.ClusterNode node)
    {
        node = context.RequestServices.GetRequiredService<Cluster.ClusterNode>();
        return node.Groups.ContainsKey(db.Name);
    }

    private static async Task Get(HttpContext context, Database db)
    {
        if (!OfGroup(context, db, out var node))
        {
            await GetLocal(context, db).ConfigureAwait(false);
            return;
        }
        if (context.RequestServices.GetRequiredService<ServerOptions>().ClusterReadBarrier)
            await node.ReadBarrierAsync(context.RequestAborted).ConfigureAwait(false);
        var keys = context.Request.Query["key"].Where(k => !string.IsNullOrEmpty(k)).Select(k => k!).ToList();
        string prefix = RequestParsing.Query(context.Request, "startsWith") ?? "";
        int start = RequestParsing.QueryInt(context.Request, "start", 0);
        int pageSize = RequestParsing.QueryInt(context.Request, "pageSize", int.MaxValue, 0);
        var values = node.Read(s => keys.Count > 0 ? keys.Select(k => s.Value(db.Name, k)).ToList() : s.Values(db.Name, prefix, start, pageSize).Cast<Cluster.ClusterValue?>().ToList());
        if (keys.Count == 1 && values[0] == null)
        {
            context.Response.StatusCode = 404; // one key asked, none there: RavenDB's "null" answer
            return;
        }
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            for (int i = 0; i < values.Count; i++)
            {
                if (values[i] is { } v)
                    CompareExchangeStore.WriteEntry(w, new CompareExchangeStore.Entry(v.Key, v.Index, Encoding.UTF8.GetBytes(v.Json)));
                else
                    CompareExchangeStore.WriteMissing(w, keys[i]); // every asked key answers, as RavenDB
            }
            w.WriteEndArray();
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static Task GetLocal(HttpContext context, Database db)
    {
        var keys = context.Request.Query["key"].Where(k => !string.IsNullOrEmpty(k)).Select(k => k!).ToList();
        var entries = new List<CompareExchangeStore.Entry?>();
        using (var tx = db.Environment.ReadTransaction())
        {
            if (keys.Count > 0)
            {
                foreach (string key in keys)
                    entries.Add(CompareExchangeStore.Get(tx, key)); // null: answered with a null value, as RavenDB answers every asked key
                if (keys.Count == 1 && entries[0] == null)
                {
                    context.Response.StatusCode = 404; // one key asked, none there: RavenDB's "null" answer
                    return Task.CompletedTask;
                }
            }
            else
            {
                string prefix = RequestParsing.Query(context.Request, "startsWith") ?? "";
                int start = RequestParsing.QueryInt(context.Request, "start", 0);
                int pageSize = RequestParsing.QueryInt(context.Request, "pageSize", int.MaxValue, 0);
                entries = [.. CompareExchangeStore.List(tx, prefix, start, pageSize)];
            }
        }
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            for (int i = 0; i < entries.Count; i++)
            {
                if (entries[i] is { } e)
                    CompareExchangeStore.WriteEntry(w, e);
                else
                    CompareExchangeStore.WriteMissing(w, keys[i]);
            }
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }

    private static (string Key, long Index) KeyAndIndex(HttpContext context)
    {
        string key = RequestParsing.Required(context.Request, "key");
        CompareExchangeStore.ValidateKey(key);
        long index = RequestParsing.QueryLong(context.Request, "index") ?? throw new BadRequestException("Query string parameter 'index' is required (an integer; 0 for a new key).");
        if (index < 0)
            throw new BadRequestException($"A compare-exchange index cannot be negative ({index}).");
        return (key, index);
    }

    private static async Task Put(HttpContext context, Database db)
    {
        var (key, index) = KeyAndIndex(context);
        if (key.StartsWith(CompareExchangeStore.AtomicGuardPrefix, StringComparison.OrdinalIgnoreCase))
            throw new BadRequestException($"'{key}' is an atomic guard of a cluster-wide transaction; it cannot be written directly.");
        var options = context.RequestServices.GetRequiredService<ServerOptions>();
        var body = await RequestBody.ReadAsync(context, options.MaxDocumentBytes, nameof(options.MaxDocumentBytes)).ConfigureAwait(false);
        byte[] json;
        using (var parsed = DocumentJson.Parse(body, 0))
            json = CompareExchangeStore.ValidateValue(parsed.RootElement, $"PUT cmpxchg '{key}'");
        if (OfGroup(context, db, out var node))
        {
            var result = await node.CompareExchangeAsync(RaftRequestId.Of(context.Request), db.Name, key, index, Encoding.UTF8.GetString(json), context.RequestAborted).ConfigureAwait(false);
            await WriteResult(context, Of(result)).ConfigureAwait(false);
            return;
        }
        var command = new DelegateCommand<CompareExchangeStore.Result>(
            ctx => CompareExchangeStore.Put(ctx.Transaction, key, index, json, () => CompareExchangeStore.NextIndex(ctx.Transaction)), body.Length);
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        await WriteResult(context, command.Result!).ConfigureAwait(false);
    }

    private static async Task Delete(HttpContext context, Database db)
    {
        var (key, index) = KeyAndIndex(context);
        if (OfGroup(context, db, out var node))
        {
            var done = await node.CompareExchangeAsync(RaftRequestId.Of(context.Request), db.Name, key, index, null, context.RequestAborted).ConfigureAwait(false);
            await WriteResult(context, Of(done)).ConfigureAwait(false);
            return;
        }
        var command = new DelegateCommand<CompareExchangeStore.Result>(ctx =>
        {
            var result = CompareExchangeStore.Delete(ctx.Transaction, key, index);
            return result.Successful ? result with { Index = CompareExchangeStore.NextIndex(ctx.Transaction) } : result;
        });
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        await WriteResult(context, command.Result!).ConfigureAwait(false);
    }

    /// <summary>A cluster command's result in the shape the local store answers.</summary>
    private static CompareExchangeStore.Result Of(Cluster.ClusterValueResult r) =>
        new(r.Successful, r.Index, r.Json == null ? null : Encoding.UTF8.GetBytes(r.Json));

    private static Task WriteResult(HttpContext context, CompareExchangeStore.Result result) =>
        JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("Index", result.Index);
            w.WriteBoolean("Successful", result.Successful);
            w.WritePropertyName("Value");
            if (result.Json != null)
                w.WriteRawValue(result.Json, skipInputValidation: true);
            else
                w.WriteNullValue();
            w.WriteEndObject();
        });
}
