using RavenLite.Server.Databases;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// A change to a database's record (<see cref="RecordChanges"/>) asked over HTTP: checked here, then applied to this
/// server's instance — or, for a database of a group, committed through Raft for every member to apply
/// (docs/cluster.md "Database records"). Returns the index to answer as <c>RaftCommandIndex</c>.
/// </summary>
internal static class RecordChangeRoute
{
    public static async Task<long> RunAsync(HttpContext context, Database db, string kind, JsonElement body)
    {
        var apply = RecordChanges.Prepare(kind, body);
        var cluster = context.RequestServices.GetRequiredService<Cluster.ClusterNode>();
        if (cluster.Read(s => s.Databases.ContainsKey(db.Name)))
            return await context.RequestServices.GetRequiredService<Cluster.DatabaseRecords>().SubmitAsync(db, kind, body, context.RequestAborted).ConfigureAwait(false);
        await apply(db).ConfigureAwait(false);
        return context.RequestServices.GetRequiredService<DatabaseRegistry>().NextRaftIndex();
    }
}
