using System.IO.Compression;

namespace RavenLite.Server.Smuggler;

/// <summary>
/// Reads a <c>.ravendbdump</c> (RavenDB's smuggler stream: one JSON object whose arrays may carry raw attachment bytes
/// right after an attachment's header object) one value at a time from a stream, gzip or plain, in bounded memory:
/// <see cref="ReadValueAsync"/> parses one element, <see cref="RawStream"/> hands out the next n raw bytes.
/// Anything that is not this shape is an <see cref="InvalidDataException"/> naming the byte offset.
/// </summary>
internal sealed class DumpReader : IDisposable
{
    private const int MaxValueBytes = 64 << 20;
    private readonly Stream _input;
    private byte[] _buffer = new byte[64 * 1024];
    private int _start, _end;
    private long _consumed; // bytes before _buffer[_start]

    private DumpReader(Stream input) => _input = input;

    /// <summary>Opens <paramref name="body"/>: gzip (1f 8b) or plain JSON; a zstd dump is refused with a clear message.</summary>
    public static async Task<DumpReader> OpenAsync(Stream body, CancellationToken cancellation)
    {
        var head = new byte[4];
        int n = 0;
        while (n < 4)
        {
            int r = await body.ReadAsync(head.AsMemory(n), cancellation).ConfigureAwait(false);
            if (r == 0)
                break;
            n += r;
        }
        var prefixed = new PrefixedStream(head.AsMemory(0, n), body);
        if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b)
            return new DumpReader(new GZipStream(prefixed, CompressionMode.Decompress));
        if (n >= 4 && head[0] == 0x28 && head[1] == 0xb5 && head[2] == 0x2f && head[3] == 0xfd)
            throw new InvalidDataException("This dump is compressed with Zstd; RavenLite reads gzip dumps (export with ExportCompressionAlgorithm Gzip) and plain JSON.");
        return new DumpReader(prefixed);
    }

    /// <summary>Bytes of the decompressed stream consumed so far.</summary>
    public long Position => _consumed;

    private async Task<bool> FillAsync(CancellationToken cancellation)
    {
        if (_start > 0)
        {
            Buffer.BlockCopy(_buffer, _start, _buffer, 0, _end - _start);
            _consumed += _start;
            (_end, _start) = (_end - _start, 0);
        }
        if (_end == _buffer.Length)
        {
            if (_buffer.Length >= MaxValueBytes)
                throw new InvalidDataException($"A value of the dump is larger than {MaxValueBytes >> 20} MB (at byte {Position}).");
            Array.Resize(ref _buffer, _buffer.Length * 2);
        }
        int n = await _input.ReadAsync(_buffer.AsMemory(_end), cancellation).ConfigureAwait(false);
        _end += n;
        return n > 0;
    }

    /// <summary>The next byte that is not whitespace (not consumed); -1 at the end.</summary>
    public async Task<int> PeekAsync(CancellationToken cancellation)
    {
        while (true)
        {
            while (_start < _end && _buffer[_start] is (byte)' ' or (byte)'\r' or (byte)'\n' or (byte)'\t')
                _start++;
            if (_start < _end)
                return _buffer[_start];
            if (!await FillAsync(cancellation).ConfigureAwait(false))
                return -1;
        }
    }

    /// <summary>Consumes <paramref name="expected"/> (after whitespace) or throws.</summary>
    public async Task ExpectAsync(byte expected, CancellationToken cancellation)
    {
        int b = await PeekAsync(cancellation).ConfigureAwait(false);
        if (b != expected)
            throw new InvalidDataException($"The dump is malformed at byte {Position + _start}: expected '{(char)expected}', found {(b < 0 ? "the end" : "'" + (char)b + "'")}.");
        _start++;
    }

    /// <summary>Consumes <paramref name="b"/> when it comes next; true when it did.</summary>
    public async Task<bool> TryConsumeAsync(byte b, CancellationToken cancellation)
    {
        if (await PeekAsync(cancellation).ConfigureAwait(false) != b)
            return false;
        _start++;
        return true;
    }

    /// <summary>The bytes of the value <see cref="ReadValueAsync"/> returned last (the array the document was parsed from).</summary>
    public byte[] LastValue { get; private set; } = [];

    /// <summary>The next whole JSON value, parsed (a copy: valid after the next read).</summary>
    public async Task<JsonDocument> ReadValueAsync(CancellationToken cancellation)
    {
        if (await PeekAsync(cancellation).ConfigureAwait(false) < 0)
            throw new InvalidDataException($"The dump ends in the middle (at byte {Position + _start}): it is truncated.");
        while (true)
        {
            var reader = new Utf8JsonReader(_buffer.AsSpan(_start, _end - _start), isFinalBlock: false, default);
            try
            {
                if (reader.Read() && reader.TrySkip())
                {
                    int length = (int)reader.BytesConsumed;
                    LastValue = _buffer.AsSpan(_start, length).ToArray();
                    var doc = JsonDocument.Parse(LastValue);
                    _start += length;
                    return doc;
                }
            }
            catch (JsonException e)
            {
                throw new InvalidDataException($"The dump is not valid JSON at byte {Position + _start + e.BytePositionInLine}: {e.Message}", e);
            }
            if (!await FillAsync(cancellation).ConfigureAwait(false))
                throw new InvalidDataException($"The dump ends in the middle of a value (at byte {Position + _start}): it is truncated.");
        }
    }

    /// <summary>The next property name of an object (after an optional comma); null at the object's end (consumed).</summary>
    public async Task<string?> ReadPropertyNameAsync(bool first, CancellationToken cancellation)
    {
        if (await TryConsumeAsync((byte)'}', cancellation).ConfigureAwait(false))
            return null;
        if (!first)
            await ExpectAsync((byte)',', cancellation).ConfigureAwait(false);
        using var name = await ReadValueAsync(cancellation).ConfigureAwait(false);
        if (name.RootElement.ValueKind != JsonValueKind.String)
            throw new InvalidDataException($"The dump is malformed at byte {Position + _start}: expected a property name.");
        await ExpectAsync((byte)':', cancellation).ConfigureAwait(false);
        return name.RootElement.GetString();
    }

    /// <summary>The next <paramref name="length"/> raw bytes (an attachment's content) as a stream; read it to its end before reading on.</summary>
    public Stream RawStream(long length) => new RawPart(this, length);

    /// <inheritdoc />
    public void Dispose() => _input.Dispose();

    private sealed class RawPart(DumpReader owner, long size) : Stream
    {
        private readonly long _size = size;
        private long _left = size;

        public override int Read(byte[] buffer, int offset, int count) => ReadAsync(buffer.AsMemory(offset, count)).AsTask().GetAwaiter().GetResult();

        public override async ValueTask<int> ReadAsync(Memory<byte> destination, CancellationToken cancellationToken = default)
        {
            if (_left == 0)
                return 0;
            if (owner._start == owner._end && !await owner.FillAsync(cancellationToken).ConfigureAwait(false))
                throw new InvalidDataException($"The dump ends inside an attachment's content ({_left} bytes missing): it is truncated.");
            int n = (int)Math.Min(Math.Min(destination.Length, owner._end - owner._start), _left);
            owner._buffer.AsMemory(owner._start, n).CopyTo(destination);
            owner._start += n;
            _left -= n;
            return n;
        }

        public override bool CanRead => true;
        public override bool CanSeek => false;
        public override bool CanWrite => false;
        public override long Length => _size;
        public override long Position { get => Length - _left; set => throw new NotSupportedException(); }
        public override void Flush() { }
        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
        public override void SetLength(long value) => throw new NotSupportedException();
        public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
    }

    /// <summary>A few bytes already read, then the rest of the stream.</summary>
    private sealed class PrefixedStream(ReadOnlyMemory<byte> prefix, Stream rest) : Stream
    {
        private ReadOnlyMemory<byte> _prefix = prefix;

        public override int Read(byte[] buffer, int offset, int count) => ReadAsync(buffer.AsMemory(offset, count)).AsTask().GetAwaiter().GetResult();

        public override ValueTask<int> ReadAsync(Memory<byte> destination, CancellationToken cancellationToken = default)
        {
            if (_prefix.IsEmpty)
                return rest.ReadAsync(destination, cancellationToken);
            int n = Math.Min(destination.Length, _prefix.Length);
            _prefix[..n].CopyTo(destination);
            _prefix = _prefix[n..];
            return ValueTask.FromResult(n);
        }

        public override bool CanRead => true;
        public override bool CanSeek => false;
        public override bool CanWrite => false;
        public override long Length => throw new NotSupportedException();
        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }
        public override void Flush() { }
        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
        public override void SetLength(long value) => throw new NotSupportedException();
        public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();

        protected override void Dispose(bool disposing)
        {
            if (disposing)
                rest.Dispose();
            base.Dispose(disposing);
        }
    }
}
