using System.Buffers;

namespace RavenLite.Server.BulkInsert;

/// <summary>
/// Memory for the items of one bulk-insert batch: item bytes are copied back to back into chunks
/// rented from the shared array pool (one allocation-free copy per item instead of an array each),
/// and every chunk goes back to the pool at <see cref="Dispose"/>. An item larger than a chunk gets a
/// rented array of its own. Not thread-safe; memory handed out is valid until <see cref="Dispose"/>.
/// </summary>
public sealed class ItemArena : IDisposable
{
    private const int ChunkBytes = 1 << 20;
    private readonly List<byte[]> _chunks = [];
    private byte[]? _current;
    private int _used;

    /// <summary>Copies <paramref name="bytes"/> into the arena and returns the copy.</summary>
    public ReadOnlyMemory<byte> Copy(in ReadOnlySequence<byte> bytes)
    {
        int length = checked((int)bytes.Length);
        if (_current == null || _current.Length - _used < length)
        {
            _current = ArrayPool<byte>.Shared.Rent(Math.Max(length, ChunkBytes));
            _chunks.Add(_current);
            _used = 0;
        }
        var target = _current.AsMemory(_used, length);
        bytes.CopyTo(target.Span);
        _used += length;
        return target;
    }

    /// <summary>Returns every chunk to the pool.</summary>
    public void Dispose()
    {
        foreach (var c in _chunks)
            ArrayPool<byte>.Shared.Return(c);
        _chunks.Clear();
        _current = null;
    }
}
