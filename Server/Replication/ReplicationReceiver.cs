using RavenLite.Server.Databases;
using RavenLite.Server.Logging;

namespace RavenLite.Server.Replication;

/// <summary>
/// The destination's side of one replication connection (docs/replication.md "Connection"), after the TCP header was
/// accepted: the source's hello is answered with the position this database has applied from it and its change vector;
/// then each batch is applied as one transaction and acknowledged with the new position, each heartbeat acknowledged
/// as it stands. Silence longer than the heartbeat timeout ends the connection (the source reconnects).
/// </summary>
internal sealed class ReplicationReceiver(Database db, Stream stream, TimeSpan heartbeatTimeout, ILogger logger)
{
    public async Task RunAsync(CancellationToken stopping)
    {
        using var hello = await ReadAsync(stopping).ConfigureAwait(false);
        if (hello == null || ReplicationFrames.TypeOf(hello) != "Hello")
            throw new InvalidDataException("A replication connection must start with its Hello.");
        string sourceId = hello.RootElement.TryGetProperty("DatabaseId", out var id) && id.GetString() is { Length: > 0 } s
            ? s : throw new InvalidDataException("The replication Hello names no DatabaseId.");
        string sourceName = hello.RootElement.TryGetProperty("DatabaseName", out var n) ? n.GetString() ?? "" : "";
        string sourceUrl = hello.RootElement.TryGetProperty("Url", out var u) ? u.GetString() ?? "" : "";
        _sourceId = sourceId;
        if (sourceId == db.Documents.DatabaseId)
            throw new InvalidDataException("A database cannot replicate to itself.");
        var incoming = db.Replication.Incoming(sourceId, sourceName, sourceUrl);
        try
        {
            await AckAsync("HelloAck", stopping).ConfigureAwait(false);
            while (true)
            {
                using var frame = await ReadAsync(stopping).ConfigureAwait(false);
                if (frame == null)
                    return;
                switch (ReplicationFrames.TypeOf(frame))
                {
                    case "Batch":
                        long lastEtag = frame.RootElement.GetProperty("LastEtag").GetInt64();
                        var items = ReplicatedItem.ParseAll(frame.RootElement);
                        if (MissingContents(items) is { Count: > 0 } missing)
                        {
                            // The source streams them, then sends the batch again.
                            await ReceiveContentsAsync(missing, incoming, stopping).ConfigureAwait(false);
                            break;
                        }
                        var command = new ReplicatedBatchCommand(sourceId, lastEtag, items, db.Replication.Solver, _staged);
                        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
                        await DiscardStagedAsync().ConfigureAwait(false);
                        incoming.Received(lastEtag, command.Counts.Applied, command.Counts.Resolved, command.Counts.Conflicted);
                        await AckAsync("Ack", stopping).ConfigureAwait(false);
                        break;
                    case "Heartbeat":
                        incoming.Heard();
                        await AckAsync("Ack", stopping).ConfigureAwait(false);
                        break;
                    default:
                        throw new InvalidDataException($"Unexpected replication message '{ReplicationFrames.TypeOf(frame)}'.");
                }
            }
        }
        catch (Exception e) when (e is not OperationCanceledException)
        {
            incoming.Failed(e.Message);
            Log.ReplicationReceiveFailed(logger, db.Name, sourceName, e.Message);
            // Tell the source why, when the connection still carries it.
            try
            {
                await ReplicationFrames.WriteAsync(stream, w =>
                {
                    w.WriteStartObject();
                    w.WriteString("Type", "Error");
                    w.WriteString("Message", e.Message);
                    w.WriteEndObject();
                }, stopping).ConfigureAwait(false);
            }
            catch (Exception e2) when (e2 is IOException or ObjectDisposedException or OperationCanceledException)
            {
            }
        }
        finally
        {
            incoming.Disconnected();
            await DiscardStagedAsync().ConfigureAwait(false);
        }
    }

    // Attachment contents received for the batch being applied, by hash.
    private readonly Dictionary<string, Attachments.StagedContent> _staged = new(StringComparer.Ordinal);

    /// <summary>The attachment contents the batch's documents refer to that this database holds neither stored nor staged.</summary>
    private List<string> MissingContents(List<ReplicatedItem> items)
    {
        var missing = new List<string>();
        using var tx = db.Environment.ReadTransaction();
        foreach (var item in items)
        {
            if (item.IsTombstone || item.Counter != null || item.Series != null || !ReplicationApply.HasAttachments(item.Data.Span))
                continue;
            if (Documents.DocumentExtras.Read(item.Data.Span) is not { Attachments.Count: > 0 } extras)
                continue;
            foreach (var a in extras.Attachments.Values)
                if (!_staged.ContainsKey(a.Hash) && !missing.Contains(a.Hash) && Attachments.AttachmentsStore.Find(tx, a.Hash) == null)
                    missing.Add(a.Hash);
        }
        return missing;
    }

    /// <summary>Asks for <paramref name="missing"/> and stages each content as it streams in (never held whole), checking its hash.</summary>
    private async Task ReceiveContentsAsync(List<string> missing, IncomingReplication incoming, CancellationToken stopping)
    {
        await ReplicationFrames.WriteAsync(stream, w =>
        {
            w.WriteStartObject();
            w.WriteString("Type", "Missing");
            w.WriteStartArray("Hashes");
            foreach (var h in missing)
                w.WriteStringValue(h);
            w.WriteEndArray();
            w.WriteEndObject();
        }, stopping).ConfigureAwait(false);
        foreach (var expected in missing)
        {
            using var header = await ReadAsync(stopping).ConfigureAwait(false);
            if (header == null || ReplicationFrames.TypeOf(header) != "AttachmentContent")
                throw new InvalidDataException("Expected an attachment's content from the source.");
            string hash = header.RootElement.GetProperty("Hash").GetString() ?? "";
            long size = header.RootElement.GetProperty("Size").GetInt64();
            if (hash != expected || size < 0)
                throw new InvalidDataException($"Expected attachment content {expected}, got {hash} ({size} bytes).");
            var staged = await Attachments.AttachmentUpload.StageAsync(new ExactLengthStream(stream, size), db.Merger, long.MaxValue, stopping)
                .WaitAsync(heartbeatTimeout + TimeSpan.FromSeconds(size / (1 << 20)), stopping).ConfigureAwait(false);
            _staged[hash] = staged;
            incoming.ReceivedContent(size);
            if (staged.Hash != hash)
                throw new InvalidDataException($"Attachment content sent as {hash} hashes to {staged.Hash}.");
        }
    }

    /// <summary>Drops the staged contents: attached by the batch just applied, or never needed.</summary>
    private async Task DiscardStagedAsync()
    {
        foreach (var staged in _staged.Values.Where(s => s.Staged))
            await Attachments.AttachmentUpload.DiscardAsync(db.Merger, staged.ContentId, staged.Size).ConfigureAwait(false);
        _staged.Clear();
    }

    private async Task<JsonDocument?> ReadAsync(CancellationToken stopping) =>
        await ReplicationFrames.ReadAsync(stream, stopping).WaitAsync(heartbeatTimeout, stopping).ConfigureAwait(false);

    /// <summary>Answers with this database's position from the source and its change vector (both as durable now).</summary>
    private Task AckAsync(string type, CancellationToken stopping)
    {
        long position;
        string changeVector;
        using (var tx = db.Environment.ReadTransaction())
        {
            position = ReplicationPositions.Get(tx, _sourceId!);
            changeVector = db.Documents.DatabaseChangeVector(tx);
        }
        return ReplicationFrames.WriteAsync(stream, w =>
        {
            w.WriteStartObject();
            w.WriteString("Type", type);
            w.WriteNumber("LastEtag", position);
            w.WriteString("DatabaseChangeVector", changeVector);
            w.WriteEndObject();
        }, stopping);
    }

    private string? _sourceId;
}
