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
                        var command = new ReplicatedBatchCommand(sourceId, lastEtag, items, db.Replication.Solver);
                        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
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
        }
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
