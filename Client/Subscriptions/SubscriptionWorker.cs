using System.Buffers;
using System.Net.Security;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using RavenLite.Client.Exceptions;

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
public sealed class SubscriptionItem<T>
{
    private JsonElement? _raw;

    internal SubscriptionItem(string id, string changeVector, T result, ReadOnlyMemory<byte> json)
    {
        Id = id;
        ChangeVector = changeVector;
        Result = result;
        RawJson = json;
    }

    /// <summary>The document id.</summary>
    public string Id { get; }

    /// <summary>Its change vector when sent.</summary>
    public string ChangeVector { get; }

    /// <summary>The document (or projection) as <typeparamref name="T"/>.</summary>
    public T Result { get; }

    /// <summary>The JSON sent, with its <c>@metadata</c> (UTF-8).</summary>
    public ReadOnlyMemory<byte> RawJson { get; }

    /// <summary>The JSON sent, parsed on first use.</summary>
    public JsonElement RawResult => _raw ??= JsonDocument.Parse(RawJson).RootElement;
}

/// <summary>A batch handed to the worker's handler; acknowledged when the handler returns.</summary>
/// <param name="Items">The documents.</param>
/// <param name="Includes">Documents the query's <c>include</c> named, by id.</param>
public sealed record SubscriptionBatch<T>(IReadOnlyList<SubscriptionItem<T>> Items, IReadOnlyDictionary<string, JsonElement> Includes);

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
    private Uri? _node; // the node to connect through (null: the store's first); a redirect or a failure moves it

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
            catch (SubscriptionDoesNotBelongToNodeException e)
            {
                // In a cluster one node serves each subscription: go there (the next node when it cannot be found).
                OnConnectionRetry?.Invoke(e);
                _node = await NodeByTagAsync(e.AppropriateNode).ConfigureAwait(false) ?? NextNode();
            }
            catch (Exception e) when (e is IOException or SocketException or HttpRequestException || e is SubscriptionClosedException { CanReconnect: true })
            {
                OnConnectionRetry?.Invoke(e);
                if (e is not SubscriptionClosedException)
                    _node = NextNode(); // that node is down or unreachable: try the database's next one
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

    /// <summary>The node after the current one among the database's nodes (its topology once known, else the store's URLs).</summary>
    private Uri? NextNode()
    {
        var nodes = _store.Executor.NodesOf(_database);
        if (nodes.Count < 2)
            return null;
        int at = _node == null ? 0 : nodes.ToList().FindIndex(n => n.Equals(_node));
        return nodes[(at + 1) % nodes.Count];
    }

    /// <summary>The URL of the node tagged <paramref name="tag"/> in the database's topology (<c>/topology?name=</c>), or null.</summary>
    private async Task<Uri?> NodeByTagAsync(string? tag)
    {
        if (tag == null)
            return null;
        foreach (var node in _store.Executor.NodesOf(_database))
        {
            try
            {
                using var response = await _store.Executor.Http.GetAsync(new Uri(node, $"/topology?name={Uri.EscapeDataString(_database)}"), _stop.Token).ConfigureAwait(false);
                if (!response.IsSuccessStatusCode)
                    continue;
                var topology = JsonNode.Parse(await response.Content.ReadAsStringAsync(_stop.Token).ConfigureAwait(false));
                foreach (var n in topology?["Nodes"]?.AsArray() ?? [])
                    if ((string?)n?["ClusterTag"] == tag && (string?)n?["Url"] is { } url)
                        return new Uri(url.TrimEnd('/') + "/");
            }
            catch (Exception e) when (e is HttpRequestException or TaskCanceledException or JsonException && !_stop.IsCancellationRequested)
            {
                // that node is down: ask the next
            }
        }
        return null;
    }

    /// <summary>Where the TCP port is, and (on a secured server) the certificate it presents.</summary>
    private async Task<(string Url, string? Certificate)> TcpInfoAsync()
    {
        var at = _node is { } node ? new Uri(node, "/info/tcp?tag=Subscription") : new Uri("/info/tcp?tag=Subscription", UriKind.Relative);
        using var response = await _store.Executor.Http.GetAsync(at, _stop.Token).ConfigureAwait(false);
        string text = await response.Content.ReadAsStringAsync(_stop.Token).ConfigureAwait(false);
        if (!response.IsSuccessStatusCode)
            throw new RavenException($"GET /info/tcp answered {(int)response.StatusCode}: {text}");
        var info = JsonNode.Parse(text) as JsonObject;
        return ((string?)info?["Url"] ?? throw new RavenException("The server did not say where its TCP port is (/info/tcp)."), (string?)info?["Certificate"]);
    }

    private async Task ProcessAsync(Func<SubscriptionBatch<T>, Task> handler)
    {
        var (tcpUrl, serverCertificate) = await TcpInfoAsync().ConfigureAwait(false);
        var url = new Uri(tcpUrl);
        using var client = new TcpClient { NoDelay = true };
        _client = client;
        await client.ConnectAsync(url.Host.Trim('[', ']'), url.Port, _stop.Token).ConfigureAwait(false);
        Stream stream = client.GetStream();
        using var ssl = serverCertificate != null ? new SslStream(stream) : null;
        if (ssl != null)
        {
            // A secured server: TLS with this store's certificate; the server must present exactly the certificate
            // /info/tcp named (as RavenDB's clients check), which came over the already verified HTTPS connection.
            byte[] expected = Convert.FromBase64String(serverCertificate!);
            await ssl.AuthenticateAsClientAsync(new SslClientAuthenticationOptions
            {
                TargetHost = url.Host.Trim('[', ']'),
                ClientCertificates = _store.Executor.Certificate is { } c ? [c] : null,
                RemoteCertificateValidationCallback = (_, presented, _, _) => presented != null && presented.GetRawCertData().AsSpan().SequenceEqual(expected),
            }, _stop.Token).ConfigureAwait(false);
            stream = ssl;
        }
        var reader = new MessageReader(stream);
        await WriteAsync(stream, new JsonObject { ["DatabaseName"] = _database, ["Operation"] = "Subscription", ["OperationVersion"] = 53_000 }).ConfigureAwait(false);
        using (var header = await reader.ReadAsync(_stop.Token).ConfigureAwait(false) ?? throw new IOException("The server closed the connection during the negotiation."))
        {
            if (Text(header.RootElement, "Status") == "AuthorizationFailed")
                throw new AuthorizationException($"The server refused the subscription connection: {Text(header.RootElement, "Message")}");
            if (Text(header.RootElement, "Status") != "Ok")
                throw new RavenException($"The server refused the subscription protocol: {Text(header.RootElement, "Message")}");
        }
        await WriteAsync(stream, new JsonObject
        {
            ["SubscriptionName"] = _options.SubscriptionName,
            ["Strategy"] = _options.Strategy,
            ["MaxDocsPerBatch"] = _options.MaxDocsPerBatch,
            ["CloseWhenNoDocsLeft"] = _options.CloseWhenNoDocsLeft,
        }).ConfigureAwait(false);
        using (var status = await reader.ReadAsync(_stop.Token).ConfigureAwait(false) ?? throw new IOException("The server closed the connection before accepting the worker."))
            ThrowUnlessAccepted(status.RootElement);
        OnEstablishedSubscriptionConnection?.Invoke();
        var items = new List<SubscriptionItem<T>>();
        var includes = new Dictionary<string, JsonElement>(StringComparer.OrdinalIgnoreCase);
        while (true)
        {
            var bytes = await reader.ReadBytesAsync(_stop.Token).ConfigureAwait(false) ?? throw new IOException("The server closed the subscription connection.");
            var (type, data) = Envelope(bytes);
            if (type == "Data")
            {
                // The hot path: the document is read straight from the bytes received, without a DOM.
                if (data.Length == 0)
                    throw new RavenException("A subscription item without Data.");
                var (id, changeVector) = IdAndChangeVector(data.Span);
                items.Add(new SubscriptionItem<T>(id ?? "", changeVector ?? "", ToResult(data.Span, id), data)); // a slice of this message's own array
                continue;
            }
            using var message = JsonDocument.Parse(bytes);
            var root = message.RootElement;
            switch (type)
            {
                case "Includes":
                    if (root.TryGetProperty("Includes", out var inc) && inc.ValueKind == JsonValueKind.Object)
                        foreach (var p in inc.EnumerateObject())
                            includes[p.Name] = p.Value.Clone();
                    break;
                case "EndOfBatch":
                    await handler(new SubscriptionBatch<T>(items.ToList(), new Dictionary<string, JsonElement>(includes))).ConfigureAwait(false);
                    await WriteAsync(stream, new JsonObject { ["ChangeVector"] = items.Count > 0 ? items[^1].ChangeVector : null, ["Type"] = "Acknowledge" }).ConfigureAwait(false);
                    items.Clear();
                    includes.Clear();
                    break;
                case "Confirm":
                    break;
                case "ConnectionStatus":
                    ThrowUnlessAccepted(root, closedNormally: _options.CloseWhenNoDocsLeft);
                    if (_options.CloseWhenNoDocsLeft && Text(root, "Status") == "Closed")
                        return;
                    break;
                case "Error":
                    throw new RavenException("The subscription failed on the server: " + Text(root, "Exception"));
                default:
                    throw new RavenException("Unexpected subscription message: " + root.GetRawText());
            }
        }
    }

    /// <summary>A message's <c>Type</c> and the bytes of its <c>Data</c> object (empty when it has none).</summary>
    private static (string? Type, ReadOnlyMemory<byte> Data) Envelope(byte[] message)
    {
        var reader = new Utf8JsonReader(message);
        string? type = null;
        ReadOnlyMemory<byte> data = default;
        if (!reader.Read() || reader.TokenType != JsonTokenType.StartObject)
            throw new RavenException("A subscription message is not a JSON object.");
        while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
        {
            bool isType = reader.ValueTextEquals("Type"u8), isData = reader.ValueTextEquals("Data"u8);
            reader.Read();
            if (isType && reader.TokenType == JsonTokenType.String)
                type = reader.GetString();
            else if (isData && reader.TokenType == JsonTokenType.StartObject)
            {
                int start = (int)reader.TokenStartIndex;
                reader.Skip();
                data = message.AsMemory(start, (int)reader.BytesConsumed - start);
            }
            else
                reader.Skip();
        }
        return (type, data);
    }

    /// <summary>The <c>@metadata.@id</c> and <c>@change-vector</c> of a document's JSON.</summary>
    private static (string? Id, string? ChangeVector) IdAndChangeVector(ReadOnlySpan<byte> document)
    {
        var reader = new Utf8JsonReader(document);
        reader.Read();
        while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
        {
            bool metadata = reader.ValueTextEquals("@metadata"u8);
            reader.Read();
            if (!metadata || reader.TokenType != JsonTokenType.StartObject)
            {
                reader.Skip();
                continue;
            }
            string? id = null, cv = null;
            while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
            {
                bool isId = reader.ValueTextEquals("@id"u8), isCv = reader.ValueTextEquals("@change-vector"u8);
                reader.Read();
                if (isId && reader.TokenType == JsonTokenType.String)
                    id = reader.GetString();
                else if (isCv && reader.TokenType == JsonTokenType.String)
                    cv = reader.GetString();
                else
                    reader.Skip();
            }
            return (id, cv);
        }
        return (null, null);
    }

    private static string? Text(JsonElement e, string name) => e.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.String ? v.GetString() : null;

    private T ToResult(ReadOnlySpan<byte> data, string? id)
    {
        // Deserialized from the bytes received (an entity's serializer skips @metadata, which is not one of its members).
        var result = JsonSerializer.Deserialize<T>(data, _store.Conventions.JsonSerializerOptions)!;
        if (result != null && id != null)
            _store.Conventions.IdentityProperty(result.GetType())?.SetValue(result, id);
        return result!;
    }

    private void ThrowUnlessAccepted(JsonElement status, bool closedNormally = false)
    {
        string? type = Text(status, "Type");
        string message = Text(status, "Message") ?? Text(status, "Exception") ?? "";
        if (type == "Error")
        {
            if (message.Contains("DatabaseDoesNotExistException", StringComparison.Ordinal))
                throw new DatabaseDoesNotExistException(message);
            throw new RavenException("The subscription failed on the server: " + message);
        }
        switch (Text(status, "Status"))
        {
            case "Accepted":
                return;
            case "NotFound":
                throw new SubscriptionDoesNotExistException(message);
            case "InUse":
                throw new SubscriptionInUseException(message);
            case "Invalid":
                throw new SubscriptionInvalidStateException(message);
            case "Redirect":
                throw new SubscriptionDoesNotBelongToNodeException(message)
                {
                    AppropriateNode = status.TryGetProperty("Data", out var redirect) && redirect.ValueKind == JsonValueKind.Object ? Text(redirect, "RedirectedTag") : null,
                };
            case "Closed" when closedNormally:
                return;
            case "Closed":
                throw new SubscriptionClosedException(message)
                {
                    CanReconnect = status.TryGetProperty("Data", out var data) && data.ValueKind == JsonValueKind.Object && data.TryGetProperty("CanReconnect", out var c) && c.ValueKind == JsonValueKind.True,
                };
            default:
                throw new RavenException($"Subscription '{_options.SubscriptionName}' could not be opened: {status.GetRawText()}");
        }
    }

    private async Task WriteAsync(Stream stream, JsonObject message) =>
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
        private readonly byte[] _chunk = new byte[64 * 1024];
        private int _offset;

        public async Task<JsonDocument?> ReadAsync(CancellationToken cancellation) =>
            await ReadBytesAsync(cancellation).ConfigureAwait(false) is { } bytes ? JsonDocument.Parse(bytes) : null;

        /// <summary>The next whole JSON object's bytes, or null at the end of the stream.</summary>
        public async Task<byte[]?> ReadBytesAsync(CancellationToken cancellation)
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
                        var message = span[..length].ToArray();
                        _offset += length;
                        return message;
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
