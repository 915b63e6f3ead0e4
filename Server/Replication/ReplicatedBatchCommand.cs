using RavenLite.Server.Documents;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Replication;

/// <summary>
/// A received batch applied as one write transaction of the destination's merger: every item
/// (<see cref="ReplicationApply"/>, attachments taking the contents staged for the batch) and the source's new
/// position, together — all or nothing.
/// </summary>
internal sealed class ReplicatedBatchCommand(string sourceDatabaseId, long from, long lastEtag, List<ReplicatedItem> items, ConflictSolver solver,
    IReadOnlyDictionary<string, Attachments.StagedContent> staged) : MergedCommand
{
    /// <summary>The source's position after this batch.</summary>
    public long LastEtag => lastEtag;

    /// <summary>Items applied, conflicts resolved among them, and conflicts kept, in the committed run.</summary>
    public (int Applied, int Resolved, int Conflicted) Counts { get; private set; }

    /// <inheritdoc />
    public override int Operations => Math.Max(1, items.Count);

    /// <inheritdoc />
    public override long Bytes => items.Sum(i => (long)i.Data.Length);

    /// <inheritdoc />
    public override void Execute(DocumentsWriteContext context)
    {
        // Batches are handed over before the one before them commits: one applies only where that one left off.
        long at = ReplicationPositions.Get(context.Transaction, sourceDatabaseId);
        if (at != from)
            throw new InvalidOperationException($"A replication batch from position {from} arrived at position {at}: the batch before it was not applied.");
        int applied = 0, resolved = 0, conflicted = 0;
        // Counters and time series after the documents: a transaction that adds a counter or a series rewrites its
        // document at a later etag than the change, and they only land on a document that is here.
        foreach (var item in items.Where(i => i.Counter == null && i.Series == null).Concat(items.Where(i => i.Counter != null || i.Series != null)))
        {
            switch (ReplicationApply.Apply(context, item, solver, staged))
            {
                case ReplicationApply.Outcome.Conflicted:
                    conflicted++;
                    break;
                case ReplicationApply.Outcome.Applied:
                    applied++;
                    break;
                case ReplicationApply.Outcome.Resolved:
                    applied++;
                    resolved++;
                    break;
            }
        }
        if (at < lastEtag)
            ReplicationPositions.Set(context.Transaction, sourceDatabaseId, lastEtag);
        Counts = (applied, resolved, conflicted);
    }
}
