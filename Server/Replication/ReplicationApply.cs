using RavenLite.Server.Attachments;
using RavenLite.Server.Documents;

namespace RavenLite.Server.Replication;

/// <summary>
/// How a destination takes one replicated item (docs/replication.md "Conflicts"): compared by change vector with what
/// it holds for that id — the document, else its tombstone, else the versions in conflict. An older or equal version is
/// left; a newer one replaces what is held; a concurrent one is a conflict. Identical documents (or two deletes) merge
/// silently; a version that descends from a later cluster-wide transaction than the others wins (its RAFT entry);
/// otherwise the <see cref="ConflictSolver"/> decides: the collection's script, else the latest by
/// last-modified time (ties: the larger change vector, so every node picks the same), else both are kept in conflict.
/// A resolution carries the versions' change vectors merged and no new entry, so each side's resolution descends from
/// the other's and the nodes converge.
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

        /// <summary>It was concurrent and is kept in conflict.</summary>
        Conflicted,
    }

    public static Outcome Apply(DocumentsWriteContext ctx, ReplicatedItem item, ConflictSolver solver, IReadOnlyDictionary<string, StagedContent> staged)
    {
        if (item.IsRevision)
        {
            // Revisions never conflict: a revision is one version in a document's history, kept once per change vector.
            if (!Revisions.RevisionsExtension.Replicated(ctx, item.Id, item.Collection, item.ChangeVector, item.LastModified, item.Data.Span))
                return Outcome.Skipped;
            if (HasAttachments(item.Data.Span) && DocumentExtras.Read(item.Data.Span) is { Attachments.Count: > 0 } listed)
            {
                foreach (var a in listed.Attachments.Values)
                {
                    if (staged.TryGetValue(a.Hash, out var content))
                        AttachmentsStore.AddReference(ctx.Transaction, content);
                    else if (AttachmentsStore.Find(ctx.Transaction, a.Hash) != null)
                        AttachmentsStore.AddReference(ctx.Transaction, a.Hash);
                }
            }
            return Outcome.Applied;
        }
        if (item.Series is { } series)
        {
            // Time series never conflict: entries merge by timestamp, incremental ones by their parts (TimeSeriesReplication).
            TimeSeries.TimeSeriesReplication.Merge(ctx, Encoding.UTF8.GetBytes(item.Id), series.Name, series.From, series.To, series.Deleted, series.Points, series.Shares);
            return Outcome.Applied;
        }
        if (item.Counter is { } counter)
        {
            // Counters never conflict: per-database shares merge (CounterShares).
            Counters.CounterShares.Merge(ctx, Encoding.UTF8.GetBytes(item.Id), counter.Name, counter.Shares, counter.Deleted);
            return Outcome.Applied;
        }
        var incoming = new ConflictedVersion(item.Collection, item.ChangeVector, item.LastModified, item.IsTombstone ? null : item.Data.ToArray());
        var local = ctx.Get(item.Id);
        var held = new List<ConflictedVersion>();
        bool heldDelete = false;
        if (local != null)
            held.Add(new ConflictedVersion(local.Collection, local.ChangeVector, local.LastModified, local.Json));
        else if (ctx.ConflictsOf(item.Id) is { Count: > 0 } conflicts)
            held.AddRange(conflicts);
        else if (ctx.GetTombstone(item.Id) is { } tombstone)
        {
            held.Add(new ConflictedVersion(tombstone.Collection, tombstone.ChangeVector, tombstone.Deleted, null));
            heldDelete = true;
        }
        string? heldChangeVector = held.Count == 0 ? null : held.Aggregate("", (cv, v) => ChangeVectors.Merge(cv, v.ChangeVector));
        switch (ChangeVectors.Compare(item.ChangeVector, heldChangeVector))
        {
            case ChangeVectorOrder.NotNewer:
                return Outcome.Skipped;
            case ChangeVectorOrder.Newer:
                ctx.ClearConflicts(item.Id);
                Store(ctx, item.Id, incoming, item.ChangeVector, staged, local);
                return Outcome.Applied;
        }
        if (held.Exists(v => ChangeVectors.Compare(item.ChangeVector, v.ChangeVector) == ChangeVectorOrder.NotNewer))
            return Outcome.Skipped; // already one of the versions in conflict
        var versions = new List<ConflictedVersion>(held) { incoming };
        string merged = ChangeVectors.Merge(heldChangeVector, item.ChangeVector);
        var resolved = Resolve(versions, solver, item.Collection);
        if (resolved == null)
        {
            ctx.KeepConflict(item.Id, heldDelete ? [held[0], incoming] : [incoming]); // a held document joins by itself
            return Outcome.Conflicted;
        }
        ctx.ClearConflicts(item.Id);
        Store(ctx, local?.Id ?? item.Id, resolved, merged, staged, local);
        return Outcome.Resolved;
    }

    /// <summary>The version the versions in conflict resolve to (its change vector aside), or null to keep them in conflict.</summary>
    private static ConflictedVersion? Resolve(List<ConflictedVersion> versions, ConflictSolver solver, string collection)
    {
        var latest = versions.Aggregate((a, b) => Later(b, a) ? b : a);
        if (ClusterWinner(versions) is { } decided)
            return decided;
        if (versions.All(v => v.Json == null))
            return latest; // deleted everywhere
        var documents = versions.Where(v => v.Json != null).ToList();
        if (documents.Count == versions.Count && documents.Skip(1).All(d => SameContent(d.Json!, documents[0].Json!)))
            return latest;
        if (solver.ResolveByCollection.TryGetValue(collection, out var script))
        {
            var result = ConflictScript.Run(script, collection, versions);
            if (result.Resolved)
                return latest with { Json = result.Json };
            return null;
        }
        return solver.ResolveToLatest ? latest : null;
    }

    /// <summary>
    /// Stores the winning version. A document's attachments take their contents — already stored here, or staged for this
    /// batch — and the replaced version's are released (a delete releases them through the attachments extension).
    /// </summary>
    private static void Store(DocumentsWriteContext ctx, string id, ConflictedVersion version, string changeVector, IReadOnlyDictionary<string, StagedContent> staged,
        StoredDocument? replacedVersion)
    {
        if (version.Json == null)
        {
            ctx.DeleteVersion(id, version.Collection, changeVector, version.LastModified);
            if (replacedVersion == null)
            {
                // Counters and series that arrived before their document (which never came): they go with the delete.
                var key = ctx.KeyOf(id);
                Counters.CountersStore.DeleteAll(ctx.Transaction, key);
                Counters.CounterShares.RemoveAll(ctx.Transaction, key);
                TimeSeries.TimeSeriesStore.DeleteAll(ctx.Transaction, key);
            }
            return;
        }
        var replaced = replacedVersion != null && HasAttachments(replacedVersion.Json) ? DocumentExtras.Read(replacedVersion.Json) : null;
        ctx.PutVersion(id, version.Json, changeVector, version.LastModified);
        var attached = HasAttachments(version.Json) ? DocumentExtras.Read(version.Json) : null;
        foreach (var a in attached?.Attachments.Values ?? Enumerable.Empty<AttachmentInfo>())
        {
            if (staged.TryGetValue(a.Hash, out var content))
                AttachmentsStore.AddReference(ctx.Transaction, content);
            else
                AttachmentsStore.AddReference(ctx.Transaction, a.Hash);
        }
        foreach (var a in replaced?.Attachments.Values ?? Enumerable.Empty<AttachmentInfo>())
            AttachmentsStore.Release(ctx.Transaction, a.Hash);
    }

    /// <summary>
    /// The version that descends from a later cluster-wide transaction than every other one (RavenDB: a document
    /// written in a cluster-wide transaction wins a conflict), or null when none does.
    /// </summary>
    private static ConflictedVersion? ClusterWinner(List<ConflictedVersion> versions)
    {
        foreach (var candidate in versions)
            if (versions.TrueForAll(v => ReferenceEquals(v, candidate) || ChangeVectors.ClusterOrder(candidate.ChangeVector, v.ChangeVector) > 0))
                return candidate;
        return null;
    }

    /// <summary>A cheap first look (no parse): only a document whose JSON names <c>@attachments</c> can have any.</summary>
    internal static bool HasAttachments(ReadOnlySpan<byte> json) => json.IndexOf("\"@attachments\""u8) >= 0;

    /// <summary>The latest write wins; the same instant is decided by the change vectors, the same way on every node.</summary>
    private static bool Later(ConflictedVersion a, ConflictedVersion b) =>
        a.LastModified != b.LastModified ? a.LastModified > b.LastModified : string.CompareOrdinal(a.ChangeVector, b.ChangeVector) > 0;

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
