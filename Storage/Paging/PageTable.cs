using System.Collections.Concurrent;

namespace RavenLite.Storage.Paging;

/// <summary>
/// Committed pages not yet written to the data file, by page number (one version per number:
/// copy-on-write never rewrites a page a live snapshot can reach, so the newest copy is the only
/// one any reader can ask for). Readers look here before the data file. The writer publishes at
/// commit; the flusher removes what it has synced; copies a later commit freed are removed as soon
/// as no snapshot can reach them (StorageEnvironment.ReleaseGarbage). Thread-safe.
/// </summary>
internal sealed unsafe class PageTable
{
    private readonly ConcurrentDictionary<long, PageBuffer> _pages = new();
    private int _count;
    private long _pageCount;

    /// <summary>Number of page runs waiting for the flusher.</summary>
    public int Count => Volatile.Read(ref _count);

    /// <summary>Pages waiting for the flusher.</summary>
    public long PageCount => Interlocked.Read(ref _pageCount);

    /// <summary>The committed copy of a page, or null when it lives in the data file.</summary>
    public byte* TryGet(long pageNumber) =>
        Volatile.Read(ref _count) != 0 && _pages.TryGetValue(pageNumber, out var b) ? b.Pointer : null;

    /// <summary>Makes a committed transaction's pages visible. Returns copies they replace (to retire).</summary>
    public List<PageBuffer> Publish(IEnumerable<PageBuffer> buffers, long txId)
    {
        var replaced = new List<PageBuffer>();
        foreach (var b in buffers)
        {
            b.TxId = txId;
            PageBuffer? old = null;
            _pages.AddOrUpdate(b.PageNumber, b, (_, prev) => { old = prev; return b; });
            if (old != null)
            {
                replaced.Add(old);
                Interlocked.Add(ref _pageCount, -old.PageCount);
            }
            else
            {
                Interlocked.Increment(ref _count);
            }
            Interlocked.Add(ref _pageCount, b.PageCount);
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
            if (_pages.TryGetValue(p, out var b) && b.FreedBy == 0 && b.TxId < txId)
            {
                b.FreedBy = txId;
                garbage.Enqueue(b);
            }
        }
    }

    /// <summary>Removes this copy if it is still the one held for its page number (not replaced or flushed meanwhile).</summary>
    public bool TryRemove(PageBuffer b)
    {
        if (!_pages.TryRemove(new KeyValuePair<long, PageBuffer>(b.PageNumber, b)))
            return false;
        Interlocked.Decrement(ref _count);
        Interlocked.Add(ref _pageCount, -b.PageCount);
        return true;
    }

    /// <summary>Copies committed at or before <paramref name="txId"/>.</summary>
    public List<PageBuffer> SnapshotUpTo(long txId) =>
        _pages.Values.Where(b => b.TxId <= txId).OrderBy(b => b.PageNumber).ToList();

    /// <summary>Removes flushed copies unless a newer copy replaced them meanwhile. Returns the removed ones (to retire).</summary>
    public List<PageBuffer> Remove(List<PageBuffer> flushed)
    {
        var removed = new List<PageBuffer>();
        foreach (var b in flushed)
            if (TryRemove(b))
                removed.Add(b);
        return removed;
    }

    /// <summary>Every copy (for dispose).</summary>
    public ICollection<PageBuffer> All => _pages.Values;
}
