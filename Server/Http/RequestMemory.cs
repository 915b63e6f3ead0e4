using RavenLite.Server.Memory;

namespace RavenLite.Server.Http;

/// <summary>
/// A request's share of the <see cref="MemoryBudget"/>: the lease each request charges for what it builds in memory,
/// made on first use and released when its answer completes, and the answer buffer that charges it.
/// </summary>
public static class RequestMemory
{
    /// <summary>The lease of <paramref name="context"/>'s request, made on first use and released when its answer completes; null without a budget (tests building contexts by hand).</summary>
    public static MemoryBudget.Lease? For(HttpContext context)
    {
        if (context.Items.TryGetValue(typeof(MemoryBudget.Lease), out var existing))
            return (MemoryBudget.Lease?)existing;
        if (context.RequestServices?.GetService(typeof(MemoryBudget)) is not MemoryBudget budget)
            return null;
        var lease = new MemoryBudget.Lease(budget);
        context.Items[typeof(MemoryBudget.Lease)] = lease;
        context.Response.RegisterForDispose(lease);
        return lease;
    }

    /// <summary>Gives back what <paramref name="context"/>'s request held; what it builds from now on (its error answer) is not charged.</summary>
    public static void Release(HttpContext context)
    {
        if (context.Items.TryGetValue(typeof(MemoryBudget.Lease), out var existing))
            (existing as MemoryBudget.Lease)?.Dispose();
        context.Items[typeof(MemoryBudget.Lease)] = null;
    }

    /// <summary>
    /// A JSON answer's buffer: segments rented from the shared array pool (no garbage per answer, no copying as it
    /// grows, where a growing array copies itself at every doubling), charged to its request's lease beyond the first
    /// <c>initialCapacity</c> bytes. A body that stays within those (most answers: a counter, a PUT's etag) takes no
    /// lease, since looking the lease up (request items, request services) costs more than such an answer.
    /// Dispose gives the segments back. Not thread-safe.
    /// </summary>
    public sealed class Writer(HttpContext context, int initialCapacity = 1024) : IBufferWriter<byte>, IDisposable
    {
        private const int MaxSegment = 64 * 1024;
        private List<(byte[] Array, int Length)>? _full;
        private byte[] _current = ArrayPool<byte>.Shared.Rent(initialCapacity);
        private int _written;
        private long _rented = initialCapacity, _charged = initialCapacity, _fullLength;
        private MemoryBudget.Lease? _lease;

        /// <summary>Bytes written.</summary>
        public long Length => _fullLength + _written;

        /// <inheritdoc />
        public void Advance(int count)
        {
            if ((uint)count > (uint)(_current.Length - _written))
                throw new ArgumentOutOfRangeException(nameof(count));
            _written += count;
        }

        /// <inheritdoc />
        public Memory<byte> GetMemory(int sizeHint = 0)
        {
            Ensure(sizeHint);
            return _current.AsMemory(_written);
        }

        /// <inheritdoc />
        public Span<byte> GetSpan(int sizeHint = 0)
        {
            Ensure(sizeHint);
            return _current.AsSpan(_written);
        }

        /// <summary>Writes everything written to <paramref name="output"/> (without flushing it).</summary>
        public void CopyTo(IBufferWriter<byte> output)
        {
            if (_full != null)
                foreach (var (array, length) in _full)
                    output.Write(array.AsSpan(0, length));
            output.Write(_current.AsSpan(0, _written));
        }

        /// <summary>Gives the segments back to the pool.</summary>
        public void Dispose()
        {
            if (_full != null)
            {
                foreach (var (array, _) in _full)
                    ArrayPool<byte>.Shared.Return(array);
                _full = null;
            }
            if (_current.Length > 0)
                ArrayPool<byte>.Shared.Return(_current);
            _current = [];
            _written = 0;
            _fullLength = 0;
        }

        private void Ensure(int sizeHint)
        {
            ObjectDisposedException.ThrowIf(_current.Length == 0, this);
            int needed = Math.Max(sizeHint, 1);
            if (_current.Length - _written >= needed)
                return;
            int size = Math.Max(needed, Math.Min(MaxSegment, _current.Length * 2));
            var next = ArrayPool<byte>.Shared.Rent(size);
            if (_written > 0)
            {
                (_full ??= []).Add((_current, _written));
                _fullLength += _written;
            }
            else
            {
                ArrayPool<byte>.Shared.Return(_current);
                _rented -= _current.Length;
            }
            _current = next;
            _written = 0;
            _rented += next.Length;
            Charge();
        }

        private void Charge()
        {
            if (_rented <= _charged)
                return;
            if (_lease == null)
            {
                _lease = For(context);
                if (_lease == null)
                {
                    _charged = long.MaxValue; // no budget: nothing to charge
                    return;
                }
                _charged = 0; // the first bytes too, now that the body outgrew them
            }
            long more = _rented - _charged;
            _charged = _rented;
            _lease.Add(more);
        }
    }
}
