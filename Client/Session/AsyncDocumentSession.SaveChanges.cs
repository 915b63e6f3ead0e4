using System.Text.Json.Nodes;
using RavenLite.Client.Commands;
using RavenLite.Client.Counters;

namespace RavenLite.Client.Session;

/// <summary>SaveChanges: every queued change in one batch, one request, one server transaction; then the tracked state follows the answer.</summary>
internal sealed partial class AsyncDocumentSession
{
    /// <summary>
    /// A batch as sent: its commands, and where each kind's results start in the answer (the results come in command
    /// order).
    /// </summary>
    private sealed record PendingBatch(JsonArray Commands, List<string> Deleted, List<DocumentInfo> Saved, List<string> CountersOf,
        int CounterResults, int AttachmentResults, int RevisionResults);

    private ReplicationBatchOptions? _replicationOptions;

    public void WaitForReplicationAfterSaveChanges(TimeSpan? timeout = null, bool throwOnTimeout = true, int replicas = 1, bool majority = false) =>
        _replicationOptions = new ReplicationBatchOptions(timeout ?? TimeSpan.FromSeconds(15), throwOnTimeout, replicas, majority);

    public async Task SaveChangesAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfDisposed();
        bool clusterWide = TransactionMode == TransactionMode.ClusterWide;
        var batch = BuildBatch(clusterWide);
        if (batch.Commands.Count == 0)
            return;
        CountRequest();
        var results = await Store.Executor.ExecuteAsync(new BatchCommand(batch.Commands, clusterWide, _attachmentStreams, _replicationOptions), Database, cancellationToken).ConfigureAwait(false);
        ClearSent(batch);
        _cluster?.Saved(results);
        ApplySaved(batch, results);
        ApplyCounters(batch, results);
        // Last: attachment commands ran after the batch's puts, so their change vectors are the documents' latest.
        for (int i = batch.AttachmentResults; i < batch.RevisionResults; i++)
            if (results[i] is JsonObject r)
                ApplyAttachmentResult(r);
        ApplyForcedRevisions(batch, results);
    }

    /// <summary>The commands of every queued change, in the order the server applies them: deletes, puts, compare-exchange, counters, patches, attachments, time series, forced revisions.</summary>
    private PendingBatch BuildBatch(bool clusterWide)
    {
        if (clusterWide && _counterOperations.Count > 0)
            throw new InvalidOperationException("A cluster-wide session cannot change counters: save them with a single-node session.");
        var commands = new JsonArray();
        var deleted = new List<string>();
        foreach (var (id, cv) in _deletes)
        {
            var delete = new JsonObject { ["Id"] = id, ["ChangeVector"] = cv, ["Type"] = "DELETE" };
            if (clusterWide)
                delete["OriginalChangeVector"] = _deletedChangeVectors.GetValueOrDefault(id);
            commands.Add(delete);
            deleted.Add(id);
        }
        var saved = new List<DocumentInfo>();
        foreach (var info in _byEntity.Values)
        {
            var doc = ToDocument(info);
            if (!info.IsNew && !info.HasConcurrencyCheck && doc.ToJsonString() == info.Original)
                continue;
            string? cv = info.HasConcurrencyCheck ? info.ConcurrencyCheck : UseOptimisticConcurrency ? info.ChangeVector ?? "" : null;
            var put = new JsonObject { ["Id"] = info.Id, ["ChangeVector"] = cv, ["Document"] = doc, ["Type"] = "PUT" };
            if (clusterWide)
                put["OriginalChangeVector"] = info.ChangeVector; // the atomic guard's check: what this session loaded (null: a new document)
            commands.Add(put);
            saved.Add(info);
        }
        var compareExchange = _cluster?.Commands() ?? [];
        foreach (var c in compareExchange)
            commands.Add(c);
        var countersOf = new List<string>();
        int counterResults = deleted.Count + saved.Count + compareExchange.Count;
        foreach (var (id, operations) in _counterOperations)
        {
            commands.Add(new JsonObject { ["Id"] = id, ["Type"] = "Counters", ["Counters"] = CountersJson.Document(id, operations.Select(o => (JsonObject)o.DeepClone())) });
            countersOf.Add(id);
        }
        if (clusterWide && _attachmentCommands.Count > 0)
            throw new InvalidOperationException("A cluster-wide session cannot change attachments: save them with a single-node session.");
        foreach (var patch in _patches)
            commands.Add(patch.DeepClone());
        int attachmentResults = commands.Count;
        foreach (var c in _attachmentCommands)
            commands.Add(c.DeepClone());
        foreach (var ((id, _), pending) in _timeSeries)
            commands.Add(new JsonObject { ["Id"] = id, ["TimeSeries"] = pending.ToJson(), ["Type"] = "TimeSeries" });
        int revisionResults = commands.Count;
        foreach (string id in _forcedRevisions)
            commands.Add(new JsonObject { ["Id"] = id, ["Type"] = "ForceRevisionCreation" });
        return new PendingBatch(commands, deleted, saved, countersOf, counterResults, attachmentResults, revisionResults);
    }

    /// <summary>Forgets the queued changes the server has applied.</summary>
    private void ClearSent(PendingBatch batch)
    {
        _attachmentCommands.Clear();
        _attachmentStreams.Clear();
        _forcedRevisions.Clear();
        _timeSeries.Clear();
        _patches.Clear();
        _counterOperations.Clear();
        foreach (string id in batch.Deleted)
        {
            _deletes.Remove(id);
            _deletedChangeVectors.Remove(id);
        }
    }

    /// <summary>Each saved document takes the change vector and last-modified time the server gave it, and is unchanged from now.</summary>
    private void ApplySaved(PendingBatch batch, JsonArray results)
    {
        for (int i = 0; i < batch.Saved.Count; i++)
        {
            var info = batch.Saved[i];
            if (results.ElementAtOrDefault(batch.Deleted.Count + i) is JsonObject r)
            {
                info.ChangeVector = r["@change-vector"]?.GetValue<string>();
                info.Metadata["@id"] = info.Id;
                info.Metadata["@change-vector"] = info.ChangeVector;
                if (r["@last-modified"]?.GetValue<string>() is { } lm)
                    info.Metadata["@last-modified"] = lm;
            }
            info.IsNew = false;
            info.HasConcurrencyCheck = false;
            info.ConcurrencyCheck = null;
            info.Original = ToDocument(info).ToJsonString();
        }
    }

    /// <summary>A new counter name changes the document (its <c>@counters</c>): the tracked change vector follows.</summary>
    private void ApplyCounters(PendingBatch batch, JsonArray results)
    {
        for (int i = 0; i < batch.CountersOf.Count; i++)
        {
            if (results.ElementAtOrDefault(batch.CounterResults + i) is JsonObject r && r["DocumentChangeVector"]?.GetValue<string>() is { } cv
                && _byId.TryGetValue(batch.CountersOf[i], out var tracked))
            {
                tracked.ChangeVector = cv;
                tracked.Metadata["@change-vector"] = cv;
            }
        }
    }

    /// <summary>A forced revision of a document without revisions gives it HasRevisions: a new change vector.</summary>
    private void ApplyForcedRevisions(PendingBatch batch, JsonArray results)
    {
        for (int i = batch.RevisionResults; i < results.Count; i++)
        {
            if (results[i] is JsonObject r && (bool?)r["RevisionCreated"] == true && (string?)r["@id"] is { } id && _byId.TryGetValue(id, out var tracked)
                && (string?)r["@change-vector"] is { } cv)
            {
                tracked.ChangeVector = cv;
                tracked.Metadata["@change-vector"] = cv;
                if ((string?)r["@flags"] is { } flags)
                    tracked.Metadata["@flags"] = flags;
                tracked.Original = ToDocument(tracked).ToJsonString();
            }
        }
    }
}
