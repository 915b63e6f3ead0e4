using System.Net.Sockets;
using RavenLite.Server.Databases;
using RavenLite.Server.Formatting;
using RavenLite.Server.Logging;

namespace RavenLite.Server.Replication;

/// <summary>
/// The source's side of one destination (docs/replication.md "Connection"): finds the destination's TCP port from
/// <c>/info/tcp</c>, opens a replication connection, learns from the destination's hello how far it has applied this
/// database, then sends batches at most three ahead of their acknowledgements — the destination reads the next while it
/// applies one; the sender holds only the batch it is reading (a sent one is dropped) — and a heartbeat when there is
/// nothing to send. Any failure drops the connection and it reconnects (backing off up to
/// 5 s), resuming from what the destination says it has applied: nothing is skipped, and an item sent twice is
/// recognised by its change vector and left.
/// </summary>
internal sealed class ReplicationSender : IDisposable
{
    private readonly Database _db;
    private readonly ILogger _logger;
    private readonly Action _acknowledged;
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _loop;
    private TaskCompletionSource _wake = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private readonly IReplicationConnector _connector;

    public ReplicationSender(Database db, ExternalReplicationTask task, RavenConnectionString destination, IReplicationConnector connector, ILogger logger, Action acknowledged)
    {
        _db = db;
        _connector = connector;
        Task = task;
        Destination = destination;
        _logger = logger;
        _acknowledged = acknowledged;
        _loop = System.Threading.Tasks.Task.Run(() => RunAsync(_stop.Token));
    }

    public ExternalReplicationTask Task { get; }

    public RavenConnectionString Destination { get; }

    /// <summary>The last etag of this database the destination has acknowledged as applied (durably).</summary>
    public long LastAcknowledgedEtag => Volatile.Read(ref _lastAcknowledged);

    private long _lastAcknowledged = -1;

    /// <summary>The destination's change vector as of its last acknowledgement.</summary>
    public string DestinationChangeVector { get; private set; } = "";

    /// <summary>RavenDB's connection status: <c>Active</c> while connected, <c>Reconnect</c> after a failure.</summary>
    public string Status { get; private set; } = "Reconnect";

    /// <summary>Why the last attempt failed (null while it works).</summary>
    public string? Error { get; private set; }

    /// <summary>When the destination last acknowledged a batch or heartbeat (UTC).</summary>
    public DateTime? LastAcknowledgedAt { get; private set; }

    /// <summary>The destination URL the connection uses.</summary>
    public string? ConnectedUrl { get; private set; }

    /// <summary>Wakes the sender: the database committed writes.</summary>
    public void Notify() => Interlocked.Exchange(ref _wake, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();

    private TimeSpan HeartbeatTimeout => TimeSpan.FromSeconds(_db.Options.ReplicationHeartbeatTimeoutSeconds);

    private async Task RunAsync(CancellationToken stop)
    {
        int failures = 0;
        while (!stop.IsCancellationRequested)
        {
            try
            {
                await ReplicateAsync(stop).ConfigureAwait(false);
            }
            catch (Exception e) when (!stop.IsCancellationRequested)
            {
                Status = "Reconnect";
                Error = e.Message;
                failures++;
                Log.ReplicationSendFailed(_logger, _db.Name, $"{Destination.Database} at {string.Join(", ", Destination.TopologyDiscoveryUrls)}", e.Message);
            }
            catch (OperationCanceledException)
            {
                return;
            }
            // Back off before reconnecting: 100 ms, doubling to 5 s.
            var backoff = TimeSpan.FromMilliseconds(Math.Min(5000, 100 * (1 << Math.Min(failures, 6))));
            try
            {
                await System.Threading.Tasks.Task.Delay(backoff, stop).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                return;
            }
        }
    }

    private async Task ReplicateAsync(CancellationToken stop)
    {
        var (url, host, port, certificate) = await ResolveTcpAsync(stop).ConfigureAwait(false);
        using var client = new TcpClient { NoDelay = true };
        await client.ConnectAsync(host, port, stop).AsTask().WaitAsync(TimeSpan.FromSeconds(10), stop).ConfigureAwait(false);
        await using var stream = await _connector.OpenAsync(client, host, certificate, stop).WaitAsync(TimeSpan.FromSeconds(10), stop).ConfigureAwait(false);
        var header = JsonSerializer.SerializeToUtf8Bytes(new Dictionary<string, object>
        {
            ["DatabaseName"] = Destination.Database,
            ["Operation"] = ReplicationProtocol.Operation,
            ["OperationVersion"] = ReplicationProtocol.Version,
        });
        await stream.WriteAsync(header, stop).ConfigureAwait(false);
        using (var reply = await new JsonMessageReader(stream).ReadAsync(stop).WaitAsync(HeartbeatTimeout, stop).ConfigureAwait(false))
        {
            if (reply == null)
                throw new IOException("The destination closed the connection during the handshake.");
            string status = reply.RootElement.TryGetProperty(nameof(Status), out var s) ? s.GetString() ?? "" : "";
            if (status != "Ok")
                throw new IOException($"The destination refused replication ({status}): {(reply.RootElement.TryGetProperty("Message", out var m) ? m.GetString() : "")}");
        }
        await ReplicationFrames.WriteAsync(stream, w =>
        {
            w.WriteStartObject();
            w.WriteString("Type", "Hello");
            w.WriteString("DatabaseId", _db.Documents.DatabaseId);
            w.WriteString("DatabaseName", _db.Name);
            w.WriteString("NodeTag", _db.Options.NodeTag);
            w.WriteString("Url", _db.Options.ServerUrl);
            w.WriteEndObject();
        }, stop).ConfigureAwait(false);
        long position = await ReadAckAsync(stream, "HelloAck", stop).ConfigureAwait(false);
        ConnectedUrl = url;
        Status = "Active";
        Error = null;
        Log.ReplicationConnected(_logger, _db.Name, $"{Destination.Database} at {url}", position);
        var heartbeat = HeartbeatTimeout / 3;
        // Batches sent and not yet acknowledged, oldest first: at most three, so the destination reads the next batch while
        // it applies one. Each keeps only its snapshot — a sent batch itself is dropped (read again if contents are asked for).
        var unacknowledged = new Queue<Prepared>();
        Task<JsonDocument>? reading = null;
        Prepared? held = null; // read while one is unacknowledged, but not full: sent after the acknowledgement
        long sentUpTo = position;
        try
        {
            while (true)
            {
                var wake = Volatile.Read(ref _wake).Task; // taken before reading, so a commit during the read is not missed
                if (unacknowledged.Count < MaxUnacknowledged && (held ?? Prepare(sentUpTo)) is { } batch)
                {
                    held = null;
                    // Ahead of an acknowledgement only a full batch goes: there is a backlog to pipeline. The tail of live
                    // writes waits and goes after it, so that batches stay as large as the writes allow.
                    if (unacknowledged.Count == 0 || batch.Batch!.Full)
                    {
                        await ReplicationFrames.WriteAsync(stream, batch.Batch!.Frame, stop).ConfigureAwait(false);
                        batch.Batch = null;
                        unacknowledged.Enqueue(batch);
                        sentUpTo = batch.LastEtag;
                        reading ??= ReadFrameAsync(stream, stop);
                        if (unacknowledged.Count < MaxUnacknowledged && !reading.IsCompleted)
                            continue; // read the next batch while the destination applies this one
                    }
                    else
                    {
                        held = batch;
                    }
                }
                if (unacknowledged.Count > 0)
                {
                    var reply = await (reading ??= ReadFrameAsync(stream, stop)).ConfigureAwait(false);
                    reading = null;
                    var oldest = unacknowledged.Peek();
                    if (ReplicationFrames.TypeOf(reply) == "Missing")
                    {
                        held?.Dispose();
                        held = null;
                        // The destination drops the batches sent after this one: send the contents, then this batch again.
                        foreach (var dropped in unacknowledged.Skip(1))
                            dropped.Dispose();
                        unacknowledged.Clear();
                        unacknowledged.Enqueue(oldest);
                        reply = await SendContentsAndBatchAgainAsync(stream, oldest, reply, stop).ConfigureAwait(false);
                        sentUpTo = oldest.LastEtag;
                    }
                    using (reply)
                        position = Acknowledged(reply, "Ack");
                    unacknowledged.Dequeue().Dispose();
                    if (position != oldest.LastEtag)
                    {
                        // Not the position it was sent to reach: start again from what the destination has.
                        while (unacknowledged.Count > 0)
                            unacknowledged.Dequeue().Dispose();
                        held?.Dispose();
                        held = null;
                        sentUpTo = position;
                    }
                    continue;
                }
                var wait = Task.DelayReplicationFor > TimeSpan.Zero && Task.DelayReplicationFor < heartbeat ? Task.DelayReplicationFor : heartbeat;
                if (await System.Threading.Tasks.Task.WhenAny(wake, System.Threading.Tasks.Task.Delay(wait, stop)).ConfigureAwait(false) != wake)
                {
                    stop.ThrowIfCancellationRequested();
                    await ReplicationFrames.WriteAsync(stream, w =>
                    {
                        w.WriteStartObject();
                        w.WriteString("Type", "Heartbeat");
                        w.WriteEndObject();
                    }, stop).ConfigureAwait(false);
                    position = await ReadAckAsync(stream, "Ack", stop).ConfigureAwait(false);
                    sentUpTo = position;
                }
            }
        }
        finally
        {
            held?.Dispose();
            while (unacknowledged.Count > 0)
                unacknowledged.Dequeue().Dispose();
            if (reading != null)
                _ = reading.ContinueWith(t => t.Result.Dispose(), CancellationToken.None, TaskContinuationOptions.OnlyOnRanToCompletion, TaskScheduler.Default);
        }
    }

    /// <summary>Batches sent ahead of their acknowledgements: three, so the destination has the next one queued while it reads another.</summary>
    private const int MaxUnacknowledged = 3;

    /// <summary>A batch read from its own snapshot, with what it was read from (so that it can be read again).</summary>
    private sealed class Prepared(Storage.Transactions.Transaction snapshot, ReplicationBatch batch, long from, string destinationChangeVector, ReplicationBatch.Limits limits) : IDisposable
    {
        public Storage.Transactions.Transaction Snapshot { get; } = snapshot;

        /// <summary>The batch until it is sent; a sent batch is not kept (read again from the snapshot when the destination asks for contents).</summary>
        public ReplicationBatch? Batch { get; set; } = batch;

        /// <summary>The position after the batch.</summary>
        public long LastEtag { get; } = batch.LastEtag;

        public ReplicationBatch ReadAgain(Documents.DocumentsStorage documents) =>
            ReplicationBatch.Read(documents, Snapshot, from, destinationChangeVector, limits) ?? throw new InvalidOperationException("A batch read again from its snapshot came out empty.");

        public void Dispose() => Snapshot.Dispose();
    }

    /// <summary>The next batch after <paramref name="position"/> from a new snapshot, or null when there is nothing to send.</summary>
    private Prepared? Prepare(long position)
    {
        var limits = new ReplicationBatch.Limits(_db.Options.ReplicationBatchItems, _db.Options.ReplicationBatchBytes, Task.DelayReplicationFor);
        var snapshot = _db.Environment.ReadTransaction();
        string destinationChangeVector = DestinationChangeVector;
        if (ReplicationBatch.Read(_db.Documents, snapshot, position, destinationChangeVector, limits) is { } batch)
            return new Prepared(snapshot, batch, position, destinationChangeVector, limits);
        snapshot.Dispose();
        return null;
    }

    /// <summary>
    /// Answers the destination's <c>Missing</c> for <paramref name="batch"/>: streams each content it lacks from the
    /// batch's own snapshot, reads the batch again from it and sends it again. Returns the destination's reply to it.
    /// </summary>
    private async Task<JsonDocument> SendContentsAndBatchAgainAsync(Stream stream, Prepared batch, JsonDocument missing, CancellationToken stop)
    {
        using (missing)
        {
            foreach (var hash in missing.RootElement.GetProperty("Hashes").EnumerateArray())
                await SendContentAsync(stream, batch.Snapshot, hash.GetString()!, stop).ConfigureAwait(false);
        }
        await ReplicationFrames.WriteAsync(stream, batch.ReadAgain(_db.Documents).Frame, stop).ConfigureAwait(false);
        var reply = await ReadFrameAsync(stream, stop).ConfigureAwait(false);
        if (ReplicationFrames.TypeOf(reply) == "Missing")
        {
            reply.Dispose();
            throw new InvalidDataException("The destination still lacks attachment contents it was sent.");
        }
        return reply;
    }

    /// <summary>An attachment's content: a frame <c>{Type: "AttachmentContent", Hash, Size}</c>, then its bytes as they are stored.</summary>
    private static async Task SendContentAsync(Stream stream, Storage.Transactions.Transaction snapshot, string hash, CancellationToken stop)
    {
        var (contentId, size, _) = Attachments.AttachmentsStore.Find(snapshot, hash)
            ?? throw new InvalidDataException($"The destination asked for attachment content {hash}, which this database does not hold.");
        await ReplicationFrames.WriteAsync(stream, w =>
        {
            w.WriteStartObject();
            w.WriteString("Type", "AttachmentContent");
            w.WriteString("Hash", hash);
            w.WriteNumber("Size", size);
            w.WriteEndObject();
        }, stop).ConfigureAwait(false);
        await Attachments.AttachmentsStore.CopyToAsync(snapshot, contentId, 0, size, stream, stop).ConfigureAwait(false);
        await stream.FlushAsync(stop).ConfigureAwait(false);
    }

    private async Task<JsonDocument> ReadFrameAsync(Stream stream, CancellationToken stop)
    {
        var frame = await ReplicationFrames.ReadAsync(stream, stop).WaitAsync(HeartbeatTimeout, stop).ConfigureAwait(false)
            ?? throw new IOException("The destination closed the replication connection.");
        if (ReplicationFrames.TypeOf(frame) == "Error")
        {
            string message = frame.RootElement.GetProperty("Message").GetString() ?? "";
            frame.Dispose();
            throw new IOException("The destination failed: " + message);
        }
        return frame;
    }

    /// <summary>Reads the destination's acknowledgement: records its position and change vector and returns the position.</summary>
    private async Task<long> ReadAckAsync(Stream stream, string type, CancellationToken stop)
    {
        using var frame = await ReadFrameAsync(stream, stop).ConfigureAwait(false);
        return Acknowledged(frame, type);
    }

    private long Acknowledged(JsonDocument frame, string type)
    {
        string got = ReplicationFrames.TypeOf(frame);
        if (got != type)
            throw new InvalidDataException($"Expected {type} from the destination, got '{got}'.");
        long position = frame.RootElement.GetProperty("LastEtag").GetInt64();
        DestinationChangeVector = frame.RootElement.GetProperty("DatabaseChangeVector").GetString() ?? "";
        LastAcknowledgedAt = DateTime.UtcNow;
        Volatile.Write(ref _lastAcknowledged, position);
        _acknowledged();
        return position;
    }

    /// <summary>The destination's TCP endpoint, from the first of its URLs that answers <c>/info/tcp</c>.</summary>
    private async Task<(string Url, string Host, int Port, string? Certificate)> ResolveTcpAsync(CancellationToken stop)
    {
        var errors = new List<string>();
        foreach (string url in Destination.TopologyDiscoveryUrls)
        {
            try
            {
                using var response = await _connector.Http.GetAsync(url + "/info/tcp", stop).ConfigureAwait(false);
                if (!response.IsSuccessStatusCode)
                    throw new HttpRequestException($"/info/tcp answered {(int)response.StatusCode}: {await response.Content.ReadAsStringAsync(stop).ConfigureAwait(false)}");
                using var json = JsonDocument.Parse(await response.Content.ReadAsByteArrayAsync(stop).ConfigureAwait(false));
                var tcp = new Uri(json.RootElement.GetProperty("Url").GetString()!);
                string? certificate = json.RootElement.TryGetProperty("Certificate", out var c) && c.ValueKind == JsonValueKind.String ? c.GetString() : null;
                return (url, tcp.Host.Trim('[', ']'), tcp.Port, certificate);
            }
            catch (Exception e) when (e is HttpRequestException or JsonException or TaskCanceledException or KeyNotFoundException or UriFormatException && !stop.IsCancellationRequested)
            {
                errors.Add($"{url}: {e.Message}");
            }
        }
        throw new IOException("No URL of the destination answered: " + string.Join("; ", errors));
    }

    public void Dispose()
    {
        _stop.Cancel();
        try
        {
            _loop.Wait(TimeSpan.FromSeconds(10));
        }
        catch (AggregateException)
        {
        }
        _stop.Dispose();
    }
}
