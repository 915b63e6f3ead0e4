using RavenLite.Server.Databases;
using RavenLite.Server.Http;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// A change to a database's record (<see cref="RecordChanges"/>) asked over HTTP: checked here, then applied to this
/// server's instance — or, for a database of a group, committed through Raft for every member to apply
/// (docs/cluster.md "Database records"). Returns the index to answer as <c>RaftCommandIndex</c>.
/// </summary>
internal static class RecordChangeRoute
{
    public static async Task<long> RunAsync(HttpContext context, Database db, string kind, JsonElement body) =>
        (await RunWithResultAsync(context, db, kind, body).ConfigureAwait(false)).Index;

    /// <summary>As <see cref="RunAsync"/>, with the result of the change's apply on this server's instance (a new task's id).</summary>
    public static async Task<(long Index, long Result)> RunWithResultAsync(HttpContext context, Database db, string kind, JsonElement body)
    {
        var apply = RecordChanges.Prepare(kind, body, db);
        var cluster = context.RequestServices.GetRequiredService<Cluster.ClusterNode>();
        if (cluster.Groups.ContainsKey(db.Name))
            return await context.RequestServices.GetRequiredService<Cluster.DatabaseRecords>().SubmitAsync(db, kind, body, context.RequestAborted).ConfigureAwait(false);
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        long result = await apply(db, registry, 0).ConfigureAwait(false);
        return (registry.NextRaftIndex(), result);
    }

    /// <summary>Runs the change and answers <c>{"RaftCommandIndex": n}</c>, as RavenDB's configuration operations do.</summary>
    public static async Task RunAndAnswerAsync(HttpContext context, Database db, string kind, JsonElement body)
    {
        long index = await RunAsync(context, db, kind, body).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", index);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }
}
