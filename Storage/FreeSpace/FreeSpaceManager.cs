using System.Diagnostics;
namespace RavenLite.Storage.FreeSpace;

/// <summary>
/// Which data-file pages may be allocated. Invariants:
/// 1. Every page in [1, NextPage) is exactly one of: reachable from the root tree, free, pending.
/// 2. A page freed by transaction F stays pending until F is published and no live reader has a
///    snapshot older than F. It does not wait for a flush: a flush that overwrites a page the synced
///    state still reaches first saves its before-image (UndoFile), so the data file can always be
///    returned to the state its header names.
/// 3. Pages a transaction allocates and frees again are reusable at once inside it.
/// The free list is not persisted: opening rebuilds it from reachability (see docs/format/data-file.md).
/// Used only by the single writer (and the checker under the write lock); not thread-safe.
/// </summary>
internal sealed class FreeSpaceManager
{
    private readonly PageSet _free = new();
    private readonly List<(long FreedBy, long[] Pages)> _pending = [];
    private long _pendingCount;

    public FreeSpaceManager(long nextPage) => NextPage = nextPage;

    /// <summary>Pages in use or free: the data file's logical size in pages.</summary>
    public long NextPage { get; private set; }

    /// <summary>Free page numbers.</summary>
    public IReadOnlyCollection<long> Free => _free;

    /// <summary>Pages waiting for readers.</summary>
    public IEnumerable<long> Pending => _pending.SelectMany(e => e.Pages);

    /// <summary>Number of pages waiting for readers (read without the writer's lock: a point-in-time figure).</summary>
    public long PendingCount => Volatile.Read(ref _pendingCount);

    /// <summary>Number of free pages.</summary>
    public int FreeCount => _free.Count;

    /// <summary>Marks pages as free (rebuild at open).</summary>
    public void AddFree(long page) => _free.Add(page);

    /// <summary>Moves pending pages freed at or before <paramref name="txId"/> to the free set.</summary>
    public void ReleasePending(long txId)
    {
        int n = 0;
        long released = 0;
        while (n < _pending.Count && _pending[n].FreedBy <= txId)
        {
            _free.UnionWith(_pending[n].Pages);
            released += _pending[n].Pages.Length;
            n++;
        }
        if (n > 0)
        {
            _pending.RemoveRange(0, n);
            Volatile.Write(ref _pendingCount, _pendingCount - released);
        }
    }

    /// <summary>Begins a transaction's allocation scope.</summary>
    public Scope BeginScope() => new(this);

    /// <summary>One write transaction's allocations and frees; applied on commit, undone on rollback.</summary>
    internal sealed class Scope(FreeSpaceManager owner)
    {
        private readonly List<long> _taken = [];
        private readonly Stack<long> _local = new();
        private readonly List<long> _freed = [];
        private long _next = owner.NextPage;

        /// <summary>Pages in use or free when the transaction began: a page below it was taken from the free set (reused).</summary>
        public long StartNextPage { get; } = owner.NextPage;

        /// <summary>Pages in use or free after this transaction.</summary>
        public long NextPage => _next;

        /// <summary>Allocates <paramref name="count"/> contiguous pages.</summary>
        public long Allocate(int count)
        {
            if (count == 1)
            {
                if (_local.Count > 0)
                    return _local.Pop();
                if (owner._free.Count > 0)
                {
                    long p = owner._free.Min;
                    owner._free.Remove(p);
                    _taken.Add(p);
                    return p;
                }
            }
            else if (owner._free.Count >= count && owner._free.FindRun(count) is var runStart and >= 0)
            {
                for (long p = runStart; p < runStart + count; p++)
                {
                    owner._free.Remove(p);
                    _taken.Add(p);
                }
                return runStart;
            }
            long page = _next;
            _next += count;
            return page;
        }

        /// <summary>Frees pages. <paramref name="allocatedHere"/>: this transaction allocated them, so no one else can see them.</summary>
        public void Free(long page, int count, bool allocatedHere)
        {
            for (long p = page; p < page + count; p++)
            {
                Debug.Assert(!owner._free.Contains(p), "A page is never freed twice: a free page is reachable from no tree.");
                if (allocatedHere)
                    _local.Push(p);
                else
                    _freed.Add(p);
            }
        }

        /// <summary>Committed pages this transaction freed (they stay reachable from older snapshots).</summary>
        public IReadOnlyList<long> FreedPages => _freed;

        /// <summary>Applies the scope: local leftovers become free, visible frees become pending under <paramref name="txId"/>.</summary>
        public void Commit(long txId)
        {
            owner._free.UnionWith(_local);
            if (_freed.Count > 0)
            {
                owner._pending.Add((txId, _freed.ToArray()));
                Volatile.Write(ref owner._pendingCount, owner._pendingCount + _freed.Count);
            }
            owner.NextPage = _next;
        }

        /// <summary>Undoes the scope.</summary>
        public void Rollback() => owner._free.UnionWith(_taken);
    }
}
