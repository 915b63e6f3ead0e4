namespace RavenLite.Server.Memory;

/// <summary>
/// The memory that requests may hold at once for what they build in memory — query results, JSON answers (which are
/// sent whole, with their Content-Length), the answers a multi_get collects (<see cref="Configuration.ServerOptions.MemoryBudgetMB"/>).
/// Each request charges its own lease (the HTTP layer makes one per request) as its buffers grow, in 1 MiB steps, and gives everything back
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
                    throw new UnavailableException(RavenExceptionTypes.LowMemory,
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
}
