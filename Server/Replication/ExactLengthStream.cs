namespace RavenLite.Server.Replication;

/// <summary>
/// The next <c>length</c> bytes of a connection as a stream of their own (an attachment's content between two
/// frames): reads end there, and end early only when the connection does (an error: the content was cut short).
/// </summary>
internal sealed class ExactLengthStream(Stream inner, long length) : Stream
{
    private readonly long _length = length;
    private long _left = length;

    public override bool CanRead => true;

    public override bool CanSeek => false;

    public override bool CanWrite => false;

    public override long Length => _length;

    public override long Position
    {
        get => _length - _left;
        set => throw new NotSupportedException();
    }

    public override int Read(byte[] buffer, int offset, int count) => ReadAsync(buffer.AsMemory(offset, count)).AsTask().GetAwaiter().GetResult();

    public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default)
    {
        if (_left == 0)
            return 0;
        int n = await inner.ReadAsync(buffer[..(int)Math.Min(buffer.Length, _left)], cancellationToken).ConfigureAwait(false);
        if (n == 0)
            throw new EndOfStreamException($"The connection ended {_left} bytes before the end of an attachment's content.");
        _left -= n;
        return n;
    }

    public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        ReadAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    public override void Flush()
    {
    }

    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

    public override void SetLength(long value) => throw new NotSupportedException();

    public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
}
