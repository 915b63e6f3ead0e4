using System.Runtime.InteropServices;

namespace RavenLite.Storage.Paging;

/// <summary>
/// A run of pages in native memory: a page a write transaction modifies, and after commit the
/// committed copy readers use until the flusher has written it to the data file. Page-aligned so
/// its address can be handed out as a span for the life of a transaction.
/// </summary>
internal sealed unsafe class PageBuffer
{
    private readonly PagePool? _pool;

    public PageBuffer(long pageNumber, int pageCount, PagePool? pool = null)
    {
        PageNumber = pageNumber;
        PageCount = pageCount;
        if (pageCount == 1 && pool != null)
        {
            _pool = pool;
            Pointer = pool.Rent();
        }
        else
        {
            Pointer = (byte*)NativeMemory.AlignedAlloc((nuint)pageCount * StorageConstants.PageSize, 4096);
        }
    }

    /// <summary>First page number.</summary>
    public long PageNumber { get; }

    /// <summary>Pages in the run.</summary>
    public int PageCount { get; }

    /// <summary>For a copy-on-write copy, the page it was copied from (its content as of the previous transaction); 0 for a new page. The journal may record the copy as a diff against it.</summary>
    public long BasePage { get; set; }

    /// <summary>The later committed transaction that freed this page (0 while reachable from the newest state). A copy freed at or before the state being flushed is not written to the data file.</summary>
    public long FreedBy { get; set; }

    /// <summary>Transaction that committed this copy (0 while uncommitted).</summary>
    public long TxId { get; set; }

    /// <summary>Start of the run; null after <see cref="Free"/>.</summary>
    public byte* Pointer { get; private set; }

    /// <summary>Bytes in the run.</summary>
    public int Length => PageCount * StorageConstants.PageSize;

    /// <summary>The run's bytes.</summary>
    public ReadOnlySpan<byte> Span => new(Pointer, Length);

    /// <summary>Returns the memory. The caller guarantees no reader can still hold the pointer.</summary>
    public void Free()
    {
        if (Pointer != null)
        {
            if (_pool != null)
                _pool.Return(Pointer);
            else
                NativeMemory.AlignedFree(Pointer);
            Pointer = null;
        }
    }
}
