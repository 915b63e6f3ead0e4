using System.Collections.Concurrent;
using RavenLite.Server.Batches;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Cluster;

/// <summary>
/// Cluster-wide transactions of a group's database (docs/cluster.md "Cluster-wide transactions"). Submitting one sends
/// it through Raft, where the cluster's state decides it — compare-exchange indexes and document atomic guards checked
/// and written at the command's Raft index, the same on every node. Every member then writes its documents, in Raft
/// index order, each version carrying <c>RAFT:{index}-{group's cluster transaction id}</c>; a member that already holds
/// a version from that transaction or a later one (replication got there first) keeps it. The node that asked answers
/// with its own write's results.
/// </summary>
public sealed class ClusterTransactions(ClusterNode node, ServerOptions options, ILogger<ClusterTransactions> logger)
{
    private static readonly TimeSpan ApplyTimeout = TimeSpan.FromSeconds(30);
    private readonly ConcurrentDictionary<string, TaskCompletionSource<List<byte[]>>> _waiting = new(StringComparer.Ordinal);

    /// <summary>
    /// Runs the cluster-wide batch <paramref name="commands"/> (its <c>Commands</c> array, parsed into
    /// <paramref name="items"/>) of group database <paramref name="db"/>: 409 <c>ClusterTransactionConcurrencyException</c>
    /// naming every mismatch, else its Raft index and the result of each document command (JSON object bodies, in order).
    /// </summary>
    internal async Task<(long Index, List<byte[]> DocumentResults)> RunAsync(string requestId, Database db, JsonElement commands, IReadOnlyList<BatchItem> items, bool atomicWrites,
        CancellationToken token)
    {
        foreach (var item in items)
            if (item is not CompareExchangeItem && (item.Id.EndsWith('|') || item.Id.EndsWith('/')))
                throw new BadRequestException($"Document id '{item.Id}' cannot end with '|' or '/' in a cluster-wide transaction: the id must be the same on every node.");
        string clusterTransactionId = node.Read(s => s.Databases.GetValueOrDefault(db.Name)?.ClusterTransactionId) ?? db.Documents.ClusterTransactionId;
        byte[] command = Encode(requestId, db.Name, commands, items, atomicWrites, clusterTransactionId);
        var waiter = new TaskCompletionSource<List<byte[]>>(TaskCreationOptions.RunContinuationsAsynchronously);
        _waiting[requestId] = waiter;
        try
        {
            var result = await node.AskAsync(requestId, command, token).ConfigureAwait(false);
            if (!result.Successful)
                throw new ConcurrencyException("Failed to execute cluster transaction due to the following issues: " + result.Json, RavenExceptionTypes.ClusterTransactionConcurrency);
            await ApplyAsync(db, token).ConfigureAwait(false);
            if (!waiter.Task.IsCompleted && Applied(db, result.Index))
                return (result.Index, await StoredResultsAsync(db, items).ConfigureAwait(false)); // applied here before this request waited (a client's retry)
            return (result.Index, await waiter.Task.WaitAsync(ApplyTimeout, token).ConfigureAwait(false));
        }
        finally
        {
            _waiting.TryRemove(requestId, out _);
        }
    }

    /// <summary>
    /// Writes, in Raft index order, the committed cluster-wide transactions of group database <paramref name="db"/> that
    /// this instance has not applied yet (its last applied index is stored with its documents).
    /// </summary>
    public async Task ApplyAsync(Database db, CancellationToken token)
    {
        ArgumentNullException.ThrowIfNull(db);
        long applied;
        using (var tx = db.Environment.ReadTransaction())
            applied = DocumentsStorage.LastClusterTransaction(tx);
        var (clusterTransactionId, pending) = node.Read(s => (s.Databases.GetValueOrDefault(db.Name)?.ClusterTransactionId, s.Transactions(db.Name, applied)));
        if (pending.Count == 0)
            return;
        var results = new Dictionary<string, List<byte[]>>(StringComparer.Ordinal);
        var command = new DelegateCommand<int>(ctx =>
        {
            results.Clear(); // the merger may run a command again after a rollback
            if (clusterTransactionId != null)
                ctx.Storage.AdoptClusterTransactionId(ctx.Transaction, clusterTransactionId);
            long last = DocumentsStorage.LastClusterTransaction(ctx.Transaction);
            foreach (var t in pending)
            {
                if (t.Index <= last)
                    continue;
                var written = Write(ctx, t);
                if (_waiting.ContainsKey(t.RequestId))
                    results[t.RequestId] = written;
                last = t.Index;
            }
            DocumentsStorage.WriteLastClusterTransaction(ctx.Transaction, last);
            return 0;
        });
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        foreach (var (requestId, written) in results)
            if (_waiting.TryGetValue(requestId, out var waiter))
                waiter.TrySetResult(written);
    }

    private static bool Applied(Database db, long index)
    {
        using var tx = db.Environment.ReadTransaction();
        return DocumentsStorage.LastClusterTransaction(tx) >= index;
    }

    /// <summary>The results of a transaction this member applied earlier, from the versions it holds now.</summary>
    private static async Task<List<byte[]>> StoredResultsAsync(Database db, IReadOnlyList<BatchItem> items)
    {
        var command = new DelegateCommand<List<byte[]>>(ctx =>
        {
            var results = new List<byte[]>();
            foreach (var item in items.Where(i => i is not CompareExchangeItem))
            {
                var buffer = new ArrayBufferWriter<byte>(256);
                using (var w = new Utf8JsonWriter(buffer))
                {
                    w.WriteStartObject();
                    WriteKept(w, item, ctx.Storage.Get(ctx.Transaction, item.Id));
                    w.WriteEndObject();
                }
                results.Add(buffer.WrittenSpan.ToArray());
            }
            return results;
        });
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        return command.Result!;
    }

    /// <summary>Writes one transaction's documents under its Raft index; returns each command's result.</summary>
    private List<byte[]> Write(DocumentsWriteContext ctx, ClusterTransaction t)
    {
        var results = new List<byte[]>();
        List<BatchItem> items;
        var prepared = new ArrayBufferWriter<byte>();
        using var json = JsonDocument.Parse("{\"Commands\":" + t.Documents + "}");
        try
        {
            items = BatchParser.Parse(json.RootElement, ctx.Storage, options, prepared, clusterWide: true, []);
        }
        catch (DomainException e)
        {
            // Checked when submitted; a limit lowered since then must not stop this member applying the ones after it.
            Logging.Log.ClusterTransactionSkipped(logger, t.Index, e.Message);
            return results;
        }
        ctx.ClusterTransactionIndex = t.Index;
        try
        {
            foreach (var item in items)
            {
                var buffer = new ArrayBufferWriter<byte>(256);
                using (var w = new Utf8JsonWriter(buffer))
                {
                    w.WriteStartObject();
                    var current = ctx.Storage.Get(ctx.Transaction, item.Id);
                    if (current != null && ChangeVectors.EtagOf(current.ChangeVector, ctx.Storage.ClusterTransactionId) >= t.Index)
                    {
                        WriteKept(w, item, current); // this version or a later one came by replication
                    }
                    else
                    {
                        item.Execute(ctx);
                        item.WriteResult(w);
                    }
                    w.WriteEndObject();
                }
                results.Add(buffer.WrittenSpan.ToArray());
            }
        }
        finally
        {
            ctx.ClusterTransactionIndex = 0; // the merger's next command in this transaction is not part of it
        }
        return results;
    }

    /// <summary>
    /// The result of a command whose document this member already holds at (or after) the transaction: as if written
    /// now. A PUT whose document a later write deleted meanwhile answers the PUT's shape without a version.
    /// </summary>
    private static void WriteKept(Utf8JsonWriter w, BatchItem item, StoredDocument? current)
    {
        if (item is DeleteItem)
        {
            w.WriteString("Type", "DELETE");
            w.WriteString("Id", item.Id);
            w.WriteBoolean("Deleted", false);
            w.WriteNull("ChangeVector");
            return;
        }
        w.WriteString("Type", "PUT");
        if (current == null)
        {
            w.WriteString("@id", item.Id);
            w.WriteNull("@change-vector");
            return;
        }
        w.WriteString("@id", current.Id);
        if (current.Collection != Collections.Empty)
            w.WriteString("@collection", current.Collection);
        w.WriteString("@change-vector", current.ChangeVector);
        w.WriteString("@last-modified", Formatting.JsonDates.FormatDate(current.LastModified));
    }

    private static byte[] Encode(string requestId, string database, JsonElement commands, IReadOnlyList<BatchItem> items, bool atomicWrites, string clusterTransactionId) =>
        ClusterCommands.Encode(w =>
        {
            w.WriteStartObject();
            w.WriteString("Type", ClusterCommands.ClusterTransaction);
            w.WriteString("RequestId", requestId);
            w.WriteString("Database", database);
            w.WriteStartArray("Values");
            foreach (var cx in items.OfType<CompareExchangeItem>())
            {
                w.WriteStartObject();
                w.WriteString("Key", cx.Id);
                w.WriteNumber("Index", cx.ExpectedIndex);
                if (cx.Value != null)
                    w.WriteString("Value", Encoding.UTF8.GetString(cx.Value));
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteStartArray("Guards");
            if (atomicWrites)
            {
                foreach (var item in items.Where(i => i is PutItem or DeleteItem))
                {
                    w.WriteStartObject();
                    w.WriteString("Id", item.Id);
                    // A version written by a cluster-wide transaction carries its index in the group's RAFT entry: the guard's index then.
                    w.WriteNumber("Index", ChangeVectors.EtagOf(item.OriginalChangeVector, clusterTransactionId));
                    w.WriteBoolean("Delete", item is DeleteItem);
                    w.WriteEndObject();
                }
            }
            w.WriteEndArray();
            w.WriteStartArray("Documents");
            int next = 0;
            foreach (var c in commands.EnumerateArray())
            {
                string type = c.GetProperty("Type").GetString()!;
                if (type is not ("PUT" or "DELETE"))
                    continue;
                var item = items[next++];
                while (item is CompareExchangeItem)
                    item = items[next++];
                w.WriteStartObject();
                w.WriteString("Type", type);
                w.WriteString("Id", item.Id); // as resolved (an identity id took its number already)
                if (type == "PUT")
                {
                    w.WritePropertyName("Document");
                    c.GetProperty("Document").WriteTo(w);
                }
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        });
}
