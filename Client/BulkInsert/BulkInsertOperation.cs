using System.Buffers;
using System.Diagnostics;
using System.IO.Pipelines;
using System.Text.Json;
using System.Text.Json.Nodes;
using RavenLite.Client.Commands;
using RavenLite.Client.Exceptions;
using RavenLite.Client.Http;

namespace RavenLite.Client.BulkInsert;

/// <summary>
/// Streams documents to <c>POST /databases/{db}/bulk_insert</c> over one HTTP request (docs/protocol.md §7):
/// each <see cref="StoreAsync(object, string?, IDictionary{string, object?}?, CancellationToken)"/>
/// serializes into a buffer that is written to the stream when full; the server commits in batches
/// as the bytes arrive. Dispose (or <see cref="CompleteAsync"/>) closes the array and waits for the
/// server's answer. A failure surfaces as <see cref="BulkInsertAbortedException"/> carrying the
/// server's error; batches the server committed before it stay. Memory is bounded by the buffer and
/// the pipe's back-pressure. Not thread-safe: one writer.
/// </summary>
public sealed class BulkInsertOperation : IAsyncDisposable, IDisposable
{
    private readonly DocumentStore _store;
    private readonly string _database;
    private readonly BulkInsertOptions _options;
    private readonly CancellationToken _cancellation;
    private readonly ArrayBufferWriter<byte> _buffer = new(64 * 1024);
    private readonly Stopwatch _clock = new();
    private Pipe? _pipe;
    private Task<HttpResponseMessage>? _request;
    private long _documents, _bytes;
    private bool _completed, _first = true;
    // One writer at a time: the caller's StoreAsync, or the heartbeat timer.
    private readonly SemaphoreSlim _gate = new(1, 1);
    private Timer? _heartbeat;
    private long _lastWireTicks;


    internal BulkInsertOperation(DocumentStore store, string database, BulkInsertOptions options, CancellationToken cancellationToken)
    {
        _store = store;
        _database = database;
        _options = options;
        _cancellation = cancellationToken;
    }

    /// <summary>The server's operation id (after the first store).</summary>
    public long OperationId { get; private set; }

    /// <summary>Raised after each buffer is handed to the stream.</summary>
    public event EventHandler<BulkInsertProgress>? Progress;

    /// <summary>Documents stored so far.</summary>
    public long DocumentsSent => _documents;

    /// <summary>Stores an entity; its id comes from its Id property or HiLo, and is written back to it. Returns the id.</summary>
    public async Task<string> StoreAsync(object entity, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(entity);
        string? id = _store.Conventions.IdentityProperty(entity.GetType())?.GetValue(entity) as string;
        if (string.IsNullOrEmpty(id))
            id = await _store.GenerateDocumentIdAsync(_database, entity, cancellationToken).ConfigureAwait(false);
        await StoreAsync(entity, id, null, cancellationToken).ConfigureAwait(false);
        return id;
    }

    /// <summary>Stores an entity under <paramref name="id"/> (null: from its Id property or HiLo), with extra <paramref name="metadata"/>.</summary>
    public async Task StoreAsync(object entity, string? id, IDictionary<string, object?>? metadata = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(entity);
        ObjectDisposedException.ThrowIf(_completed, this);
        var conventions = _store.Conventions;
        if (string.IsNullOrEmpty(id))
            id = conventions.IdentityProperty(entity.GetType())?.GetValue(entity) as string;
        if (string.IsNullOrEmpty(id))
            id = await _store.GenerateDocumentIdAsync(_database, entity, cancellationToken).ConfigureAwait(false);
        conventions.IdentityProperty(entity.GetType())?.SetValue(entity, id);
        if (_pipe == null)
            await StartAsync(cancellationToken).ConfigureAwait(false);

        var doc = JsonSerializer.SerializeToNode(entity, entity.GetType(), conventions.JsonSerializerOptions) as JsonObject
            ?? throw new InvalidOperationException($"{entity.GetType().Name} does not serialize to a JSON object.");
        doc.Remove(conventions.IdentityJsonName);
        var meta = new JsonObject
        {
            ["@collection"] = conventions.FindCollectionName(entity.GetType()),
            ["Raven-Clr-Type"] = $"{entity.GetType().FullName}, {entity.GetType().Assembly.GetName().Name}",
        };
        foreach (var (k, v) in metadata ?? new Dictionary<string, object?>())
            meta[k] = v == null ? null : JsonSerializer.SerializeToNode(v, v.GetType(), conventions.JsonSerializerOptions);
        doc["@metadata"] = meta;

        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (!_first)
                _buffer.Write(","u8);
            using (var w = new Utf8JsonWriter(_buffer))
            {
                w.WriteStartObject();
                w.WriteString("Id", id);
                w.WriteString("Type", "PUT");
                w.WritePropertyName("Document");
                doc.WriteTo(w);
                w.WriteEndObject();
            }
            _first = false;
            _documents++;
            if (_buffer.WrittenCount >= _options.BufferBytes)
                await FlushBufferAsync(cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>The timer's check: after <see cref="BulkInsertOptions.HeartbeatInterval"/> without a write to the server, sends the buffer and a heartbeat item.</summary>
    private async Task HeartbeatAsync()
    {
        if (_completed)
        {
            _heartbeat?.Dispose(); // ended (completed, aborted or failed)
            return;
        }
        if (Stopwatch.GetElapsedTime(Interlocked.Read(ref _lastWireTicks)) < _options.HeartbeatInterval || !await _gate.WaitAsync(0).ConfigureAwait(false))
            return;
        try
        {
            if (_completed)
                return;
            if (!_first)
                _buffer.Write(","u8);
            _buffer.Write("{\"Type\":\"HeartBeat\"}"u8);
            _first = false;
            await FlushBufferAsync(_cancellation).ConfigureAwait(false);
        }
        catch (Exception)
        {
            // The stream failed: the caller's next StoreAsync or CompleteAsync reports why.
        }
        finally
        {
            _gate.Release();
        }
    }

    private async Task StartAsync(CancellationToken cancellationToken)
    {
        OperationId = await _store.Executor.ExecuteAsync(new NextOperationIdCommand(), _database, cancellationToken).ConfigureAwait(false);
        _pipe = new Pipe(new PipeOptions(pauseWriterThreshold: 1 << 20, resumeWriterThreshold: 1 << 19));
        var request = new HttpRequestMessage(HttpMethod.Post,
            $"/databases/{Uri.EscapeDataString(_database)}/bulk_insert?id={OperationId}&skipOverwriteIfUnchanged={(_options.SkipOverwriteIfUnchanged ? "true" : "false")}")
        {
            Content = new PipeContent(_pipe.Reader, _options.Compress),
        };
        _clock.Start();
        _request = _store.Executor.Http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, _cancellation);
        _pipe.Writer.Write("["u8);
        Interlocked.Exchange(ref _lastWireTicks, Stopwatch.GetTimestamp());
        var tick = TimeSpan.FromTicks(Math.Clamp(_options.HeartbeatInterval.Ticks / 4, TimeSpan.TicksPerMillisecond * 100, TimeSpan.TicksPerSecond));
        _heartbeat = new Timer(_ => _ = HeartbeatAsync(), null, tick, tick);
    }

    private async Task FlushBufferAsync(CancellationToken cancellationToken)
    {
        var writer = _pipe!.Writer;
        writer.Write(_buffer.WrittenSpan);
        _bytes += _buffer.WrittenCount;
        _buffer.ResetWrittenCount();
        var flushed = await writer.FlushAsync(cancellationToken).ConfigureAwait(false);
        Interlocked.Exchange(ref _lastWireTicks, Stopwatch.GetTimestamp());
        if (flushed.IsCompleted || _request!.IsCompleted)
            throw await FailureAsync(null).ConfigureAwait(false); // the server stopped reading: it answered (with an error)
        Progress?.Invoke(this, new BulkInsertProgress(_documents, _bytes, _clock.Elapsed));
    }

    /// <summary>Closes the stream and waits until the server has committed everything.</summary>
    /// <exception cref="BulkInsertAbortedException">the server refused the stream; its error is the message.</exception>
    public async Task CompleteAsync()
    {
        if (_completed)
            return;
        await _gate.WaitAsync().ConfigureAwait(false); // a heartbeat in flight finishes first
        _completed = true;
        _gate.Release();
        if (_heartbeat != null)
            await _heartbeat.DisposeAsync().ConfigureAwait(false);
        if (_pipe == null)
            return; // nothing stored
        var writer = _pipe.Writer;
        writer.Write(_buffer.WrittenSpan);
        _bytes += _buffer.WrittenCount;
        _buffer.ResetWrittenCount();
        writer.Write("]"u8);
        await writer.FlushAsync(_cancellation).ConfigureAwait(false);
        await writer.CompleteAsync().ConfigureAwait(false);
        HttpResponseMessage response;
        try
        {
            response = await _request!.ConfigureAwait(false);
        }
        catch (Exception e) when (e is HttpRequestException or IOException)
        {
            throw await FailureAsync(e).ConfigureAwait(false);
        }
        using (response)
        {
            if (!response.IsSuccessStatusCode)
            {
                var error = await RequestExecutor.ToExceptionAsync(response, _cancellation).ConfigureAwait(false);
                throw new BulkInsertAbortedException($"Bulk insert {OperationId} failed after {_documents:N0} documents were sent: {error.Message}", error) { StatusCode = error.StatusCode, ServerType = error.ServerType };
            }
        }
        Progress?.Invoke(this, new BulkInsertProgress(_documents, _bytes, _clock.Elapsed));
    }

    /// <summary>The server's reason for a failed stream: its error answer, else the operation state, else the transport error.</summary>
    private async Task<BulkInsertAbortedException> FailureAsync(Exception? transport)
    {
        _completed = true;
        try
        {
            await _pipe!.Writer.CompleteAsync().ConfigureAwait(false);
            var response = await _request!.ConfigureAwait(false);
            using (response)
            {
                if (!response.IsSuccessStatusCode)
                {
                    var error = await RequestExecutor.ToExceptionAsync(response, CancellationToken.None).ConfigureAwait(false);
                    return new BulkInsertAbortedException($"Bulk insert {OperationId} failed: {error.Message}", error) { StatusCode = error.StatusCode, ServerType = error.ServerType };
                }
            }
        }
        catch (Exception e) when (e is HttpRequestException or IOException or InvalidOperationException)
        {
            transport ??= e;
        }
        string reason = transport?.Message ?? "the server stopped reading the stream";
        try
        {
            var state = await _store.Executor.ExecuteAsync(new GetOperationStateCommand(OperationId), _database, CancellationToken.None).ConfigureAwait(false);
            if (state?["Result"]?["Error"]?.GetValue<string>() is { } err)
                reason = err;
            else if (state?["Result"]?["Message"]?.GetValue<string>() is { } msg)
                reason = msg;
        }
        catch (RavenException)
        {
            // Keep the transport reason.
        }
        return transport == null
            ? new BulkInsertAbortedException($"Bulk insert {OperationId} failed: {reason}")
            : new BulkInsertAbortedException($"Bulk insert {OperationId} failed: {reason}", transport);
    }

    /// <summary>Asks the server to stop the bulk insert (operations/kill); batches already committed stay.</summary>
    public async Task AbortAsync()
    {
        if (_pipe == null || _completed)
            return;
        _completed = true;
        await _store.Executor.Http.PostAsync($"/databases/{Uri.EscapeDataString(_database)}/operations/kill?id={OperationId}", null).ConfigureAwait(false);
        await _pipe.Writer.CompleteAsync().ConfigureAwait(false);
        try
        {
            using var _ = await _request!.ConfigureAwait(false);
        }
        catch (Exception e) when (e is HttpRequestException or IOException or TaskCanceledException)
        {
            // Expected: the server closes the stream.
        }
    }

    /// <summary>Completes the bulk insert (see <see cref="CompleteAsync"/>).</summary>
    public async ValueTask DisposeAsync() => await CompleteAsync().ConfigureAwait(false);

    /// <summary>Synchronous <see cref="DisposeAsync"/>.</summary>
    public void Dispose() => CompleteAsync().GetAwaiter().GetResult();
}
