using System.Threading.Channels;

namespace RavenLite.Server.Http;

/// <summary>
/// An answer written while it is produced (the streaming endpoints, export): a producer runs on its own
/// thread (it may hold a storage read transaction and an index snapshot for its whole run), appends
/// bytes, and every 64 KB (or 100 ms) hands a chunk to the request's task, which writes it to the socket.
/// At most <see cref="QueuedChunks"/> chunks wait, so a slow reader slows the producer and memory stays
/// flat whatever the answer's size. Until the first chunk is written the status is free: a producer
/// that throws before any output gets the usual error answer (4xx); after, the late-error callback
/// may append an error marker (the jsonl formats' <c>{"Error": ...}</c> line) and the connection ends.
/// </summary>
public sealed class StreamedResponse : IDisposable
{
    /// <summary>Bytes gathered before a chunk is handed over.</summary>
    public const int ChunkBytes = 64 * 1024;

    /// <summary>Chunks that may wait for the socket.</summary>
    public const int QueuedChunks = 8;

    private static readonly long FlushTicks = Stopwatch.Frequency / 10;
    private static readonly JsonWriterOptions WriterOptions = new() { Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping };

    private readonly Channel<byte[]> _chunks = Channel.CreateBounded<byte[]>(new BoundedChannelOptions(QueuedChunks) { SingleReader = true, SingleWriter = true });
    private readonly ArrayBufferWriter<byte> _buffer = new(ChunkBytes + 4096);
    private readonly CancellationToken _cancel;
    private Utf8JsonWriter? _writer;
    private long _lastFlush = Stopwatch.GetTimestamp();
    private bool _handedOver;

    private StreamedResponse(CancellationToken cancel) => _cancel = cancel;

    /// <summary>Cancelled when the client went away or the answer failed: a producer checks it between items.</summary>
    public CancellationToken Cancellation => _cancel;

    /// <summary>Appends raw bytes (already valid output).</summary>
    public void Append(ReadOnlySpan<byte> bytes)
    {
        _buffer.Write(bytes);
        MaybeFlush();
    }

    /// <summary>Appends one JSON value written by <paramref name="write"/> (a fresh writer state each time).</summary>
    public void AppendJson(Action<Utf8JsonWriter> write)
    {
        if (_writer == null)
            _writer = new Utf8JsonWriter(_buffer, WriterOptions);
        else
            _writer.Reset(_buffer);
        write(_writer);
        _writer.Flush();
        MaybeFlush();
    }

    private void MaybeFlush()
    {
        if (_buffer.WrittenCount >= ChunkBytes || (_buffer.WrittenCount > 0 && Stopwatch.GetTimestamp() - _lastFlush > FlushTicks))
            Flush();
    }

    /// <summary>Hands what was appended to the socket writer now (waits while <see cref="QueuedChunks"/> are queued).</summary>
    public void Flush()
    {
        _lastFlush = Stopwatch.GetTimestamp();
        if (_buffer.WrittenCount == 0)
            return;
        byte[] chunk = _buffer.WrittenSpan.ToArray();
        _buffer.Clear();
        _handedOver = true;
        if (!_chunks.Writer.TryWrite(chunk))
            _chunks.Writer.WriteAsync(chunk, _cancel).AsTask().GetAwaiter().GetResult();
    }

    /// <inheritdoc />
    public void Dispose() => _writer?.Dispose();

    /// <summary>A write-only stream appending to this answer (for writers that need a <see cref="Stream"/>, such as gzip).</summary>
    public Stream AsStream() => new AppendingStream(this);

    private sealed class AppendingStream(StreamedResponse owner) : Stream
    {
        public override void Write(byte[] buffer, int offset, int count) => owner.Append(buffer.AsSpan(offset, count));

        public override void Write(ReadOnlySpan<byte> buffer) => owner.Append(buffer);

        public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken)
        {
            owner.Append(buffer.AsSpan(offset, count));
            return Task.CompletedTask;
        }

        public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
        {
            owner.Append(buffer.Span);
            return ValueTask.CompletedTask;
        }

        public override void Flush()
        {
        }

        public override bool CanRead => false;
        public override bool CanSeek => false;
        public override bool CanWrite => true;
        public override long Length => throw new NotSupportedException();
        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }
        public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException();
        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
        public override void SetLength(long value) => throw new NotSupportedException();
    }

    /// <summary>
    /// Runs <paramref name="produce"/> on a thread of its own and writes what it appends as a <c>200</c> answer
    /// of <paramref name="contentType"/>; returns once the producer has ended (its transactions are closed).
    /// </summary>
    public static async Task RunAsync(HttpContext context, string contentType, Action<StreamedResponse> produce, Action<StreamedResponse, Exception>? onLateError = null)
    {
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(context.RequestAborted);
        using var stream = new StreamedResponse(stop.Token);
        bool started = false;
        var producer = Task.Factory.StartNew(() =>
        {
            try
            {
                produce(stream);
                stream.Flush();
                stream._chunks.Writer.TryComplete();
            }
            catch (Exception e)
            {
                if (stream._handedOver && onLateError != null && e is not OperationCanceledException)
                {
                    try
                    {
                        onLateError(stream, e);
                        stream.Flush();
                    }
                    catch (Exception)
                    {
                        // The marker is best effort; the connection ends either way.
                    }
                }
                stream._chunks.Writer.TryComplete(e);
            }
        }, CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        var response = context.Response;
        // A client that reads nothing for StalledClientSeconds is dropped: it would otherwise hold the connection, the
        // queued chunks and the producer's storage snapshot for as long as it likes (Kestrel's minimum data rate allows
        // every byte already buffered in the socket its share of time, hours for a few MB at the default rate).
        var stall = TimeSpan.FromSeconds(context.RequestServices.GetService<Configuration.ServerOptions>()?.StalledClientSeconds ?? 60);
        using var stalled = CancellationTokenSource.CreateLinkedTokenSource(stop.Token);
        try
        {
            while (await stream._chunks.Reader.WaitToReadAsync(stop.Token).ConfigureAwait(false))
            {
                while (stream._chunks.Reader.TryRead(out var chunk))
                {
                    if (!started)
                    {
                        response.StatusCode = 200;
                        response.ContentType = contentType;
                        started = true;
                    }
                    stalled.CancelAfter(stall);
                    await response.Body.WriteAsync(chunk, stalled.Token).ConfigureAwait(false);
                }
                stalled.CancelAfter(stall);
                await response.Body.FlushAsync(stalled.Token).ConfigureAwait(false);
                stalled.CancelAfter(Timeout.InfiniteTimeSpan);
            }
            if (!started)
            {
                response.StatusCode = 200;
                response.ContentType = contentType;
                response.ContentLength = 0;
            }
        }
        catch (Exception e) when (started && (e is not OperationCanceledException || (stalled.IsCancellationRequested && !stop.IsCancellationRequested)))
        {
            // Headers are out (or the client stopped reading): the only way left to say "incomplete" is to end the
            // connection without the final chunk.
            context.Abort();
        }
        finally
        {
            stop.Cancel();
            try
            {
                await producer.ConfigureAwait(false);
            }
            catch (Exception)
            {
                // Its failure was handed over through the channel.
            }
        }
    }
}
