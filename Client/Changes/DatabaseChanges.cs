using System.Collections.Concurrent;
using System.Net.WebSockets;
using System.Text;
using System.Text.Json.Nodes;

namespace RavenLite.Client.Changes;

/// <summary>A document put or deleted.</summary>
public sealed record DocumentChange(string Type, string Id, string? CollectionName, string? ChangeVector);

/// <summary>An index added, removed, replaced, or having indexed a batch.</summary>
public sealed record IndexChange(string Type, string Name);

/// <summary>A counter put, incremented or deleted (<see cref="Value"/>: its total after the change).</summary>
public sealed record CounterChange(string Type, string Name, long Value, string DocumentId, string? CollectionName, string? ChangeVector);

/// <summary>Time-series entries appended (Put), deleted, or both (Mixed) between <see cref="From"/> and <see cref="To"/>.</summary>
public sealed record TimeSeriesChange(string Type, string Name, DateTime From, DateTime To, string DocumentId, string? CollectionName, string? ChangeVector);

/// <summary>An operation's state (<c>{Status, Result, Progress}</c> as <c>/operations/state</c> gives it).</summary>
public sealed record OperationStatusChange(long OperationId, JsonObject State);

/// <summary>Changes of one kind, observed: <see cref="IObservable{T}.Subscribe"/> adds an observer (dispose it to stop).</summary>
public interface IChangesObservable<out T> : IObservable<T>
{
    /// <summary>Completes once the server confirmed the subscription (changes after this point are delivered).</summary>
    Task EnsureSubscribedNow();
}

/// <summary>
/// The changes API (<c>store.Changes()</c>): one WebSocket to <c>/databases/{db}/changes</c> carrying every subscription
/// of this object. When the connection drops (or the server closes it for reading too slowly) it reconnects after a
/// second — in a cluster to the database's next node, as RavenDB's clients fail over — and subscribes again to
/// everything still observed; changes made while disconnected are not replayed.
/// </summary>
public sealed class DatabaseChanges : IDisposable
{
    private readonly Func<IReadOnlyList<Uri>> _nodes;
    private readonly string _database;
    private int _node; // which of the database's nodes to connect to; a failed connection moves on to the next
    private readonly CancellationTokenSource _stop = new();
    private readonly SemaphoreSlim _sendLock = new(1, 1);
    private readonly ConcurrentDictionary<long, TaskCompletionSource> _confirmations = new();
    private readonly ConcurrentDictionary<string, Subscription> _subscriptions = new(StringComparer.OrdinalIgnoreCase);
    private readonly TaskCompletionSource _firstConnection = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private ClientWebSocket? _socket;
    private long _commandId;
    private readonly Task _worker;

    /// <summary>Connects to the first of <paramref name="nodes"/> (the database's nodes, read afresh at each connection) and, when a connection fails, to the next.</summary>
    internal DatabaseChanges(Func<IReadOnlyList<Uri>> nodes, string database)
    {
        _nodes = nodes;
        _database = database;
        _worker = Task.Run(RunAsync);
    }

    private Uri ChangesUri(Uri server) =>
        new UriBuilder(server) { Scheme = server.Scheme == "https" ? "wss" : "ws", Path = "/databases/" + Uri.EscapeDataString(_database) + "/changes" }.Uri;

    /// <summary>Raised with a connection error or an error notification from the server.</summary>
    public event Action<Exception>? OnError;

    /// <summary>Completes once connected (faults if the first connection fails, for example a missing database).</summary>
    public Task EnsureConnectedNow() => _firstConnection.Task;

    /// <summary>Every document change.</summary>
    public IChangesObservable<DocumentChange> ForAllDocuments() => Observe<DocumentChange>("all-docs", "docs", null, null);

    /// <summary>Changes of one document.</summary>
    public IChangesObservable<DocumentChange> ForDocument(string id) => Observe<DocumentChange>("docs/" + id, "doc", Required(id), null);

    /// <summary>Changes of documents whose id starts with <paramref name="prefix"/>.</summary>
    public IChangesObservable<DocumentChange> ForDocumentsStartingWith(string prefix) => Observe<DocumentChange>("prefixes/" + prefix, "prefix", Required(prefix), null);

    /// <summary>Changes of a collection's documents.</summary>
    public IChangesObservable<DocumentChange> ForDocumentsInCollection(string collection) => Observe<DocumentChange>("collections/" + collection, "collection", Required(collection), null);

    /// <summary>Every index change.</summary>
    public IChangesObservable<IndexChange> ForAllIndexes() => Observe<IndexChange>("all-indexes", "indexes", null, null);

    /// <summary>Changes of one index.</summary>
    public IChangesObservable<IndexChange> ForIndex(string name) => Observe<IndexChange>("indexes/" + name, "index", Required(name), null);

    /// <summary>Every operation's final state.</summary>
    public IChangesObservable<OperationStatusChange> ForAllOperations() => Observe<OperationStatusChange>("all-operations", "operations", null, null);

    /// <summary>One operation's final state.</summary>
    public IChangesObservable<OperationStatusChange> ForOperationId(long id) =>
        Observe<OperationStatusChange>("operations/" + id, "operation", id.ToString(System.Globalization.CultureInfo.InvariantCulture), null);

    /// <summary>Every counter change.</summary>
    public IChangesObservable<CounterChange> ForAllCounters() => Observe<CounterChange>("all-counters", "counters", null, null);

    /// <summary>Changes of counters with this name, of any document.</summary>
    public IChangesObservable<CounterChange> ForCounter(string name) => Observe<CounterChange>("counter/" + name, "counter", Required(name), null);

    /// <summary>Changes of one document's counters.</summary>
    public IChangesObservable<CounterChange> ForCountersOfDocument(string id) => Observe<CounterChange>("document/" + id + "/counter", "document-counters", Required(id), null);

    /// <summary>Every time-series change.</summary>
    public IChangesObservable<TimeSeriesChange> ForAllTimeSeries() => Observe<TimeSeriesChange>("all-timeseries", "all-timeseries", null, null);

    /// <summary>Changes of one document's time series.</summary>
    public IChangesObservable<TimeSeriesChange> ForTimeSeriesOfDocument(string id) => Observe<TimeSeriesChange>("document/" + id + "/timeseries", "all-document-timeseries", Required(id), null);

    private static string Required(string value)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(value);
        return value;
    }

    private Subscription<T> Observe<T>(string key, string what, string? param, string[]? parameters)
    {
        ObjectDisposedException.ThrowIf(_stop.IsCancellationRequested, this);
        var subscription = (Subscription<T>)_subscriptions.GetOrAdd(key, _ => new Subscription<T>(this, key, what, param, parameters));
        return subscription;
    }

    /// <summary>Sends one command and waits for its confirmation (fails when disconnected meanwhile).</summary>
    private async Task SendAsync(string command, string? param, string[]? parameters)
    {
        var socket = _socket;
        if (socket is not { State: WebSocketState.Open })
            return; // sent again on (re)connection
        long id = Interlocked.Increment(ref _commandId);
        var confirmed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        _confirmations[id] = confirmed;
        var body = new JsonObject { ["CommandId"] = id, ["Command"] = command, ["Param"] = param };
        if (parameters != null)
            body["Params"] = new JsonArray(parameters.Select(p => (JsonNode?)JsonValue.Create(p)).ToArray());
        await _sendLock.WaitAsync(_stop.Token).ConfigureAwait(false);
        try
        {
            await socket.SendAsync(Encoding.UTF8.GetBytes(body.ToJsonString()), WebSocketMessageType.Text, true, _stop.Token).ConfigureAwait(false);
        }
        finally
        {
            _sendLock.Release();
        }
        await confirmed.Task.WaitAsync(TimeSpan.FromSeconds(15), _stop.Token).ConfigureAwait(false);
    }

    private async Task RunAsync()
    {
        int failedBeforeFirst = 0;
        while (!_stop.IsCancellationRequested)
        {
            var socket = new ClientWebSocket();
            var nodes = _nodes();
            var uri = ChangesUri(nodes[(int)((uint)_node % (uint)nodes.Count)]);
            try
            {
                await socket.ConnectAsync(uri, _stop.Token).ConfigureAwait(false);
                _socket = socket;
                var resubscribe = _subscriptions.Values.Select(s => s.SubscribeAsync()).ToList();
                _firstConnection.TrySetResult();
                _ = Task.WhenAll(resubscribe).ContinueWith(t => OnError?.Invoke(t.Exception!.GetBaseException()), CancellationToken.None, TaskContinuationOptions.OnlyOnFaulted, TaskScheduler.Default);
                await ReceiveAsync(socket).ConfigureAwait(false);
            }
            catch (Exception e) when (e is WebSocketException or IOException or HttpRequestException || (e is OperationCanceledException && !_stop.IsCancellationRequested))
            {
                _node++; // in a cluster the next node serves the database's changes too
                if (!_firstConnection.Task.IsCompleted && ++failedBeforeFirst >= nodes.Count)
                {
                    _firstConnection.TrySetException(new Exceptions.RavenException($"Could not connect the changes API at {uri}: {e.Message}", e));
                    return;
                }
                if (_firstConnection.Task.IsCompleted)
                    OnError?.Invoke(e);
            }
            catch (OperationCanceledException)
            {
                return;
            }
            finally
            {
                _socket = null;
                foreach (var c in _confirmations.Values)
                    c.TrySetCanceled();
                _confirmations.Clear();
                socket.Dispose();
            }
            try
            {
                await Task.Delay(TimeSpan.FromSeconds(1), _stop.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                return;
            }
        }
    }

    private async Task ReceiveAsync(ClientWebSocket socket)
    {
        var buffer = new byte[64 * 1024];
        using var frame = new MemoryStream();
        while (true)
        {
            frame.SetLength(0);
            WebSocketReceiveResult r;
            do
            {
                r = await socket.ReceiveAsync(buffer, _stop.Token).ConfigureAwait(false);
                if (r.MessageType == WebSocketMessageType.Close)
                {
                    if (socket.CloseStatus != WebSocketCloseStatus.NormalClosure)
                        OnError?.Invoke(new Exceptions.RavenException("The server closed the changes connection: " + socket.CloseStatusDescription));
                    return;
                }
                frame.Write(buffer, 0, r.Count);
            }
            while (!r.EndOfMessage);
            var root = JsonNode.Parse(frame.ToArray());
            foreach (var message in root is JsonArray a ? a.OfType<JsonObject>() : root is JsonObject o ? [o] : [])
                Dispatch(message);
        }
    }

    private void Dispatch(JsonObject message)
    {
        string? type = (string?)message["Type"];
        var v = message["Value"] as JsonObject;
        switch (type)
        {
            case "Confirm":
                if (_confirmations.TryRemove((long?)message["CommandId"] ?? 0, out var c))
                    c.TrySetResult();
                return;
            case "Error":
                OnError?.Invoke(new Exceptions.RavenException("Changes API: " + (string?)message["Exception"]));
                return;
            case "DocumentChange" when v != null:
                Notify(new DocumentChange((string)v["Type"]!, (string)v["Id"]!, (string?)v["CollectionName"], (string?)v["ChangeVector"]));
                return;
            case "IndexChange" when v != null:
                Notify(new IndexChange((string)v["Type"]!, (string)v["Name"]!));
                return;
            case "CounterChange" when v != null:
                Notify(new CounterChange((string)v["Type"]!, (string)v["Name"]!, (long?)v["Value"] ?? 0, (string)v["DocumentId"]!, (string?)v["CollectionName"], (string?)v["ChangeVector"]));
                return;
            case "TimeSeriesChange" when v != null:
                Notify(new TimeSeriesChange((string)v["Type"]!, (string)v["Name"]!, Date(v["From"], DateTime.MinValue), Date(v["To"], DateTime.MaxValue), (string)v["DocumentId"]!, (string?)v["CollectionName"], (string?)v["ChangeVector"]));
                return;
            case "OperationStatusChange" when v != null:
                Notify(new OperationStatusChange((long?)v["OperationId"] ?? 0, v["State"] as JsonObject ?? []));
                return;
        }
    }

    /// <summary>A date of a notification; null is an open end (a whole series deleted), given as <paramref name="open"/>.</summary>
    private static DateTime Date(JsonNode? n, DateTime open) => n is null ? open
        : DateTime.SpecifyKind(DateTime.Parse((string)n!, System.Globalization.CultureInfo.InvariantCulture, System.Globalization.DateTimeStyles.AdjustToUniversal), DateTimeKind.Utc);

    private void Notify<T>(T change)
    {
        foreach (var s in _subscriptions.Values)
            if (s is Subscription<T> typed && typed.Matches(change))
                typed.Publish(change);
    }

    /// <inheritdoc />
    public void Dispose()
    {
        if (_stop.IsCancellationRequested)
            return;
        _stop.Cancel();
        try
        {
            _socket?.Abort();
            _worker.Wait(TimeSpan.FromSeconds(5));
        }
        catch (AggregateException)
        {
            // Ending anyway.
        }
        foreach (var s in _subscriptions.Values)
            s.Complete();
        _stop.Dispose();
        _sendLock.Dispose();
    }

    private abstract class Subscription(DatabaseChanges owner, string key, string what, string? param, string[]? parameters)
    {
        protected DatabaseChanges Owner { get; } = owner;

        protected string Key { get; } = key;

        protected string What { get; } = what;

        protected string? Param { get; } = param;

        public Task SubscribeAsync() => Owner.SendAsync("watch-" + What, Param, parameters);

        public Task UnsubscribeAsync() => Owner.SendAsync("unwatch-" + What, Param, parameters);

        public abstract void Complete();
    }

    private sealed class Subscription<T>(DatabaseChanges owner, string key, string what, string? param, string[]? parameters)
        : Subscription(owner, key, what, param, parameters), IChangesObservable<T>
    {
        private readonly object _lock = new();
        private IObserver<T>[] _observers = [];
        private Task? _subscribed;

        public bool Matches(T change) => change switch
        {
            DocumentChange d => What switch
            {
                "doc" => string.Equals(d.Id, Param, StringComparison.OrdinalIgnoreCase),
                "prefix" => d.Id.StartsWith(Param!, StringComparison.OrdinalIgnoreCase),
                "collection" => string.Equals(d.CollectionName, Param, StringComparison.OrdinalIgnoreCase),
                _ => true,
            },
            IndexChange i => What != "index" || string.Equals(i.Name, Param, StringComparison.OrdinalIgnoreCase),
            OperationStatusChange o => What != "operation" || o.OperationId.ToString(System.Globalization.CultureInfo.InvariantCulture) == Param,
            CounterChange c => What switch
            {
                "counter" => string.Equals(c.Name, Param, StringComparison.OrdinalIgnoreCase),
                "document-counters" => string.Equals(c.DocumentId, Param, StringComparison.OrdinalIgnoreCase),
                _ => true,
            },
            TimeSeriesChange t => What != "all-document-timeseries" || string.Equals(t.DocumentId, Param, StringComparison.OrdinalIgnoreCase),
            _ => false,
        };

        public void Publish(T change)
        {
            foreach (var o in Volatile.Read(ref _observers))
                o.OnNext(change);
        }

        public Task EnsureSubscribedNow()
        {
            lock (_lock)
                return _subscribed ??= Subscribed();
        }

        private async Task Subscribed()
        {
            await Owner.EnsureConnectedNow().ConfigureAwait(false);
            await SubscribeAsync().ConfigureAwait(false);
        }

        public IDisposable Subscribe(IObserver<T> observer)
        {
            ArgumentNullException.ThrowIfNull(observer);
            lock (_lock)
                _observers = [.. _observers, observer];
            _ = EnsureSubscribedNow();
            return new Unsubscriber(() =>
            {
                bool last;
                lock (_lock)
                {
                    _observers = _observers.Where(o => !ReferenceEquals(o, observer)).ToArray();
                    last = _observers.Length == 0;
                    if (last)
                        _subscribed = null;
                }
                if (last && Owner._subscriptions.TryRemove(new KeyValuePair<string, Subscription>(Key, this)))
                    _ = UnsubscribeAsync().ContinueWith(_ => { }, TaskScheduler.Default);
            });
        }

        public override void Complete()
        {
            foreach (var o in Volatile.Read(ref _observers))
                o.OnCompleted();
        }
    }

    private sealed class Unsubscriber(Action dispose) : IDisposable
    {
        private Action? _dispose = dispose;

        public void Dispose() => Interlocked.Exchange(ref _dispose, null)?.Invoke();
    }
}

/// <summary>Observer helpers: <c>changes.ForDocument(id).Subscribe(change => ...)</c> without an observer class.</summary>
public static class ChangesObservableExtensions
{
    /// <summary>Calls <paramref name="onNext"/> with each change.</summary>
    public static IDisposable Subscribe<T>(this IChangesObservable<T> observable, Action<T> onNext)
    {
        ArgumentNullException.ThrowIfNull(observable);
        return observable.Subscribe(new ActionObserver<T>(onNext));
    }

    private sealed class ActionObserver<T>(Action<T> onNext) : IObserver<T>
    {
        public void OnCompleted()
        {
        }

        public void OnError(Exception error)
        {
        }

        public void OnNext(T value) => onNext(value);
    }
}
