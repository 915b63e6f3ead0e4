using System.Net.WebSockets;
using System.Threading.Channels;

namespace RavenLite.Server.Changes;

/// <summary>
/// One changes API WebSocket (<c>/databases/{db}/changes</c>): the client sends <c>{CommandId, Command, Param,
/// Params}</c> (<c>watch-docs</c>, <c>watch-doc</c>, <c>watch-prefix</c>, <c>watch-collection</c>, <c>watch-index</c>,
/// <c>watch-indexes</c>, <c>watch-operation</c>, <c>watch-operations</c>, the counter and time-series ones, and their
/// <c>unwatch-</c> twins), each confirmed with <c>{"CommandId": n, "Type": "Confirm"}</c>; matching changes are sent as
/// JSON arrays of notifications. At most <see cref="MaxQueued"/> notifications wait for a slow reader: more closes
/// the connection with a close frame saying so (writes never wait for it), and the client reconnects and subscribes
/// again. The queue holds comma-joined runs of notifications: a connection that wants every change of a batch queues
/// the feed's shared pieces, others a run of their own. Thread-safety: <see cref="Offer"/> and <see cref="Close"/>
/// from the feed's dispatcher, the rest on the request.
/// </summary>
public sealed class ChangesConnection : IChangeSubscriber, IDisposable
{
    /// <summary>Notifications that may wait for the socket before the connection is closed as too slow.</summary>
    public const int MaxQueued = 10_000;

    /// <summary>Largest client message (commands are small).</summary>
    private const int MaxMessageBytes = 64 * 1024;

    /// <summary>How long a connection closed for being slow may take to read what was queued and the close frame.</summary>
    private static readonly TimeSpan CloseGrace = TimeSpan.FromSeconds(5);

    /// <summary>
    /// Frames are sent at most this often per connection: under a stream of writes the notifications of several commits go
    /// in one frame (one send) instead of a frame per commit — with 100 connections that is the difference between
    /// hundreds of thousands of socket writes a second and a few thousand. An idle connection's first frame goes at once.
    /// </summary>
    private static readonly TimeSpan FrameInterval = TimeSpan.FromMilliseconds(20);

    /// <summary>Notifications sent in one frame at most (unless one queued run holds more).</summary>
    private const int MaxBatch = 1024;

    private readonly Channel<QueuedNotifications> _out = Channel.CreateUnbounded<QueuedNotifications>(new UnboundedChannelOptions { SingleReader = true });
    private int _queued;
    private readonly object _lock = new();
    private readonly HashSet<string> _docs = new(StringComparer.OrdinalIgnoreCase), _collections = new(StringComparer.OrdinalIgnoreCase),
        _indexes = new(StringComparer.OrdinalIgnoreCase), _counterNames = new(StringComparer.OrdinalIgnoreCase), _docCounters = new(StringComparer.OrdinalIgnoreCase),
        _docCounterNames = new(StringComparer.OrdinalIgnoreCase), _seriesNames = new(StringComparer.OrdinalIgnoreCase), _docSeries = new(StringComparer.OrdinalIgnoreCase),
        _docSeriesNames = new(StringComparer.OrdinalIgnoreCase);
    private readonly List<string> _prefixes = [];
    private readonly HashSet<long> _operations = [];
    private bool _allDocs, _allIndexes, _allOperations, _allCounters, _allSeries;
    private readonly CancellationTokenSource _kill = new();
    private volatile string? _closeReason;
    private volatile bool _overflowed;

    /// <inheritdoc />
    public void Offer(ChangeBatch batch)
    {
        lock (_lock)
        {
            if (WantsEvery(batch.Kinds))
            {
                foreach (var piece in batch.Joined())
                    Enqueue(piece);
                return;
            }
            ArrayBufferWriter<byte>? own = null;
            int n = 0;
            for (int i = 0; i < batch.Changes.Count; i++)
            {
                if (!Wants(batch.Changes[i]))
                    continue;
                own ??= new ArrayBufferWriter<byte>(1024);
                if (n++ > 0)
                    own.Write(","u8);
                own.Write(batch.Json(i));
            }
            if (own != null)
                Enqueue(new QueuedNotifications(own.WrittenMemory, n));
        }
    }

    /// <summary>True when the connection watches all changes of every kind in <paramref name="kinds"/> (one bit per <see cref="ChangeKind"/>).</summary>
    private bool WantsEvery(int kinds)
    {
        bool Every(ChangeKind kind, bool all) => (kinds & (1 << (int)kind)) == 0 || all;
        return Every(ChangeKind.Document, _allDocs) && Every(ChangeKind.Index, _allIndexes) && Every(ChangeKind.Operation, _allOperations)
            && Every(ChangeKind.Counter, _allCounters) && Every(ChangeKind.TimeSeries, _allSeries);
    }

    /// <summary>True when the connection asked for this change (under <see cref="_lock"/>).</summary>
    private bool Wants(ChangeEvent change)
    {
        return change.Kind switch
        {
            ChangeKind.Document => _allDocs || (change.Id != null && (_docs.Contains(change.Id) || _prefixes.Exists(p => change.Id.StartsWith(p, StringComparison.OrdinalIgnoreCase))))
                || (change.Collection != null && _collections.Contains(change.Collection)),
            ChangeKind.Index => _allIndexes || (change.Name != null && _indexes.Contains(change.Name)),
            ChangeKind.Operation => _allOperations || _operations.Contains(change.Value),
            ChangeKind.Counter => _allCounters || (change.Name != null && _counterNames.Contains(change.Name)) || (change.Id != null && _docCounters.Contains(change.Id))
                || (change.Id != null && change.Name != null && _docCounterNames.Contains(Pair(change.Id, change.Name))),
            ChangeKind.TimeSeries => _allSeries || (change.Name != null && _seriesNames.Contains(change.Name)) || (change.Id != null && _docSeries.Contains(change.Id))
                || (change.Id != null && change.Name != null && _docSeriesNames.Contains(Pair(change.Id, change.Name))),
            _ => false,
        };
    }

    private static string Pair(string id, string name) => id + "\u0000" + name;

    /// <summary>Queues notifications, or closes the connection as too slow when more than <see cref="MaxQueued"/> would wait.</summary>
    private void Enqueue(QueuedNotifications notifications)
    {
        if (Interlocked.Add(ref _queued, notifications.Count) <= MaxQueued)
        {
            _out.Writer.TryWrite(notifications); // false only once the connection is ending
            return;
        }
        if (_closeReason == null)
        {
            _overflowed = true;
            _closeReason = $"This connection read too slowly: more than {MaxQueued} changes waited for it. Reconnect and subscribe again.";
            try
            {
                _kill.CancelAfter(CloseGrace); // a reader that does not read the close frame either is cut off
            }
            catch (ObjectDisposedException)
            {
                // The connection has ended already.
            }
        }
        _out.Writer.TryComplete();
    }

    /// <inheritdoc />
    public void Close(string reason)
    {
        _closeReason ??= reason;
        _out.Writer.TryComplete();
    }

    /// <summary>True when the connection was closed because its reader fell behind.</summary>
    public bool Overflowed => _overflowed;

    /// <summary>Serves the socket until either side ends it.</summary>
    public async Task RunAsync(WebSocket socket, CancellationToken cancellation)
    {
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellation, _kill.Token);
        var sending = SendAsync(socket, stop.Token);
        var receiving = ReceiveAsync(socket, stop.Token);
        await Task.WhenAny(sending, receiving).ConfigureAwait(false);
        _out.Writer.TryComplete();
        try
        {
            await sending.ConfigureAwait(false); // sends what is queued, then the close frame
        }
        catch (Exception e) when (e is WebSocketException or OperationCanceledException or ObjectDisposedException)
        {
            // The peer is gone.
        }
        await stop.CancelAsync().ConfigureAwait(false);
        try
        {
            await receiving.ConfigureAwait(false);
        }
        catch (Exception e) when (e is WebSocketException or OperationCanceledException or ObjectDisposedException)
        {
            // The peer is gone.
        }
    }

    /// <inheritdoc />
    public void Dispose() => _kill.Dispose();

    private async Task SendAsync(WebSocket socket, CancellationToken cancellation)
    {
        var reader = _out.Reader;
        var frame = new ArrayBufferWriter<byte>(16 * 1024);
        long lastSend = 0;
        while (await reader.WaitToReadAsync(cancellation).ConfigureAwait(false))
        {
            var sinceLast = System.Diagnostics.Stopwatch.GetElapsedTime(lastSend);
            if (lastSend != 0 && sinceLast < FrameInterval && Volatile.Read(ref _queued) < MaxBatch)
                await Task.Delay(FrameInterval - sinceLast, cancellation).ConfigureAwait(false);
            frame.ResetWrittenCount();
            frame.Write("["u8);
            int n = 0;
            while (reader.TryPeek(out var run) && (n == 0 || n + run.Count <= MaxBatch) && reader.TryRead(out run))
            {
                if (n > 0)
                    frame.Write(","u8);
                frame.Write(run.Bytes.Span);
                n += run.Count;
                Interlocked.Add(ref _queued, -run.Count);
            }
            frame.Write("]"u8);
            await socket.SendAsync(frame.WrittenMemory, WebSocketMessageType.Text, endOfMessage: true, cancellation).ConfigureAwait(false);
            lastSend = System.Diagnostics.Stopwatch.GetTimestamp();
        }
        if (socket.State is WebSocketState.Open or WebSocketState.CloseReceived)
        {
            string reason = _closeReason ?? "";
            if (Encoding.UTF8.GetByteCount(reason) > 120)
                reason = reason[..60];
            await socket.CloseOutputAsync(_overflowed ? WebSocketCloseStatus.PolicyViolation : WebSocketCloseStatus.NormalClosure, reason, cancellation).ConfigureAwait(false);
        }
    }

    private async Task ReceiveAsync(WebSocket socket, CancellationToken cancellation)
    {
        var buffer = new byte[4096];
        var message = new ArrayBufferWriter<byte>(1024);
        while (socket.State == WebSocketState.Open)
        {
            var result = await socket.ReceiveAsync(buffer, cancellation).ConfigureAwait(false);
            if (result.MessageType == WebSocketMessageType.Close)
                return;
            if (message.WrittenCount + result.Count > MaxMessageBytes)
            {
                Close($"A changes command is larger than {MaxMessageBytes} bytes.");
                return;
            }
            message.Write(buffer.AsSpan(0, result.Count));
            if (!result.EndOfMessage)
                continue;
            Handle(message.WrittenMemory);
            message.ResetWrittenCount();
        }
    }

    /// <summary>Applies one command and queues its confirmation (or an error notification).</summary>
    private void Handle(ReadOnlyMemory<byte> text)
    {
        long commandId = 0;
        string? error = null;
        try
        {
            using var doc = JsonDocument.Parse(text);
            var root = doc.RootElement;
            if (root.ValueKind != JsonValueKind.Object || !root.TryGetProperty("Command", out var c) || c.ValueKind != JsonValueKind.String)
                throw new FormatException("A changes command is {\"CommandId\": n, \"Command\": \"watch-...\", \"Param\": ...}.");
            commandId = root.TryGetProperty("CommandId", out var id) && id.TryGetInt64(out long n) ? n : 0;
            string? param = root.TryGetProperty("Param", out var p) ? p.ValueKind switch
            {
                JsonValueKind.String => p.GetString(),
                JsonValueKind.Number => p.GetRawText(),
                _ => null,
            } : null;
            var parameters = root.TryGetProperty("Params", out var ps) && ps.ValueKind == JsonValueKind.Array
                ? ps.EnumerateArray().Select(x => x.ValueKind == JsonValueKind.String ? x.GetString() : x.GetRawText()).ToList() : [];
            Apply(c.GetString()!, param, parameters);
        }
        catch (Exception e) when (e is JsonException or FormatException or ArgumentException)
        {
            error = e.Message;
        }
        var buffer = new ArrayBufferWriter<byte>(128);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            if (error == null)
            {
                w.WriteNumber("CommandId", commandId);
                w.WriteString("Type", "Confirm");
            }
            else
            {
                w.WriteString("Type", "Error");
                w.WriteString("Exception", error);
            }
            w.WriteEndObject();
        }
        Enqueue(new QueuedNotifications(buffer.WrittenMemory, 1));
    }

    private void Apply(string command, string? param, List<string?> parameters)
    {
        bool watch = command.StartsWith("watch-", StringComparison.Ordinal);
        if (!watch && !command.StartsWith("unwatch-", StringComparison.Ordinal))
            throw new ArgumentException($"Unknown changes command '{command}'.");
        string what = command[(watch ? 6 : 8)..];
        string Required() => string.IsNullOrEmpty(param) ? throw new ArgumentException($"'{command}' needs a Param.") : param;
        string PairOf() => parameters is [{ Length: > 0 } a, { Length: > 0 } b] ? Pair(a, b) : throw new ArgumentException($"'{command}' needs Params [documentId, name].");
        void Toggle(HashSet<string> set, string key)
        {
            if (watch)
                set.Add(key);
            else
                set.Remove(key);
        }
        lock (_lock)
        {
            switch (what)
            {
                case "docs": _allDocs = watch; break;
                case "doc": Toggle(_docs, Required()); break;
                case "prefix":
                    if (watch)
                        _prefixes.Add(Required());
                    else
                        _prefixes.RemoveAll(x => string.Equals(x, param, StringComparison.OrdinalIgnoreCase));
                    break;
                case "collection": Toggle(_collections, Required()); break;
                case "indexes": _allIndexes = watch; break;
                case "index": Toggle(_indexes, Required()); break;
                case "operations": _allOperations = watch; break;
                case "operation":
                    if (!long.TryParse(Required(), System.Globalization.NumberStyles.Integer, System.Globalization.CultureInfo.InvariantCulture, out long op))
                        throw new ArgumentException($"'{command}' needs an operation id.");
                    if (watch)
                        _operations.Add(op);
                    else
                        _operations.Remove(op);
                    break;
                case "counters": _allCounters = watch; break;
                case "counter": Toggle(_counterNames, Required()); break;
                case "document-counters": Toggle(_docCounters, Required()); break;
                case "document-counter": Toggle(_docCounterNames, PairOf()); break;
                case "all-timeseries": _allSeries = watch; break;
                case "timeseries": Toggle(_seriesNames, Required()); break;
                case "all-document-timeseries": Toggle(_docSeries, Required()); break;
                case "document-timeseries": Toggle(_docSeriesNames, PairOf()); break;
                case "topology-change": break; // one node: the topology never changes
                default: throw new ArgumentException($"Unknown changes command '{command}'.");
            }
        }
    }
}
