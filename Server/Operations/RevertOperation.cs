using RavenLite.Server.Databases;
using RavenLite.Server.Revisions;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Operations;

/// <summary>
/// Reverting a database to a point in time (RavenDB's <c>RevertRevisionsOperation</c>): every document with revisions
/// (of the given collections, if any) goes back to its newest revision written at or before the time — documents
/// changed since get that revision's content, documents created since are deleted. A background operation, one
/// merger command per document.
/// </summary>
public static class RevertOperation
{
    /// <summary>Starts the revert; its progress and end are in the returned state.</summary>
    /// <exception cref="UnavailableException">The database is closing.</exception>
    public static OperationState Start(Database db, DateTime time, IReadOnlySet<string>? collections) =>
        BackgroundOperation.Start(db, "DatabaseRevert", async state =>
        {
            List<byte[]> keys;
            using (var tx = db.Environment.ReadTransaction())
                keys = RevisionsStore.DocumentKeys(tx);
            state.Total = keys.Count;
            foreach (var key in keys)
            {
                state.Token.ThrowIfCancellationRequested();
                await db.Merger.EnqueueAsync(new DelegateCommand<bool>(ctx => RevisionsRevert.ToTime(ctx, key, time, collections))).ConfigureAwait(false);
                state.AddProcessed(1);
            }
        });
}
