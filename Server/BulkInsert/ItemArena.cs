namespace RavenLite.Server.BulkInsert;

/// <summary>
/// Memory for the prepared documents of one bulk-insert batch: items are written back to back into
/// chunks rented from the shared array pool (no array per item), and every chunk goes back to the
/// pool at <see cref="Dispose"/>. Write one item at a time: <see cref="BeginItem"/>, then write through
/// the <see cref="IBufferWriter{T}"/> methods, then <see cref="EndItem"/>. An item that outgrows the
/// chunk it started in moves to a bigger one. Not thread-safe; memory handed out is valid until
/// <see cref="Dispose"/>.
/// </summary>
public sealed class ItemArena : IBufferWriter<byte>, IDisposable
{
    private const int ChunkBytes = 1 << 20;
    private readonly List<byte[]> _chunks = [];
    private byte[]? _current;
    private int _used;
    private int _itemStart = -1;

    /// <summary>Starts an item expected to take about <paramref name="expectedBytes"/>.</summary>
    public void BeginItem(int expectedBytes)
    {
        if (_itemStart >= 0)
            throw new InvalidOperationException("The previous item was not ended.");
        if (_current == null || _current.Length - _used < expectedBytes)
            NewChunk(expectedBytes, carry: 0);
        _itemStart = _used;
    }

    /// <summary>Ends the item and returns its bytes.</summary>
    public ReadOnlyMemory<byte> EndItem()
    {
        var item = _current.AsMemory(_itemStart, _used - _itemStart);
        _itemStart = -1;
        return item;
    }

    /// <summary>Drops the item being written (its bytes stay unused until the arena is disposed).</summary>
    public void AbandonItem() => _itemStart = -1;

    /// <inheritdoc />
    public Span<byte> GetSpan(int sizeHint = 0) => GetMemory(sizeHint).Span;

    /// <inheritdoc />
    public Memory<byte> GetMemory(int sizeHint = 0)
    {
        if (_itemStart < 0)
            throw new InvalidOperationException("Begin an item first.");
        sizeHint = Math.Max(sizeHint, 1);
        if (_current!.Length - _used < sizeHint)
        {
            int carry = _used - _itemStart;
            NewChunk(carry + Math.Max(sizeHint, 4096), carry);
        }
        return _current.AsMemory(_used);
    }

    /// <inheritdoc />
    public void Advance(int count) => _used += count;

    private void NewChunk(int minimum, int carry)
    {
        var chunk = ArrayPool<byte>.Shared.Rent(Math.Max(minimum, ChunkBytes));
        if (carry > 0)
            _current.AsSpan(_itemStart, carry).CopyTo(chunk);
        _chunks.Add(chunk);
        _current = chunk;
        _used = carry;
        if (_itemStart >= 0)
            _itemStart = 0;
    }

    /// <summary>Returns every chunk to the pool.</summary>
    public void Dispose()
    {
        foreach (var c in _chunks)
            ArrayPool<byte>.Shared.Return(c);
        _chunks.Clear();
        _current = null;
        _itemStart = -1;
    }
}
