using System.Threading.Channels;
using RavenLite.Server.Databases;
using RavenLite.Server.Logging;

namespace RavenLite.Server.Replication;

/// <summary>
/// The destination's side of one replication connection (docs/replication.md "Connection"), after the TCP header was
/// accepted: the source's hello is answered with the position this database has applied from it and its change vector;
/// then each batch is applied as one transaction and acknowledged with the new position once durable — while the next
/// batch is read and handed to the merger — and each heartbeat acknowledged as it stands, in order. Silence longer
/// than the heartbeat timeout ends the connection (the source reconnects).
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
        var acks = Channel.CreateUnbounded<PendingAck>(new UnboundedChannelOptions { SingleReader = true, SingleWriter = true });
        Task? acker = null;
        try
        {
            await AckAsync("HelloAck", stopping).ConfigureAwait(false);
            long expectedFrom = ReadPosition();
            acker = AckLoopAsync(acks.Reader, incoming, stopping);
            while (true)
            {
                var reading = ReadAsync(stopping);
                if (await Task.WhenAny(reading, acker).ConfigureAwait(false) == acker)
                {
                    _ = reading.ContinueWith(t => t.Result?.Dispose(), CancellationToken.None, TaskContinuationOptions.OnlyOnRanToCompletion, TaskScheduler.Default);
                    await acker.ConfigureAwait(false); // it failed: so does the connection
                    return;
                }
                using var frame = await reading.ConfigureAwait(false);
                if (frame == null)
                    return;
                switch (ReplicationFrames.TypeOf(frame))
                {
                    case "Batch":
                        long lastEtag = frame.RootElement.GetProperty("LastEtag").GetInt64();
                        var items = ReplicatedItem.ParseAll(frame.RootElement);
                        if (MissingContents(items) is { Count: > 0 } missing)
                        {
                            // The source streams them, then sends the batch again; batches it sent after this one are dropped.
                            await DrainAsync(acks.Writer, acker).ConfigureAwait(false);
                            await ReceiveContentsAsync(missing, incoming, stopping).ConfigureAwait(false);
                            break;
                        }
                        // Applied in order: a batch commits only on top of the one before it (a failed one fails those after it).
                        var command = new ReplicatedBatchCommand(sourceId, expectedFrom, lastEtag, items, db.Replication.Solver,
                            _staged.Count == 0 ? NoContents : new Dictionary<string, Attachments.StagedContent>(_staged));
                        expectedFrom = lastEtag;
                        acks.Writer.TryWrite(new PendingAck(command, db.Merger.EnqueueAsync(command), null));
                        if (_staged.Count > 0)
                        {
                            // The contents staged for it are dropped once it is applied (those it did not attach).
                            await DrainAsync(acks.Writer, acker).ConfigureAwait(false);
                            await DiscardStagedAsync().ConfigureAwait(false);
                        }
                        break;
                    case "Heartbeat":
                        incoming.Heard();
                        acks.Writer.TryWrite(new PendingAck(null, Task.CompletedTask, null)); // after the batches before it
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
            acks.Writer.TryComplete();
            await WaitQuietly(acker).ConfigureAwait(false); // no acknowledgement is written after the error
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
            acks.Writer.TryComplete();
            await WaitQuietly(acker).ConfigureAwait(false);
            incoming.Disconnected();
            await DiscardStagedAsync().ConfigureAwait(false);
        }
    }

    private static readonly IReadOnlyDictionary<string, Attachments.StagedContent> NoContents = new Dictionary<string, Attachments.StagedContent>();

    /// <summary>
    /// A batch handed to the merger (or a heartbeat: no command), to acknowledge once it is durable; or a drain marker
    /// (<paramref name="Drained"/>), completed when every acknowledgement before it is written.
    /// </summary>
    private sealed record PendingAck(ReplicatedBatchCommand? Command, Task Applied, TaskCompletionSource? Drained);

    /// <summary>
    /// Writes the acknowledgements in order, each once its batch is durable, while the connection reads the next batch:
    /// the only writer of the stream then (the reading side writes only after <see cref="DrainAsync"/>).
    /// </summary>
    private async Task AckLoopAsync(ChannelReader<PendingAck> pending, IncomingReplication incoming, CancellationToken stopping)
    {
        await foreach (var p in pending.ReadAllAsync(stopping).ConfigureAwait(false))
        {
            if (p.Drained != null)
            {
                p.Drained.TrySetResult();
                continue;
            }
            await p.Applied.ConfigureAwait(false);
            if (p.Command is { } command)
                incoming.Received(command.LastEtag, command.Counts.Applied, command.Counts.Resolved, command.Counts.Conflicted);
            await AckAsync("Ack", stopping).ConfigureAwait(false);
        }
    }

    /// <summary>Waits until every acknowledgement queued so far is written (the acknowledging side then leaves the stream alone).</summary>
    private static async Task DrainAsync(ChannelWriter<PendingAck> acks, Task acker)
    {
        var drained = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        acks.TryWrite(new PendingAck(null, Task.CompletedTask, drained));
        if (await Task.WhenAny(drained.Task, acker).ConfigureAwait(false) == acker)
            await acker.ConfigureAwait(false); // it failed (a batch did not apply): so does the connection
    }

    private static async Task WaitQuietly(Task? task)
    {
        if (task == null)
            return;
        try
        {
            await task.ConfigureAwait(false);
        }
        catch (Exception)
        {
            // already reported by the connection's failure
        }
    }

    private long ReadPosition()
    {
        using var tx = db.Environment.ReadTransaction();
        return ReplicationPositions.Get(tx, _sourceId!);
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
            var header = await ReadAsync(stopping).ConfigureAwait(false);
            while (header != null && ReplicationFrames.TypeOf(header) == "Batch")
            {
                header.Dispose(); // sent ahead before the source read the Missing: it sends it again after this batch
                header = await ReadAsync(stopping).ConfigureAwait(false);
            }
            using var _ = header;
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
