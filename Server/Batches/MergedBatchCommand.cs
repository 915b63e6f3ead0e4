using RavenLite.Server.Attachments;
using RavenLite.Server.CompareExchange;
using RavenLite.Server.Documents;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Batches;

/// <summary>
/// A <c>bulk_docs</c> batch as one merged command: every item is applied in the merger's transaction or none is. A
/// cluster-wide batch checks every compare-exchange index and document atomic guard before writing anything.
/// </summary>
internal sealed class MergedBatchCommand(List<BatchItem> items, long bytes, bool clusterWide, bool atomicWrites) : MergedCommand, IDisposable
{
    public override int Operations => Math.Max(1, items.Count);

    public override long Bytes => bytes;

    /// <summary>A cluster-wide batch's transaction index (the index its compare-exchange values and atomic guards take).</summary>
    public long TransactionIndex { get; private set; }

    // Re-runnable: the merger may run it again alone after a rollback.
    public override void Execute(DocumentsWriteContext context)
    {
        var versions = AttachmentVersions.ForBatch();
        if (clusterWide)
            ExecuteClusterWide(context, versions);
        else
            foreach (var item in items)
                Run(context, item, versions);
        versions.Write(context);
        LastEtag = context.LastEtag;
    }

    /// <summary>
    /// Runs one command. Attachment commands hold their documents' new versions until the batch's end (one version per
    /// document, as RavenDB writes them); any other command first writes what they hold, so it sees the documents as they are.
    /// </summary>
    private static void Run(DocumentsWriteContext context, BatchItem item, AttachmentVersions versions)
    {
        if (item is AttachmentItem attachment)
        {
            attachment.Execute(context, versions);
            return;
        }
        versions.Write(context);
        item.Execute(context);
    }

    /// <summary>The database's etag after this batch in the committed run: what write assurance waits for destinations to acknowledge.</summary>
    public long LastEtag { get; private set; }

    /// <summary>
    /// Checks every compare-exchange index and atomic guard first (any mismatch: 409 ClusterTransactionConcurrencyException
    /// naming each, and nothing is written), then applies the batch under one new transaction index.
    /// </summary>
    private void ExecuteClusterWide(DocumentsWriteContext context, AttachmentVersions versions)
    {
        var violations = new List<string>();
        foreach (var item in items)
        {
            if (item is CompareExchangeItem cx)
            {
                if (cx.Violation(context) is { } v)
                    violations.Add(v);
            }
            else if (atomicWrites && AtomicGuardViolation(context, item) is { } v)
            {
                violations.Add(v);
            }
        }
        if (violations.Count > 0)
            throw new ConcurrencyException(
                "Failed to execute cluster transaction due to the following issues: " + string.Join("; ", violations), RavenExceptionTypes.ClusterTransactionConcurrency);
        TransactionIndex = CompareExchangeStore.NextIndex(context.Transaction);
        context.ClusterTransactionIndex = TransactionIndex;
        try
        {
            ApplyClusterWide(context, versions);
            versions.Write(context);
        }
        finally
        {
            context.ClusterTransactionIndex = 0; // the merger's next command in this transaction is not part of it
        }
    }

    private void ApplyClusterWide(DocumentsWriteContext context, AttachmentVersions versions)
    {
        foreach (var item in items)
        {
            if (item is CompareExchangeItem cx)
            {
                cx.Apply(context, TransactionIndex);
                continue;
            }
            Run(context, item, versions);
            if (atomicWrites && item is PutItem)
                CompareExchangeStore.Put(context.Transaction, CompareExchangeStore.AtomicGuardOf(item.Id),
                    CompareExchangeStore.Get(context.Transaction, CompareExchangeStore.AtomicGuardOf(item.Id))?.Index ?? 0, GuardValue, () => TransactionIndex);
        }
    }

    private static readonly byte[] GuardValue = "{\"Object\":null}"u8.ToArray();

    /// <summary>
    /// A document written by a cluster-wide transaction has an atomic guard; a later cluster-wide write of it must
    /// name the change vector it loaded (a session that did not load it, or loaded an older version, loses the race).
    /// </summary>
    private static string? AtomicGuardViolation(DocumentsWriteContext context, BatchItem item)
    {
        if (CompareExchangeStore.Get(context.Transaction, CompareExchangeStore.AtomicGuardOf(item.Id)) == null)
            return null;
        string? current = context.Storage.ChangeVectorOf(context.Transaction, item.Id);
        if (current != null && string.Equals(current, item.OriginalChangeVector, StringComparison.Ordinal))
            return null;
        return item.OriginalChangeVector == null
            ? $"document '{item.Id}' was written by another cluster-wide transaction, but this one expected it to be new"
            : $"document '{item.Id}' has change vector {current ?? "(deleted)"}, but this cluster-wide transaction loaded {item.OriginalChangeVector}";
    }

    /// <summary>Writes the answer's <c>Results</c> (one entry per command, in order) and, when cluster-wide, its <c>TransactionIndex</c>.</summary>
    public void WriteResults(Utf8JsonWriter w)
    {
        w.WriteStartArray("Results");
        foreach (var item in items)
        {
            w.WriteStartObject();
            item.WriteResult(w);
            w.WriteEndObject();
        }
        w.WriteEndArray();
        if (clusterWide)
            w.WriteNumber(nameof(TransactionIndex), TransactionIndex);
    }

    /// <summary>Releases what the items hold (patch script engines).</summary>
    public void Dispose()
    {
        foreach (var item in items)
        {
            (item as PatchItem)?.Patch.Dispose();
            (item as BatchPatchItem)?.Patch.Dispose();
        }
    }
}
