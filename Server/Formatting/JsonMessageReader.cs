namespace RavenLite.Server.Formatting;

/// <summary>
/// Reads JSON objects written back to back on a stream (RavenDB's TCP protocol: no framing, whitespace between
/// values allowed). Each <see cref="ReadAsync"/> returns the next whole object, or null at the end of the stream.
/// </summary>
public sealed class JsonMessageReader(Stream stream, int maxMessageBytes = 1 << 20)
{
    private byte[] _buffer = new byte[16 * 1024];
    private int _start, _end;

    /// <summary>The next whole object, or null at the end of the stream; <see cref="InvalidDataException"/> when one is too large or not an object.</summary>
    public async Task<JsonDocument?> ReadAsync(CancellationToken cancellation)
    {
        while (true)
        {
            if (TryTake(out var message))
                return message;
            if (_end - _start >= maxMessageBytes)
                throw new InvalidDataException($"A message is larger than {maxMessageBytes} bytes.");
            if (_start > 0)
            {
                Buffer.BlockCopy(_buffer, _start, _buffer, 0, _end - _start);
                (_end, _start) = (_end - _start, 0);
            }
            if (_end == _buffer.Length)
                Array.Resize(ref _buffer, _buffer.Length * 2);
            int n = await stream.ReadAsync(_buffer.AsMemory(_end), cancellation).ConfigureAwait(false);
            if (n == 0)
                return null;
            _end += n;
        }
    }

    private bool TryTake(out JsonDocument? message)
    {
        message = null;
        while (_start < _end && _buffer[_start] is (byte)' ' or (byte)'\r' or (byte)'\n' or (byte)'\t')
            _start++;
        if (_start == _end)
            return false;
        var span = _buffer.AsSpan(_start, _end - _start);
        var reader = new Utf8JsonReader(span, isFinalBlock: false, default);
        if (!reader.Read())
            return false;
        if (reader.TokenType is not (JsonTokenType.StartObject or JsonTokenType.StartArray))
            throw new InvalidDataException("Expected a JSON object.");
        if (!reader.TrySkip())
            return false;
        int length = (int)reader.BytesConsumed;
        message = JsonDocument.Parse(_buffer.AsSpan(_start, length).ToArray()); // a copy: the buffer is reused
        _start += length;
        return true;
    }
}
