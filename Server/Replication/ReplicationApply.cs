using RavenLite.Server.Documents;

namespace RavenLite.Server.Replication;

/// <summary>
/// How a destination takes one replicated item (docs/replication.md "Conflicts"): compared by change vector with what
/// it holds for that id (the document, else its tombstone). An older or equal version is left; a newer one replaces
/// what is held; a concurrent one is a conflict. A conflict between identical documents (or two deletes) merges
/// silently; otherwise the latest by last-modified time wins (ties: the larger change vector, so every node picks the
/// same). Either way the result carries both change vectors merged and no new entry, so each side's resolution
/// descends from the other's and the nodes converge.
/// </summary>
internal static class ReplicationApply
{
    /// <summary>What applying an item did.</summary>
    public enum Outcome
    {
        /// <summary>The destination already had it.</summary>
        Skipped,

        /// <summary>It replaced what the destination held.</summary>
        Applied,

        /// <summary>It was concurrent with what the destination held and was resolved.</summary>
        Resolved,
    }

    public static Outcome Apply(DocumentsWriteContext ctx, ReplicatedItem item)
    {
        var local = ctx.Get(item.Id);
        var tombstone = local == null ? ctx.GetTombstone(item.Id) : null;
        string? localChangeVector = local?.ChangeVector ?? tombstone?.ChangeVector;
        switch (ChangeVectors.Compare(item.ChangeVector, localChangeVector))
        {
            case ChangeVectorOrder.NotNewer:
                return Outcome.Skipped;
            case ChangeVectorOrder.Newer:
                Store(ctx, item, item.ChangeVector);
                return Outcome.Applied;
        }
        string merged = ChangeVectors.Merge(localChangeVector, item.ChangeVector);
        if (local != null)
        {
            if (!item.IsTombstone && SameContent(local.Json, item.Data.Span))
                ctx.PutVersion(item.Id, item.Data.Span, merged, Later(item.LastModified, local.LastModified));
            else if (RemoteWins(item, local.LastModified, local.ChangeVector))
                Store(ctx, item, merged);
            else
                ctx.PutVersion(local.Id, local.Json, merged, local.LastModified);
        }
        else if (item.IsTombstone)
        {
            ctx.DeleteVersion(item.Id, item.Collection, merged, Later(item.LastModified, tombstone!.Deleted));
        }
        else if (RemoteWins(item, tombstone!.Deleted, tombstone.ChangeVector))
        {
            Store(ctx, item, merged);
        }
        else
        {
            ctx.DeleteVersion(item.Id, tombstone.Collection, merged, tombstone.Deleted);
        }
        return Outcome.Resolved;
    }

    private static void Store(DocumentsWriteContext ctx, ReplicatedItem item, string changeVector)
    {
        if (item.IsTombstone)
            ctx.DeleteVersion(item.Id, item.Collection, changeVector, item.LastModified);
        else
            ctx.PutVersion(item.Id, item.Data.Span, changeVector, item.LastModified);
    }

    private static DateTime Later(DateTime a, DateTime b) => a > b ? a : b;

    /// <summary>The latest write wins; the same instant is decided by the change vectors, the same way on every node.</summary>
    private static bool RemoteWins(ReplicatedItem item, DateTime localModified, string localChangeVector) =>
        item.LastModified != localModified
            ? item.LastModified > localModified
            : string.CompareOrdinal(item.ChangeVector, localChangeVector) > 0;

    /// <summary>True when both documents hold the same collection, fields and client metadata (their change vectors and times aside).</summary>
    private static bool SameContent(ReadOnlySpan<byte> a, ReadOnlySpan<byte> b)
    {
        var left = new ArrayBufferWriter<byte>(a.Length);
        var right = new ArrayBufferWriter<byte>(b.Length);
        DocumentPreparer.Current.Prepare(a, left, out string leftCollection);
        DocumentPreparer.Current.Prepare(b, right, out string rightCollection);
        return string.Equals(leftCollection, rightCollection, StringComparison.OrdinalIgnoreCase) && left.WrittenSpan.SequenceEqual(right.WrittenSpan);
    }
}
