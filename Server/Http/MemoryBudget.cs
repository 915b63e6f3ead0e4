using System.Buffers;

namespace RavenLite.Server.Http;

/// <summary>
/// The memory that requests may hold at once for what they build in memory — query results, JSON answers (which are
/// sent whole, with their Content-Length), the answers a multi_get collects (<see cref="Hosting.ServerOptions.MemoryBudgetMB"/>).
/// Each request charges its own lease (<see cref="For"/>) as its buffers grow, in 1 MiB steps, and gives everything back
/// when its answer is done. A request that would take the total past the budget fails at once with 503 LowMemoryException
/// saying what to do (page, or use the streaming endpoints, which hold one chunk at a time) — instead of the server
/// growing until the kernel kills it. A bulk insert charges the batches it has handed to the merger and not yet seen
/// committed (<see cref="Lease.Remove"/> as each commits), so many at once cannot pass the budget either. Streams,
/// export and attachments hold one bounded chunk at a time and do not charge it.
/// </summary>
public sealed class MemoryBudget(long capacityBytes)
{
    private const long Step = 1 << 20;
    private long _used;

    /// <summary>The budget, in bytes.</summary>
    public long Capacity { get; } = capacityBytes;

    /// <summary>Bytes held by requests now.</summary>
    public long Used => Interlocked.Read(ref _used);

    /// <summary>The lease of <paramref name="context"/>'s request, made on first use and released when its answer completes; null without a budget (tests building contexts by hand).</summary>
    public static Lease? For(HttpContext context)
    {
        if (context.Items.TryGetValue(typeof(Lease), out var existing))
            return (Lease?)existing;
        if (context.RequestServices?.GetService(typeof(MemoryBudget)) is not MemoryBudget budget)
            return null;
        var lease = new Lease(budget);
        context.Items[typeof(Lease)] = lease;
        context.Response.RegisterForDispose(lease);
        return lease;
    }

    /// <summary>Gives back what <paramref name="context"/>'s request held; what it builds from now on (its error answer) is not charged.</summary>
    public static void Release(HttpContext context)
    {
        if (context.Items.TryGetValue(typeof(Lease), out var existing))
            (existing as Lease)?.Dispose();
        context.Items[typeof(Lease)] = null;
    }

    /// <summary>What one request holds.</summary>
    public sealed class Lease(MemoryBudget budget) : IDisposable
    {
        private long _reserved, _held;

        /// <summary>Bytes this request holds now.</summary>
        public long Held => Interlocked.Read(ref _held);

        /// <summary>
        /// Notes <paramref name="bytes"/> more held by this request; throws a 503 when the budget has no room for them,
        /// ending with <paramref name="advice"/> (by default: page, or stream).
        /// </summary>
        public void Add(long bytes, string? advice = null)
        {
            long held = Interlocked.Add(ref _held, bytes);
            while (held > Interlocked.Read(ref _reserved))
            {
                long total = Interlocked.Add(ref budget._used, Step);
                if (total > budget.Capacity)
                {
                    Interlocked.Add(ref budget._used, -Step);
                    Interlocked.Add(ref _held, -bytes); // refused: not held
                    throw new ApiException(503, RavenExceptionTypes.LowMemory,
                        $"This request needs more than the server's memory budget for requests allows: it would hold {held >> 20} MiB, other requests {(total - Step - Interlocked.Read(ref _reserved)) >> 20} MiB, " +
                        $"of MemoryBudgetMB = {budget.Capacity >> 20}. " + (advice ?? "Ask for less at a time (PageSize and Start), or use the streaming endpoints (/streams/queries, /streams/docs), which send results as they are read."));
                }
                Interlocked.Add(ref _reserved, Step);
            }
        }

        /// <summary>Notes <paramref name="bytes"/> no longer held; whole steps the request no longer needs go back to the budget.</summary>
        public void Remove(long bytes)
        {
            long held = Interlocked.Add(ref _held, -bytes);
            long keep = (Math.Max(0, held) + Step - 1) / Step * Step;
            long reserved = Interlocked.Read(ref _reserved);
            if (reserved > keep && Interlocked.CompareExchange(ref _reserved, keep, reserved) == reserved)
                Interlocked.Add(ref budget._used, keep - reserved);
        }

        /// <summary>Gives back everything this request held.</summary>
        public void Dispose()
        {
            long reserved = Interlocked.Exchange(ref _reserved, 0);
            Interlocked.Exchange(ref _held, 0);
            if (reserved > 0)
                Interlocked.Add(ref budget._used, -reserved);
        }
    }

    /// <summary>
    /// A JSON answer's buffer: segments rented from the shared array pool (no garbage per answer, no copying as it
    /// grows; a query page of 25 documents grew an array 1 KB → 64 KB, 127 KB allocated per answer), charged to its
    /// request's lease beyond the first <c>initialCapacity</c> bytes. A body that stays within those (most answers: a
    /// counter, a PUT's etag) takes no lease: looking the lease up (request items, request services) was 2% of the
    /// server's CPU on 64-client counter increments. Dispose gives the segments back. Not thread-safe.
    /// </summary>
    public sealed class Writer(HttpContext context, int initialCapacity = 1024) : IBufferWriter<byte>, IDisposable
    {
        private const int MaxSegment = 64 * 1024;
        private List<(byte[] Array, int Length)>? _full;
        private byte[] _current = ArrayPool<byte>.Shared.Rent(initialCapacity);
        private int _written;
        private long _rented = initialCapacity, _charged = initialCapacity, _fullLength;
        private Lease? _lease;

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
