using RavenLite.Server.Formatting;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;

namespace RavenLite.Server.Subscriptions;

/// <summary>
/// One data subscription worker on the TCP port, after the protocol negotiation (the TCP server):
/// reads the worker's options, answers <c>ConnectionStatus</c> (Accepted, NotFound, InUse, Closed), then sends batches —
/// <c>{"Type":"Data","Data":doc}</c> per document (or projection), <c>{"Type":"Includes",...}</c>, <c>{"Type":"EndOfBatch"}</c>
/// — and after each the worker's <c>{"Type":"Acknowledge"}</c> is made durable before <c>{"Type":"Confirm"}</c> and the
/// next batch. Documents are read from a storage snapshot in etag order from the last acknowledged position: a document
/// changed after it was sent comes again; nothing acknowledged is sent twice unless it changed; nothing is skipped.
/// Idle, it waits for commits and sends a line break every few seconds (whitespace the clients' JSON readers skip) so a
/// vanished worker is noticed.
/// </summary>
public sealed class SubscriptionConnection : IDisposable
{
    private const int DefaultMaxDocsPerBatch = 4096;
    private const int MaxBatchBytes = 4 << 20;
    private const int MaxScannedPerBatch = 16_384;
    private static readonly TimeSpan Heartbeat = TimeSpan.FromSeconds(3);

    private readonly Database _db;
    private readonly Stream _stream;
    private readonly JsonMessageReader _reader;
    private readonly CancellationTokenSource _closed = new();
    private (string Status, string Message, bool CanReconnect)? _closeReason;

    internal SubscriptionConnection(Database db, Stream stream, JsonMessageReader reader, string name)
    {
        _db = db;
        _stream = stream;
        _reader = reader;
        Name = name;
    }

    /// <summary>The subscription's name as the worker gave it.</summary>
    public string Name { get; }

    /// <summary>The subscription's id and mentor once the worker is registered (which member serves it).</summary>
    internal long SubscriptionId { get; private set; }

    /// <inheritdoc cref="SubscriptionId"/>
    internal string? MentorNode { get; private set; }

    /// <summary>Ends the connection with a <c>ConnectionStatus</c> of <paramref name="status"/> (Closed, InUse) saying why.</summary>
    public void Close(string status, string message, bool canReconnect)
    {
        _closeReason ??= (status, message, canReconnect);
        try
        {
            _closed.Cancel();
        }
        catch (ObjectDisposedException)
        {
            // Already ended.
        }
    }

    /// <inheritdoc />
    public void Dispose() => _closed.Dispose();

    private async Task SendAsync(Action<Utf8JsonWriter> write, CancellationToken cancellation)
    {
        var buffer = new ArrayBufferWriter<byte>(256);
        using (var w = new Utf8JsonWriter(buffer))
            write(w);
        await _stream.WriteAsync(buffer.WrittenMemory, cancellation).ConfigureAwait(false);
    }

    private Task SendStatusAsync(string status, string? message, bool? canReconnect, CancellationToken cancellation) => SendAsync(w =>
    {
        w.WriteStartObject();
        w.WriteString("Type", "ConnectionStatus");
        w.WriteString("Status", status);
        if (message != null)
        {
            w.WriteString("Message", message);
            w.WriteString("Exception", message);
        }
        if (status == "Redirect")
        {
            // RavenDB's clients find the node by this tag in the database's topology and connect there.
            string? responsible = _db.Ownership.ResponsibleNode(SubscriptionId, MentorNode);
            w.WriteStartObject("Data");
            w.WriteString("RedirectedTag", responsible);
            w.WriteString("CurrentTag", _db.Documents.NodeTag);
            w.WriteStartObject("Reasons");
            w.WriteString(_db.Documents.NodeTag, message);
            w.WriteEndObject();
            w.WriteEndObject();
        }
        else if (canReconnect != null)
        {
            w.WriteStartObject("Data");
            w.WriteBoolean("CanReconnect", canReconnect.Value);
            w.WriteEndObject();
        }
        w.WriteEndObject();
    }, cancellation);

    // Kept whole: the worker's conversation (batch, acknowledgement, wait for writes) as one loop over the
    // connection's state.
    /// <summary>Serves the worker until it leaves, is dropped, or the subscription goes.</summary>
    internal async Task RunAsync(JsonElement options, CancellationToken serverStopping)
    {
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(serverStopping, _closed.Token);
        var token = stop.Token;
        var manager = _db.Subscriptions;
        var state = manager.Get(Name);
        if (state == null)
        {
            await SendStatusAsync("NotFound", $"Subscription '{Name}' does not exist in database '{_db.Name}'.", null, serverStopping).ConfigureAwait(false);
            return;
        }
        if (state.Disabled)
        {
            await SendStatusAsync("Closed", $"Subscription '{Name}' is disabled.", false, serverStopping).ConfigureAwait(false);
            return;
        }
        (SubscriptionId, MentorNode) = (state.SubscriptionId, state.MentorNode);
        if (!_db.Ownership.Owns(state.SubscriptionId, state.MentorNode))
        {
            // In a group one member serves each subscription (docs/cluster.md "Ongoing tasks"); the worker is sent there.
            await SendStatusAsync("Redirect", $"Subscription '{Name}' is served by node {_db.Ownership.ResponsibleNode(state.SubscriptionId, state.MentorNode)}, not {_db.Documents.NodeTag}.", null, serverStopping).ConfigureAwait(false);
            return;
        }
        string strategy = options.TryGetProperty("Strategy", out var st) && st.ValueKind == JsonValueKind.String ? st.GetString()! : "OpenIfFree";
        int maxDocs = options.TryGetProperty("MaxDocsPerBatch", out var md) && md.TryGetInt32(out int m) && m > 0 ? m : DefaultMaxDocsPerBatch;
        bool closeWhenNoDocsLeft = options.TryGetProperty("CloseWhenNoDocsLeft", out var cw) && cw.ValueKind == JsonValueKind.True;
        Queries.QueryRunner.SubscriptionMatcher matcher;
        try
        {
            matcher = manager.Compile(state.Query);
        }
        catch (DomainException e)
        {
            await SendStatusAsync("Invalid", e.Message, null, serverStopping).ConfigureAwait(false);
            return;
        }
        if (!await manager.RegisterAsync(this, strategy, token).ConfigureAwait(false))
        {
            await SendStatusAsync("InUse", $"Subscription '{Name}' is in use by another worker and the strategy is {strategy}.", null, serverStopping).ConfigureAwait(false);
            return;
        }
        var connectedAt = DateTime.UtcNow;
        try
        {
            await SendStatusAsync("Accepted", null, null, token).ConfigureAwait(false);
            long position = state.LastEtag; // documents after this etag are still to be read
            Task<JsonDocument?>? pendingRead = null; // the worker's next message, awaited across idle waits
            while (true)
            {
                var batch = ReadBatch(matcher, position, maxDocs);
                if (batch.Documents.Count == 0)
                {
                    position = batch.LastScanned; // passed over documents the query rejects; acknowledged with the next batch
                    if (batch.Scanned > 0)
                        continue;
                    if (closeWhenNoDocsLeft)
                    {
                        if (position > state.LastEtag)
                            await manager.AcknowledgeAsync(Name, position, connectedAt).ConfigureAwait(false);
                        await SendStatusAsync("Closed", $"No documents left for subscription '{Name}' (CloseWhenNoDocsLeft).", false, token).ConfigureAwait(false);
                        return;
                    }
                    // Idle: wait for a commit, but also for the worker (it sends nothing now, so a read ending means it left).
                    pendingRead ??= _reader.ReadAsync(token);
                    await Task.WhenAny(manager.WaitForWritesAsync(Heartbeat, token), pendingRead).ConfigureAwait(false);
                    token.ThrowIfCancellationRequested();
                    if (pendingRead.IsCompleted)
                    {
                        (await pendingRead.ConfigureAwait(false))?.Dispose();
                        return; // the worker closed its side (or spoke out of turn): it is done
                    }
                    await _stream.WriteAsync("\r\n"u8.ToArray(), token).ConfigureAwait(false);
                    continue;
                }
                await SendBatchAsync(batch, token).ConfigureAwait(false);
                var ackRead = pendingRead ?? _reader.ReadAsync(token);
                pendingRead = null;
                using (var reply = await ackRead.ConfigureAwait(false))
                {
                    if (reply == null)
                        return; // the worker left; the batch stays unacknowledged and comes again
                    string? type = reply.RootElement.TryGetProperty("Type", out var t) ? t.GetString() : null;
                    if (type != "Acknowledge")
                        return; // DisposedNotification, or anything else: the worker is done
                }
                if (!await manager.AcknowledgeAsync(Name, batch.LastScanned, connectedAt).ConfigureAwait(false))
                {
                    await SendStatusAsync("Closed", $"Subscription '{Name}' was deleted.", false, CancellationToken.None).ConfigureAwait(false);
                    return;
                }
                state.LastEtag = position = batch.LastScanned;
                await SendAsync(w =>
                {
                    w.WriteStartObject();
                    w.WriteString("Type", "Confirm");
                    w.WriteEndObject();
                }, token).ConfigureAwait(false);
            }
        }
        catch (OperationCanceledException) when (_closeReason is { } why && !serverStopping.IsCancellationRequested)
        {
            try
            {
                using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(5));
                await SendStatusAsync(why.Status, why.Message, why.Status == "Closed" ? why.CanReconnect : null, timeout.Token).ConfigureAwait(false);
            }
            catch (Exception e) when (e is IOException or OperationCanceledException or ObjectDisposedException)
            {
                // The worker is gone already.
            }
        }
        finally
        {
            manager.Unregister(this);
        }
    }

    private sealed record Batch(List<(byte[] Json, string Id)> Documents, long LastScanned, int Scanned, List<StoredDocument> Includes)
    {
        /// <summary>The batch's <c>{"Type":"CounterIncludes",..}</c> and <c>{"Type":"TimeSeriesIncludes",..}</c> messages (null: none asked for).</summary>
        public byte[]? ItemIncludes { get; init; }
    }

    /// <summary>The next documents after <paramref name="after"/> that the query accepts, from one snapshot.</summary>
    private Batch ReadBatch(Queries.QueryRunner.SubscriptionMatcher matcher, long after, int maxDocs)
    {
        using var tx = _db.Environment.ReadTransaction();
        using var projection = matcher.BeginBatch(tx);
        var documents = new List<(byte[], string)>();
        var includeIds = new List<string>();
        long last = after, bytes = 0;
        int scanned = 0;
        if (matcher.Revisions)
        {
            foreach (var (current, previous) in Revisions.RevisionsStore.ScanAfter(tx, after, _db.Documents))
            {
                scanned++;
                last = current.Etag;
                if ((matcher.Collection == null || string.Equals(current.Collection, matcher.Collection, StringComparison.OrdinalIgnoreCase)) && matcher.Matches(current))
                {
                    var item = RevisionItem(current, previous);
                    documents.Add((item, current.Id));
                    bytes += item.Length;
                }
                if (documents.Count >= maxDocs || bytes >= MaxBatchBytes || scanned >= MaxScannedPerBatch)
                    break;
            }
            return new Batch(documents, last, scanned, []);
        }
        foreach (var doc in _db.Documents.Scan(tx, matcher.Collection, after))
        {
            scanned++;
            last = doc.Etag;
            if (matcher.Apply(doc, projection, tx) is { } output)
            {
                documents.Add((output, doc.Id));
                bytes += output.Length;
                matcher.CollectIncludes(doc.Json, includeIds);
            }
            if (documents.Count >= maxDocs || bytes >= MaxBatchBytes || scanned >= MaxScannedPerBatch)
                break;
        }
        var includes = new List<StoredDocument>();
        foreach (string id in includeIds.Distinct(StringComparer.OrdinalIgnoreCase))
            if (_db.Documents.Get(tx, id) is { } included)
                includes.Add(included);
        return new Batch(documents, last, scanned, includes) { ItemIncludes = ItemIncludes(matcher, tx, documents) };
    }

    /// <summary>
    /// The counters and time series the subscription's query includes, for the batch's documents, as the messages sent
    /// before <c>EndOfBatch</c> (a session opened on the batch then has them without asking); null when it includes neither.
    /// </summary>
    private byte[]? ItemIncludes(Queries.QueryRunner.SubscriptionMatcher matcher, Storage.Transactions.Transaction tx, List<(byte[] Json, string Id)> documents)
    {
        var (counters, series) = matcher.NewItemIncludes();
        if ((counters == null && series == null) || documents.Count == 0)
            return null;
        foreach (var (_, id) in documents)
        {
            counters?.Add(tx, _db.Documents, id);
            if (series != null && _db.Documents.Get(tx, id) is { } doc)
                series.Add(tx, _db.Documents, doc);
        }
        var buffer = new ArrayBufferWriter<byte>(1024);
        if (counters != null)
        {
            using var w = new Utf8JsonWriter(buffer);
            w.WriteStartObject();
            w.WriteString("Type", "CounterIncludes");
            counters.Write(w, names: true);
            w.WriteEndObject();
        }
        if (series != null)
        {
            using var w = new Utf8JsonWriter(buffer);
            w.WriteStartObject();
            w.WriteString("Type", "TimeSeriesIncludes");
            series.Write(w);
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>A revisions subscription's item: <c>{"Current": revision, "Previous": the one before or null, "@metadata": {"@id", "@change-vector"}}</c>.</summary>
    private static byte[] RevisionItem(StoredDocument current, StoredDocument? previous)
    {
        var buffer = new ArrayBufferWriter<byte>(current.Json.Length + (previous?.Json.Length ?? 0) + 128);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WritePropertyName("Current");
            w.WriteRawValue(current.Json, skipInputValidation: true);
            w.WritePropertyName("Previous");
            if (previous == null)
                w.WriteNullValue();
            else
                w.WriteRawValue(previous.Json, skipInputValidation: true);
            w.WriteStartObject("@metadata");
            w.WriteString("@id", current.Id);
            w.WriteString("@change-vector", current.ChangeVector);
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    private async Task SendBatchAsync(Batch batch, CancellationToken cancellation)
    {
        var buffer = new ArrayBufferWriter<byte>(64 * 1024);
        foreach (var (json, _) in batch.Documents)
        {
            buffer.Write("{\"Type\":\"Data\",\"Data\":"u8);
            buffer.Write(json);
            buffer.Write("}"u8);
            if (buffer.WrittenCount > 256 * 1024)
            {
                await _stream.WriteAsync(buffer.WrittenMemory, cancellation).ConfigureAwait(false);
                buffer.ResetWrittenCount();
            }
        }
        if (batch.Includes.Count > 0)
        {
            buffer.Write("{\"Type\":\"Includes\",\"Includes\":{"u8);
            for (int i = 0; i < batch.Includes.Count; i++)
            {
                if (i > 0)
                    buffer.Write(","u8);
                buffer.Write(JsonSerializer.SerializeToUtf8Bytes(batch.Includes[i].Id));
                buffer.Write(":"u8);
                buffer.Write(batch.Includes[i].Json);
            }
            buffer.Write("}}"u8);
        }
        if (batch.ItemIncludes is { } items)
            buffer.Write(items);
        buffer.Write("{\"Type\":\"EndOfBatch\"}"u8);
        await _stream.WriteAsync(buffer.WrittenMemory, cancellation).ConfigureAwait(false);
        await _stream.FlushAsync(cancellation).ConfigureAwait(false);
    }
}
