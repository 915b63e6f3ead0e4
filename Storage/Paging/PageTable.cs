using System.Runtime.CompilerServices;

namespace RavenLite.Storage.Paging;

/// <summary>
/// Committed pages not yet written to the data file, by page number (one version per number:
/// copy-on-write never rewrites a page a live snapshot can reach, so the newest copy is the only
/// one any reader can ask for). Readers look here before the data file. The writer publishes at
/// commit; the flusher removes what it has synced; copies a later commit freed are removed as soon
/// as no snapshot can reach them (StorageEnvironment.ReleaseGarbage).
/// <para>
/// Laid out as a radix array: a top array with one slot per 64 page numbers, each pointing to a chunk that holds
/// the 64 pages' copy pointers and buffers (allocated when a page in it is published, dropped when it empties). A
/// lookup is two array reads and no hashing — it runs for every page a transaction reads, where a hash map costs
/// three dependent loads (hash, node, buffer). The memory is bounded by the pages waiting (a chunk per waiting page at worst, 1 KiB against the
/// page's 8 KiB) plus 8 bytes per 64 pages of the data file for the top array.
/// </para>
/// Thread-safe: lookups take no lock (a slot changes atomically between one valid copy, another, and none; a copy a
/// reader may still hold is freed only through the reader registry); changes take one short lock.
/// </summary>
internal sealed unsafe class PageTable
{
    private const int ChunkBits = 6;
    private const int ChunkSize = 1 << ChunkBits;

    private sealed class Chunk
    {
        public Pointers Pointers;
        public readonly PageBuffer?[] Buffers = new PageBuffer?[ChunkSize];
        public int Count;
    }

    [InlineArray(ChunkSize)]
    private struct Pointers
    {
        private nint _first;
    }

    private readonly object _lock = new();
    private Chunk?[] _top = new Chunk?[1024];
    private int _count;
    private long _pageCount;

    /// <summary>Number of page runs waiting for the flusher.</summary>
    public int Count => Volatile.Read(ref _count);

    /// <summary>Pages waiting for the flusher.</summary>
    public long PageCount => Interlocked.Read(ref _pageCount);

    /// <summary>The committed copy of a page, or null when it lives in the data file.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public byte* TryGet(long pageNumber) =>
        ChunkOf(pageNumber) is { } chunk ? (byte*)Volatile.Read(ref chunk.Pointers[(int)(pageNumber & (ChunkSize - 1))]) : null;

    /// <summary>The committed copy of a page as a buffer, or null.</summary>
    private PageBuffer? GetBuffer(long pageNumber) => ChunkOf(pageNumber)?.Buffers[pageNumber & (ChunkSize - 1)];

    /// <summary>The copy held for a page number as a buffer, or null (lock-free; it may be removed at any moment).</summary>
    public PageBuffer? Find(long pageNumber) => GetBuffer(pageNumber);

    /// <summary>The chunk holding a page number's slot, or null when none is allocated (lock-free).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private Chunk? ChunkOf(long pageNumber)
    {
        var top = Volatile.Read(ref _top);
        ulong hi = (ulong)pageNumber >> ChunkBits;
        return hi < (ulong)top.Length ? Volatile.Read(ref top[hi]) : null;
    }

    /// <summary>Makes a committed transaction's pages visible. Returns copies they replace (to retire).</summary>
    public List<PageBuffer> Publish(IEnumerable<PageBuffer> buffers, long txId)
    {
        var replaced = new List<PageBuffer>();
        lock (_lock)
        {
            foreach (var b in buffers)
            {
                b.TxId = txId;
                long page = b.PageNumber;
                long hi = page >> ChunkBits;
                if (hi >= _top.Length)
                {
                    var larger = new Chunk?[Math.Max(_top.Length * 2, hi + 1)];
                    _top.CopyTo(larger, 0);
                    Volatile.Write(ref _top, larger);
                }
                var chunk = _top[hi];
                if (chunk == null)
                {
                    chunk = new Chunk();
                    Volatile.Write(ref _top[hi], chunk);
                }
                int lo = (int)(page & (ChunkSize - 1));
                var old = chunk.Buffers[lo];
                chunk.Buffers[lo] = b;
                Volatile.Write(ref chunk.Pointers[lo], (nint)b.Pointer);
                if (old != null)
                {
                    replaced.Add(old);
                    _pageCount -= old.PageCount;
                }
                else
                {
                    chunk.Count++;
                    _count++;
                }
                _pageCount += b.PageCount;
            }
        }
        return replaced;
    }

    /// <summary>
    /// Records that transaction <paramref name="txId"/> freed these pages: their committed copies are
    /// garbage for every state from <paramref name="txId"/> on. Each copy so marked is added to <paramref name="garbage"/>.
    /// </summary>
    public void MarkFreed(IReadOnlyList<long> pages, long txId, Queue<PageBuffer> garbage)
    {
        if (Volatile.Read(ref _count) == 0)
            return;
        foreach (long p in pages)
        {
            if (GetBuffer(p) is { } b && b.FreedBy == 0 && b.TxId < txId)
            {
                b.FreedBy = txId;
                garbage.Enqueue(b);
            }
        }
    }

    /// <summary>Removes this copy if it is still the one held for its page number (not replaced or flushed meanwhile).</summary>
    public bool TryRemove(PageBuffer b)
    {
        lock (_lock)
            return RemoveLocked(b);
    }

    private bool RemoveLocked(PageBuffer b)
    {
        long hi = b.PageNumber >> ChunkBits;
        var chunk = hi < _top.Length ? _top[hi] : null;
        int lo = (int)(b.PageNumber & (ChunkSize - 1));
        if (chunk == null || !ReferenceEquals(chunk.Buffers[lo], b))
            return false;
        Volatile.Write(ref chunk.Pointers[lo], 0);
        chunk.Buffers[lo] = null;
        if (--chunk.Count == 0)
            Volatile.Write(ref _top[hi], null);
        _count--;
        _pageCount -= b.PageCount;
        return true;
    }

    /// <summary>Copies committed at or before <paramref name="txId"/>, in page order.</summary>
    public List<PageBuffer> SnapshotUpTo(long txId) => [.. Where(b => b.TxId <= txId)];

    /// <summary>Removes flushed copies unless a newer copy replaced them meanwhile. Returns the removed ones (to retire).</summary>
    public List<PageBuffer> Remove(List<PageBuffer> flushed)
    {
        var removed = new List<PageBuffer>();
        lock (_lock)
        {
            foreach (var b in flushed)
                if (RemoveLocked(b))
                    removed.Add(b);
        }
        return removed;
    }

    /// <summary>Every copy, in page order (for dispose and stats).</summary>
    public List<PageBuffer> All => Where(_ => true);

    private List<PageBuffer> Where(Func<PageBuffer, bool> predicate)
    {
        var result = new List<PageBuffer>();
        lock (_lock)
        {
            foreach (var chunk in _top)
            {
                if (chunk == null)
                    continue;
                foreach (var b in chunk.Buffers)
                    if (b != null && predicate(b))
                        result.Add(b);
            }
        }
        return result;
    }
}
