using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Cluster;

/// <summary>
/// The records of group databases on Raft (docs/cluster.md "Database records"): a change (<see cref="RecordChanges"/>)
/// is committed through Raft from whichever node was asked, and every member applies the changes it has not applied yet
/// in Raft index order — so each member holds the same index definitions and configurations, and builds its own indexes.
/// Each instance stores the index of the last change it applied; a change is applied before that index is stored, so
/// one interrupted between the two is applied again (every kind applies the same way twice).
/// </summary>
public sealed class DatabaseRecords(ClusterNode node, DatabaseRegistry registry, ILogger<DatabaseRecords> logger) : IDisposable
{
    private readonly SemaphoreSlim _gate = new(1, 1); // one member applying at a time: a change is never applied twice at once
    private const int ResultsKept = 256;
    private readonly Dictionary<(string Database, long Index), long> _results = [];
    private readonly Queue<(string, long)> _resultOrder = new();

    /// <summary>
    /// Commits the change (already checked by <see cref="RecordChanges.Prepare"/>) of group database <paramref name="db"/>
    /// through Raft and applies it here; returns its Raft index and the result its apply had on this instance.
    /// </summary>
    public async Task<(long Index, long Result)> SubmitAsync(Database db, string kind, JsonElement body, CancellationToken token)
    {
        ArgumentNullException.ThrowIfNull(db);
        long index = await node.SendAsync(ClusterCommands.RecordChange(ClusterNode.NewRequestId(), db.Name, kind, body), token).ConfigureAwait(false);
        await ApplyAsync(db, token).ConfigureAwait(false);
        lock (_results)
            return (index, _results.GetValueOrDefault((db.Name, index)));
    }

    /// <summary>Keeps what a change's apply returned here, for the node's own submitter (the latest few are kept).</summary>
    private void KeepResult(string database, long index, long result)
    {
        lock (_results)
        {
            if (!_results.TryAdd((database, index), result))
                return;
            _resultOrder.Enqueue((database, index));
            if (_resultOrder.Count > ResultsKept)
                _results.Remove(_resultOrder.Dequeue());
        }
    }

    /// <summary>Applies, in Raft index order, the changes of <paramref name="db"/>'s group record this instance has not applied.</summary>
    public async Task ApplyAsync(Database db, CancellationToken token)
    {
        ArgumentNullException.ThrowIfNull(db);
        await _gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            long applied;
            using (var tx = db.Environment.ReadTransaction())
                applied = DocumentsStorage.LastRecordChange(tx);
            foreach (var change in node.Read(s => s.RecordChanges(db.Name, applied)))
            {
                try
                {
                    using var body = JsonDocument.Parse(change.Body);
                    KeepResult(db.Name, change.Index, await RecordChanges.Prepare(change.Kind, body.RootElement)(db, registry, change.Index).ConfigureAwait(false));
                }
                catch (DomainException e)
                {
                    // Checked where it was asked; a member that cannot apply it (a newer node's kind, say) goes on with the next.
                    Logging.Log.RecordChangeSkipped(logger, db.Name, change.Kind, change.Index, e.Message);
                }
                long done = change.Index;
                await db.Merger.EnqueueAsync(new DelegateCommand<int>(ctx =>
                {
                    DocumentsStorage.WriteLastRecordChange(ctx.Transaction, done);
                    return 0;
                })).ConfigureAwait(false);
            }
        }
        finally
        {
            _gate.Release();
        }
    }

    public void Dispose() => _gate.Dispose();
}
