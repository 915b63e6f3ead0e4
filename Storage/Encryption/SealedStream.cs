using System.Buffers.Binary;
using System.Text;

namespace RavenLite.Storage.Encryption;

/// <summary>
/// A stream sealed with an <see cref="EncryptionKey"/> (docs/format/backup.md "Encrypted backups"): the magic
/// <c>RLSEAL01</c>, then chunks of at most <see cref="ChunkSize"/> bytes, each a length (uint32, little endian), the
/// sealed bytes and their nonce and tag. A chunk is bound to what the stream is (<c>boundTo</c>), its number and
/// whether it is the last (the last may be empty), so a chunk changed, moved, dropped, or the stream cut short, is
/// refused. <see cref="Seal"/> writes one (write-only, forward); <see cref="Open"/> reads one (read-only, forward).
/// </summary>
public static class SealedStream
{
    /// <summary>Content bytes per chunk.</summary>
    public const int ChunkSize = 64 * 1024;

    /// <summary>"RLSEAL01" little-endian: how a sealed stream starts.</summary>
    public const ulong Magic = 0x31304C4145534C52UL;

    /// <summary>A stream that seals what is written to it into <paramref name="output"/> (disposing it disposes <paramref name="output"/> unless <paramref name="leaveOpen"/>).</summary>
    public static Stream Seal(Stream output, EncryptionKey key, string boundTo, bool leaveOpen = false) => new Sealing(output, key, boundTo, leaveOpen);

    /// <summary>A stream that reads what <see cref="Seal"/> wrote to <paramref name="input"/>; <see cref="InvalidDataException"/> when it does not authenticate.</summary>
    public static Stream Open(Stream input, EncryptionKey key, string boundTo, bool leaveOpen = false) => new Opening(input, key, boundTo, leaveOpen);

    /// <summary>True when <paramref name="start"/> (a stream's first 8 bytes) is a sealed stream's magic.</summary>
    public static bool IsSealed(ReadOnlySpan<byte> start) => start.Length >= 8 && BinaryPrimitives.ReadUInt64LittleEndian(start) == Magic;


    private sealed class Sealing(Stream output, EncryptionKey key, string boundTo, bool leaveOpen) : Stream
    {
        private readonly byte[] _chunk = new byte[ChunkSize];
        private readonly byte[] _sealed = new byte[4 + ChunkSize + EncryptionKey.SealSize];
        private int _used;
        private long _chunks;
        private bool _started, _disposed;

        public override bool CanRead => false;
        public override bool CanSeek => false;
        public override bool CanWrite => !_disposed;
        public override long Length => throw new NotSupportedException();
        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

        public override void Write(byte[] buffer, int offset, int count) => Write(buffer.AsSpan(offset, count));

        public override void Write(ReadOnlySpan<byte> buffer)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            while (buffer.Length > 0)
            {
                if (_used == ChunkSize)
                    WriteChunk(last: false);
                int n = Math.Min(buffer.Length, ChunkSize - _used);
                buffer[..n].CopyTo(_chunk.AsSpan(_used));
                _used += n;
                buffer = buffer[n..];
            }
        }

        private void WriteChunk(bool last)
        {
            if (!_started)
            {
                Span<byte> magic = stackalloc byte[8];
                BinaryPrimitives.WriteUInt64LittleEndian(magic, Magic);
                output.Write(magic);
                _started = true;
            }
            BinaryPrimitives.WriteUInt32LittleEndian(_sealed, (uint)_used);
            key.Seal(_chunk.AsSpan(0, _used), _sealed.AsSpan(4, _used), _sealed.AsSpan(4 + _used, EncryptionKey.SealSize), EncryptionKey.Binding(boundTo, _chunks, last));
            output.Write(_sealed, 0, 4 + _used + EncryptionKey.SealSize);
            _chunks++;
            _used = 0;
        }

        public override void Flush() => output.Flush(); // the chunk being filled is written once it is full, or at the end

        public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException();
        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
        public override void SetLength(long value) => throw new NotSupportedException();

        protected override void Dispose(bool disposing)
        {
            if (!_disposed && disposing)
            {
                _disposed = true;
                WriteChunk(last: true);
                output.Flush();
                if (!leaveOpen)
                    output.Dispose();
            }
            base.Dispose(disposing);
        }
    }

    private sealed class Opening(Stream input, EncryptionKey key, string boundTo, bool leaveOpen) : Stream
    {
        private readonly byte[] _chunk = new byte[ChunkSize];
        private readonly byte[] _sealed = new byte[ChunkSize + EncryptionKey.SealSize];
        private int _length, _read;
        private long _chunks;
        private bool _started, _ended;

        public override bool CanRead => true;
        public override bool CanSeek => false;
        public override bool CanWrite => false;
        public override long Length => throw new NotSupportedException();
        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

        public override int Read(byte[] buffer, int offset, int count) => Read(buffer.AsSpan(offset, count));

        public override int Read(Span<byte> buffer)
        {
            while (_read == _length)
            {
                if (_ended)
                    return 0;
                ReadChunk();
            }
            int n = Math.Min(buffer.Length, _length - _read);
            _chunk.AsSpan(_read, n).CopyTo(buffer);
            _read += n;
            return n;
        }

        private void ReadChunk()
        {
            Span<byte> head = stackalloc byte[8];
            if (!_started)
            {
                input.ReadExactly(head);
                if (!IsSealed(head))
                    throw new InvalidDataException($"'{boundTo}' is not sealed with a key (no sealed stream's magic).");
                _started = true;
            }
            int got = input.ReadAtLeast(head[..4], 4, throwOnEndOfStream: false);
            if (got < 4)
                throw new InvalidDataException($"'{boundTo}' is cut short: its last sealed chunk is missing.");
            int length = (int)BinaryPrimitives.ReadUInt32LittleEndian(head);
            if (length is < 0 or > ChunkSize)
                throw new InvalidDataException($"'{boundTo}' has a sealed chunk of {length} bytes: it is damaged.");
            if (input.ReadAtLeast(_sealed.AsSpan(0, length + EncryptionKey.SealSize), length + EncryptionKey.SealSize, throwOnEndOfStream: false) < length + EncryptionKey.SealSize)
                throw new InvalidDataException($"'{boundTo}' is cut short inside a sealed chunk.");
            var cipher = _sealed.AsSpan(0, length);
            var seal = _sealed.AsSpan(length, EncryptionKey.SealSize);
            // A chunk that is not the last one opens as such only: the last is told by its binding.
            if (key.Open(cipher, seal, _chunk.AsSpan(0, length), EncryptionKey.Binding(boundTo, _chunks, last: false)))
                _ended = false;
            else if (key.Open(cipher, seal, _chunk.AsSpan(0, length), EncryptionKey.Binding(boundTo, _chunks, last: true)))
                _ended = true;
            else
                throw new InvalidDataException($"Chunk {_chunks} of '{boundTo}' does not authenticate: the key is not the one it was sealed with, or the bytes changed.");
            _chunks++;
            _length = length;
            _read = 0;
        }

        public override void Flush()
        {
        }

        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
        public override void SetLength(long value) => throw new NotSupportedException();
        public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();

        protected override void Dispose(bool disposing)
        {
            if (disposing && !leaveOpen)
                input.Dispose();
            base.Dispose(disposing);
        }
    }
}
