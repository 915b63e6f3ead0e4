using RavenLite.Storage.Platform;

namespace RavenLite.Storage.Paging;

/// <summary>
/// Single-page native buffers for copy-on-write copies and new pages, carved out of 2 MiB slabs
/// that the kernel may back with transparent huge pages (madvise MADV_HUGEPAGE). A transaction that
/// touches pages all over a large tree then misses the TLB and faults far less. Freed buffers are
/// reused. A slab whose pages are all free goes back to the OS only while more pages are free than
/// the pool may keep: <see cref="MaxPooled"/> (128 MiB), or the most pages in use at once during the
/// current or the previous <see cref="TrimWindowMs"/> window if that is more. Use rises and falls in
/// flush-sized waves (a flush frees thousands of copy-on-write pages at once, the next transactions
/// take them again); unmapping on every fall would make each rise fault in and zero fresh memory. Every environment of the process shares
/// <see cref="Shared"/>, so one opened after another closed reuses memory that is already faulted in
/// (fresh memory costs a fault and a kernel zero-fill per page). Thread-safe.
/// </summary>
internal sealed unsafe class PagePool : IDisposable
{
    public const int MaxPooled = 16384;
    public const int SlabBytes = 2 << 20;
    public const int PagesPerSlab = SlabBytes / StorageConstants.PageSize;

    /// <summary>How long a peak of use keeps its free pages pooled (it counts for this window and the next).</summary>
    public const long TrimWindowMs = 5000;

    /// <summary>The pool every environment uses (never disposed).</summary>
    public static PagePool Shared { get; } = new();

    private readonly Dictionary<nint, Slab> _slabs = [];
    private readonly List<Slab> _available = []; // slabs with a free page; the last one is rented from
    private readonly Func<long> _clockMs;
    private long _freePages, _peak, _previousPeak, _windowStart, _slabsMapped, _slabsUnmapped;
    private bool _disposed;

    /// <param name="clockMs">Milliseconds clock for the trim windows (tests pass their own); default <see cref="Environment.TickCount64"/>.</param>
    public PagePool(Func<long>? clockMs = null)
    {
        _clockMs = clockMs ?? (() => Environment.TickCount64);
        _windowStart = _clockMs();
    }

    /// <summary>Pages rented and not returned (under the lock).</summary>
    private long InUse => (long)_slabs.Count * PagesPerSlab - _freePages;

    private long _inUsePublished;

    /// <summary>Pages rented and not returned, as of the last rent or return (read without the lock; for flush pressure).</summary>
    public long PagesInUse => Volatile.Read(ref _inUsePublished);

    /// <summary>Free pages the pool keeps mapped (under the lock).</summary>
    private long Allowance => Math.Max(MaxPooled, Math.Max(_peak, _previousPeak));

    /// <summary>Slabs currently mapped (for tests and stats).</summary>
    public int SlabCount
    {
        get
        {
            lock (_slabs)
                return _slabs.Count;
        }
    }

    /// <summary>Slabs mapped and unmapped since the pool was created (fresh memory costs a fault and a zero-fill per page).</summary>
    public (long Mapped, long Unmapped) SlabTurnover
    {
        get
        {
            lock (_slabs)
                return (_slabsMapped, _slabsUnmapped);
        }
    }

    public byte* Rent()
    {
        lock (_slabs)
        {
            while (_available.Count > 0 && _available[^1].FreeCount == 0)
            {
                _available[^1].Available = false;
                _available.RemoveAt(_available.Count - 1);
            }
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_available.Count == 0)
            {
                var fresh = Slab.Map();
                _slabsMapped++;
                _slabs.Add((nint)fresh.Base, fresh);
                _available.Add(fresh);
                fresh.Available = true;
                _freePages += PagesPerSlab;
            }
            var slab = _available[^1];
            _freePages--;
            _peak = Math.Max(_peak, InUse);
            Volatile.Write(ref _inUsePublished, InUse);
            return slab.Base + (long)slab.Free[--slab.FreeCount] * StorageConstants.PageSize;
        }
    }

    public void Return(byte* page)
    {
        nint key = (nint)((long)page & ~(long)(SlabBytes - 1));
        lock (_slabs)
        {
            if (_disposed)
                return; // the memory went with the pool
            if (!_slabs.TryGetValue(key, out var slab))
                throw new InvalidOperationException("A page returned to the pool did not come from it.");
            slab.Free[slab.FreeCount++] = (ushort)((page - slab.Base) / StorageConstants.PageSize);
            _freePages++;
            Volatile.Write(ref _inUsePublished, InUse); // unmapping free slabs below leaves it unchanged
            if (RollWindow() && _freePages > Allowance)
            {
                TrimFreeSlabs();
                if (slab.Base == null)
                    return; // this page's slab was among those unmapped
            }
            if (slab.FreeCount == PagesPerSlab && _freePages > Allowance)
            {
                Unmap(slab);
                return;
            }
            if (!slab.Available)
            {
                // Behind the slab rented from now, so the nearly full slabs fill up first and the emptier ones can drain.
                _available.Insert(Math.Max(0, _available.Count - 1), slab);
                slab.Available = true;
            }
        }
    }

    /// <summary>Starts a new window when the current one is over; true if it did (under the lock).</summary>
    private bool RollWindow()
    {
        long now = _clockMs();
        if (now - _windowStart < TrimWindowMs)
            return false;
        // A peak counts for its own window and the next; after two quiet windows only current use counts.
        _previousPeak = now - _windowStart >= 2 * TrimWindowMs ? InUse : _peak;
        _peak = InUse;
        _windowStart = now;
        return true;
    }

    /// <summary>Unmaps fully free slabs until the free pages fit the allowance (under the lock).</summary>
    private void TrimFreeSlabs()
    {
        foreach (var slab in _slabs.Values.Where(s => s.FreeCount == PagesPerSlab).ToList())
        {
            if (_freePages <= Allowance)
                break;
            Unmap(slab);
        }
    }

    private void Unmap(Slab slab)
    {
        if (slab.Available)
            _available.Remove(slab);
        _slabs.Remove((nint)slab.Base);
        _freePages -= PagesPerSlab;
        _slabsUnmapped++;
        slab.Unmap();
    }

    public void Dispose()
    {
        lock (_slabs)
        {
            foreach (var slab in _slabs.Values)
                slab.Unmap();
            _slabs.Clear();
            _available.Clear();
            _freePages = 0;
            _disposed = true;
        }
    }

    private sealed class Slab
    {
        public byte* Base;
        public readonly ushort[] Free = new ushort[PagesPerSlab];
        public int FreeCount;
        public bool Available;

        /// <summary>Maps 2 MiB of anonymous memory at a 2 MiB boundary (maps twice that and trims) and asks for huge pages.</summary>
        public static Slab Map()
        {
            nuint span = 2 * (nuint)SlabBytes;
            nint raw = Native.mmap(0, span, Native.ProtRead | Native.ProtWrite, Native.MapPrivate | Native.MapAnonymous, -1, 0);
            if (raw == -1)
                throw new InsufficientMemoryException($"mmap of a {SlabBytes >> 20} MiB page slab failed (errno {System.Runtime.InteropServices.Marshal.GetLastPInvokeError()}).");
            nint aligned = (nint)(((long)raw + SlabBytes - 1) & ~(long)(SlabBytes - 1));
            if (aligned > raw)
                Native.munmap(raw, (nuint)(aligned - raw));
            nint tail = aligned + SlabBytes;
            nint end = raw + (nint)span;
            if (end > tail)
                Native.munmap(tail, (nuint)(end - tail));
            Native.madvise(aligned, SlabBytes, Native.MadvHugePage); // best effort: THP may be off
            var slab = new Slab { Base = (byte*)aligned, FreeCount = PagesPerSlab };
            for (int i = 0; i < PagesPerSlab; i++)
                slab.Free[i] = (ushort)(PagesPerSlab - 1 - i); // rented from the end: page 0 first
            return slab;
        }

        public void Unmap()
        {
            if (Base != null)
                Native.munmap((nint)Base, SlabBytes);
            Base = null;
        }
    }
}
