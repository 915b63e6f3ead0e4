using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Stores a database configuration that is not yet a record change on Raft (time series) through the merger and answers as
/// RavenDB's configuration operations do: <c>{"RaftCommandIndex": n}</c>, the transaction index the change took.
/// </summary>
internal static class ConfigurationWrite
{
    /// <summary>Runs <paramref name="save"/> in a merged transaction (it may throw a 400: nothing is stored), then answers.</summary>
    public static async Task StoreAsync(HttpContext context, Database db, Action<DocumentsWriteContext> save)
    {
        var command = new DelegateCommand<long>(ctx =>
        {
            save(ctx);
            return CompareExchange.CompareExchangeStore.NextIndex(ctx.Transaction);
        });
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", command.Result);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }
}
