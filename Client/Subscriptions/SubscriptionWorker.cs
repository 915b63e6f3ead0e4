using System.Buffers;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using RavenLite.Client.Exceptions;
using RavenLite.Client.Http;

namespace RavenLite.Client.Subscriptions;

/// <summary>How a worker connects (RavenDB's <c>SubscriptionWorkerOptions</c>).</summary>
public sealed class SubscriptionWorkerOptions(string subscriptionName)
{
    /// <summary>The subscription.</summary>
    public string SubscriptionName { get; } = subscriptionName;

    /// <summary><c>OpenIfFree</c> (default: fail when another worker is connected), <c>TakeOver</c>, or <c>WaitForFree</c>.</summary>
    public string Strategy { get; set; } = "OpenIfFree";

    /// <summary>Documents per batch at most (default 4096).</summary>
    public int MaxDocsPerBatch { get; set; } = 4096;

    /// <summary>End <c>Run</c> once every document was processed.</summary>
    public bool CloseWhenNoDocsLeft { get; set; }

    /// <summary>Wait before reconnecting after a connection failure (default 5 s).</summary>
    public TimeSpan TimeToWaitBeforeConnectionRetry { get; set; } = TimeSpan.FromSeconds(5);
}

/// <summary>One document of a batch.</summary>
/// <param name="Id">The document id.</param>
/// <param name="ChangeVector">Its change vector when sent.</param>
/// <param name="Result">The document (or projection) as <typeparamref name="T"/>.</param>
/// <param name="RawResult">The JSON sent, with its <c>@metadata</c>.</param>
public sealed record SubscriptionItem<T>(string Id, string ChangeVector, T Result, JsonObject RawResult);

/// <summary>A batch handed to the worker's handler; acknowledged when the handler returns.</summary>
/// <param name="Items">The documents.</param>
/// <param name="Includes">Documents the query's <c>include</c> named, by id.</param>
public sealed record SubscriptionBatch<T>(IReadOnlyList<SubscriptionItem<T>> Items, IReadOnlyDictionary<string, JsonObject> Includes);

/// <summary>
/// A data subscription worker: connects to the server's TCP port (RavenDB's protocol), hands each batch to the handler
/// and acknowledges it when the handler returns, so a batch whose handler did not finish (a crash of either side) comes
/// again. Reconnects after connection failures; ends (the <c>Run</c> task faults) when the subscription does not
/// exist, is in use, is closed for good, or the handler throws.
/// </summary>
public sealed class SubscriptionWorker<T> : IAsyncDisposable
{
    private readonly DocumentStore _store;
    private readonly string _database;
    private readonly SubscriptionWorkerOptions _options;
    private readonly CancellationTokenSource _stop = new();
    private TcpClient? _client;
    private Task? _running;

    internal SubscriptionWorker(DocumentStore store, string database, SubscriptionWorkerOptions options)
    {
        _store = store;
        _database = database;
        _options = options;
    }

    /// <summary>Raised when a connection is established (and after each reconnection).</summary>
    public event Action? OnEstablishedSubscriptionConnection;

    /// <summary>Raised when the connection failed and will be retried.</summary>
    public event Action<Exception>? OnConnectionRetry;

    /// <summary>Starts processing with a synchronous handler.</summary>
    public Task Run(Action<SubscriptionBatch<T>> handler) => Run(batch =>
    {
        handler(batch);
        return Task.CompletedTask;
    });

    /// <summary>Starts processing; the task ends when the worker is disposed (or faults, see the class summary).</summary>
    public Task Run(Func<SubscriptionBatch<T>, Task> handler)
    {
        ArgumentNullException.ThrowIfNull(handler);
        if (_running != null)
            throw new InvalidOperationException("The worker is already running.");
        return _running = Task.Run(() => LoopAsync(handler));
    }

    private async Task LoopAsync(Func<SubscriptionBatch<T>, Task> handler)
    {
        while (!_stop.IsCancellationRequested)
        {
            try
            {
                await ProcessAsync(handler).ConfigureAwait(false);
                return; // closed normally (CloseWhenNoDocsLeft)
            }
            catch (Exception) when (_stop.IsCancellationRequested)
            {
                return;
            }
            catch (Exception e) when (e is IOException or SocketException or HttpRequestException || e is SubscriptionClosedException { CanReconnect: true })
            {
                OnConnectionRetry?.Invoke(e);
                try
                {
                    await Task.Delay(_options.TimeToWaitBeforeConnectionRetry, _stop.Token).ConfigureAwait(false);
                }
                catch (OperationCanceledException)
                {
                    return;
                }
            }
        }
    }

    private async Task<string> TcpUrlAsync()
    {
        string text = await _store.Executor.Http.GetStringAsync(new Uri("/info/tcp?tag=Subscription", UriKind.Relative), _stop.Token).ConfigureAwait(false);
        var info = JsonNode.Parse(text) as JsonObject;
        return (string?)info?["Url"] ?? throw new RavenException("The server did not say where its TCP port is (/info/tcp).");
    }

    private async Task ProcessAsync(Func<SubscriptionBatch<T>, Task> handler)
    {
        var url = new Uri(await TcpUrlAsync().ConfigureAwait(false));
        using var client = new TcpClient { NoDelay = true };
        _client = client;
        await client.ConnectAsync(url.Host.Trim('[', ']'), url.Port, _stop.Token).ConfigureAwait(false);
        var stream = client.GetStream();
        var reader = new MessageReader(stream);
        await WriteAsync(stream, new JsonObject { ["DatabaseName"] = _database, ["Operation"] = "Subscription", ["OperationVersion"] = 53_000 }).ConfigureAwait(false);
        var header = await reader.ReadAsync(_stop.Token).ConfigureAwait(false) ?? throw new IOException("The server closed the connection during the negotiation.");
        if ((string?)header["Status"] != "Ok")
            throw new RavenException($"The server refused the subscription protocol: {(string?)header["Message"]}");
        await WriteAsync(stream, new JsonObject
        {
            ["SubscriptionName"] = _options.SubscriptionName,
            ["Strategy"] = _options.Strategy,
            ["MaxDocsPerBatch"] = _options.MaxDocsPerBatch,
            ["CloseWhenNoDocsLeft"] = _options.CloseWhenNoDocsLeft,
        }).ConfigureAwait(false);
        var status = await reader.ReadAsync(_stop.Token).ConfigureAwait(false) ?? throw new IOException("The server closed the connection before accepting the worker.");
        ThrowUnlessAccepted(status);
        OnEstablishedSubscriptionConnection?.Invoke();
        var items = new List<SubscriptionItem<T>>();
        var includes = new Dictionary<string, JsonObject>(StringComparer.OrdinalIgnoreCase);
        while (true)
        {
            var message = await reader.ReadAsync(_stop.Token).ConfigureAwait(false) ?? throw new IOException("The server closed the subscription connection.");
            switch ((string?)message["Type"])
            {
                case "Data":
                    var data = message["Data"] as JsonObject ?? throw new RavenException("A subscription item without Data.");
                    var metadata = data["@metadata"] as JsonObject ?? [];
                    items.Add(new SubscriptionItem<T>((string?)metadata["@id"] ?? "", (string?)metadata["@change-vector"] ?? "", ToResult(data, metadata), data));
                    break;
                case "Includes":
                    foreach (var (id, doc) in message["Includes"] as JsonObject ?? [])
                        if (doc is JsonObject d)
                            includes[id] = d;
                    break;
                case "EndOfBatch":
                    await handler(new SubscriptionBatch<T>(items.ToList(), new Dictionary<string, JsonObject>(includes))).ConfigureAwait(false);
                    await WriteAsync(stream, new JsonObject { ["ChangeVector"] = items.Count > 0 ? items[^1].ChangeVector : null, ["Type"] = "Acknowledge" }).ConfigureAwait(false);
                    items.Clear();
                    includes.Clear();
                    break;
                case "Confirm":
                    break;
                case "ConnectionStatus":
                    ThrowUnlessAccepted(message, closedNormally: _options.CloseWhenNoDocsLeft);
                    if (_options.CloseWhenNoDocsLeft && (string?)message["Status"] == "Closed")
                        return;
                    break;
                case "Error":
                    throw new RavenException("The subscription failed on the server: " + (string?)message["Exception"]);
                default:
                    throw new RavenException("Unexpected subscription message: " + message.ToJsonString());
            }
        }
    }

    private T ToResult(JsonObject data, JsonObject metadata)
    {
        var body = new JsonObject();
        foreach (var (k, v) in data)
            if (k != "@metadata")
                body[k] = v?.DeepClone();
        var result = body.Deserialize<T>(_store.Conventions.JsonSerializerOptions)!;
        if (result != null && (string?)metadata["@id"] is { } id)
            _store.Conventions.IdentityProperty(result.GetType())?.SetValue(result, id);
        return result!;
    }

    private void ThrowUnlessAccepted(JsonObject status, bool closedNormally = false)
    {
        string? type = (string?)status["Type"];
        string message = (string?)status["Message"] ?? (string?)status["Exception"] ?? "";
        if (type == "Error")
        {
            if (message.Contains("DatabaseDoesNotExistException", StringComparison.Ordinal))
                throw new DatabaseDoesNotExistException(message);
            throw new RavenException("The subscription failed on the server: " + message);
        }
        switch ((string?)status["Status"])
        {
            case "Accepted":
                return;
            case "NotFound":
                throw new SubscriptionDoesNotExistException(message);
            case "InUse":
                throw new SubscriptionInUseException(message);
            case "Invalid":
                throw new SubscriptionInvalidStateException(message);
            case "Closed" when closedNormally:
                return;
            case "Closed":
                throw new SubscriptionClosedException(message) { CanReconnect = (bool?)status["Data"]?["CanReconnect"] ?? false };
            default:
                throw new RavenException($"Subscription '{_options.SubscriptionName}' could not be opened: {status.ToJsonString()}");
        }
    }

    private async Task WriteAsync(NetworkStream stream, JsonObject message) =>
        await stream.WriteAsync(Encoding.UTF8.GetBytes(message.ToJsonString()), _stop.Token).ConfigureAwait(false);

    /// <summary>Stops the worker (an unacknowledged batch comes again to the next worker).</summary>
    public async ValueTask DisposeAsync()
    {
        if (_stop.IsCancellationRequested)
            return;
        await _stop.CancelAsync().ConfigureAwait(false);
        _client?.Dispose();
        if (_running != null)
        {
            try
            {
                await _running.ConfigureAwait(false);
            }
            catch (RavenException)
            {
                // Its failure was the Run task's to report.
            }
        }
        _stop.Dispose();
    }

    /// <summary>JSON objects back to back on the stream (whitespace between them skipped).</summary>
    private sealed class MessageReader(Stream stream)
    {
        private readonly ArrayBufferWriter<byte> _pending = new(16 * 1024);
        private readonly byte[] _chunk = new byte[16 * 1024];
        private int _offset;

        public async Task<JsonObject?> ReadAsync(CancellationToken cancellation)
        {
            while (true)
            {
                var span = _pending.WrittenSpan[_offset..];
                int skip = 0;
                while (skip < span.Length && span[skip] is (byte)' ' or (byte)'\r' or (byte)'\n' or (byte)'\t')
                    skip++;
                _offset += skip;
                span = span[skip..];
                if (span.Length > 0)
                {
                    var reader = new Utf8JsonReader(span, isFinalBlock: false, default);
                    if (reader.Read() && reader.TrySkip())
                    {
                        int length = (int)reader.BytesConsumed;
                        var node = JsonNode.Parse(span[..length]) as JsonObject;
                        _offset += length;
                        return node ?? throw new RavenException("A subscription message is not a JSON object.");
                    }
                }
                if (_offset == _pending.WrittenCount)
                {
                    _pending.ResetWrittenCount();
                    _offset = 0;
                }
                int n = await stream.ReadAsync(_chunk, cancellation).ConfigureAwait(false);
                if (n == 0)
                    return null;
                if (_offset > 0 && _pending.FreeCapacity < n)
                {
                    var rest = _pending.WrittenSpan[_offset..].ToArray();
                    _pending.ResetWrittenCount();
                    _pending.Write(rest);
                    _offset = 0;
                }
                _pending.Write(_chunk.AsSpan(0, n));
            }
        }
    }
}
