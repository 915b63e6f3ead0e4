using System.IO.Pipelines;

namespace RavenLite.Server.BulkInsert;

/// <summary>
/// A read-only stream over the next <c>length</c> bytes of a <see cref="PipeReader"/> (a bulk insert attachment's
/// raw bytes): reads advance the pipe past what they return and never past the slice; it ends early only when the pipe does.
/// </summary>
public sealed class PipeSliceStream(PipeReader pipe, long length) : Stream
{
    private long _remaining = length;

    /// <inheritdoc />
    public override bool CanRead => true;

    /// <inheritdoc />
    public override bool CanSeek => false;

    /// <inheritdoc />
    public override bool CanWrite => false;

    /// <inheritdoc />
    public override long Length => throw new NotSupportedException();

    /// <inheritdoc />
    public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

    /// <inheritdoc />
    public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default)
    {
        if (_remaining == 0 || buffer.Length == 0)
            return 0;
        var result = await pipe.ReadAsync(cancellationToken).ConfigureAwait(false);
        var available = result.Buffer;
        if (available.IsEmpty && result.IsCompleted)
        {
            pipe.AdvanceTo(available.End);
            return 0;
        }
        int n = (int)Math.Min(Math.Min(available.Length, _remaining), buffer.Length);
        available.Slice(0, n).CopyTo(buffer.Span);
        pipe.AdvanceTo(available.GetPosition(n));
        _remaining -= n;
        return n;
    }

    /// <inheritdoc />
    public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        ReadAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    /// <inheritdoc />
    public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException("Read asynchronously.");

    /// <inheritdoc />
    public override void Flush()
    {
    }

    /// <inheritdoc />
    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

    /// <inheritdoc />
    public override void SetLength(long value) => throw new NotSupportedException();

    /// <inheritdoc />
    public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
}
