using System.Buffers.Binary;
using System.Collections.Concurrent;
using RavenLite.Storage.Paging;
using RavenLite.Storage.Platform;

namespace RavenLite.Storage.Encryption;

/// <summary>
/// The pages of an encrypted environment (docs/format/data-file.md "Encrypted environments"): the data file holds each
/// page sealed on its own (<see cref="EncryptionKey"/>, bound to its page number), and the file <c>seals</c> holds each
/// page's nonce and tag at <c>page × 40</c>. Written by the flusher and recovery (sealing as they write); read through
/// a cache of opened pages: a page is opened on its first read and kept, so hot pages are decrypted once — the
/// memory-mapped view of an unencrypted environment is ciphertext here. An overflow run is opened whole into one buffer
/// (readers see its value contiguous, as through the mapping). A cached page is dropped when the data file's copy is
/// rewritten, and the oldest go when the cache passes its size; either way its memory is returned only once no
/// transaction that might hold its address is live (<c>retire</c>, the reader registry). Thread-safe.
/// </summary>
internal sealed unsafe class EncryptedPages : IDisposable
{
    private readonly EncryptionKey _key;
    private readonly IStorageFile _seals;
    private readonly PageTable _opened = new();
    private readonly ConcurrentQueue<PageBuffer> _order = new();
    private readonly long _capacityPages;
    private readonly PagePool _pool;
    private readonly Action<List<PageBuffer>> _retire;
    private readonly object _growLock = new();
    private long _sealsLength;
    private long _opens;

    public EncryptedPages(EncryptionKey key, IStorageFile seals, long capacityBytes, PagePool pool, Action<List<PageBuffer>> retire)
    {
        _key = key;
        _seals = seals;
        _capacityPages = Math.Max(64, capacityBytes / StorageConstants.PageSize);
        _pool = pool;
        _retire = retire;
        _sealsLength = seals.Length;
    }

    /// <summary>Pages opened (decrypted) from the data file since open.</summary>
    public long Opens => Interlocked.Read(ref _opens);

    /// <summary>Pages held opened.</summary>
    public long CachedPages => _opened.PageCount;

    /// <summary>Makes room for the seals of <paramref name="pages"/> pages.</summary>
    public void EnsurePages(long pages)
    {
        long needed = pages * EncryptionKey.SealSize;
        if (needed <= Volatile.Read(ref _sealsLength))
            return;
        lock (_growLock)
        {
            long current = _seals.Length;
            if (needed > current)
            {
                long step = Math.Max(1L << 20, current / 8);
                current = FileGrowth.Allocate(_seals, current + step, needed, 4096,
                    e => $"No space left on the device for the page seals: '{_seals.Path}' must grow to {needed} bytes. {e.Message}");
            }
            Volatile.Write(ref _sealsLength, current);
        }
    }

    /// <summary>
    /// The opened content of page <paramref name="pageNumber"/> (a whole overflow run when it starts one), whose sealed
    /// copy is at <paramref name="sealedPage"/> in the mapping with <paramref name="availablePages"/> pages from it to the
    /// file's end; null when it does not authenticate (damaged, or sealed under another key).
    /// </summary>
    public byte* Get(long pageNumber, byte* sealedPage, long availablePages)
    {
        byte* cached = _opened.TryGet(pageNumber);
        if (cached != null)
            return cached; // the hot path: no counter, no lock
        Span<byte> seal = stackalloc byte[EncryptionKey.SealSize];
        var first = new PageBuffer(pageNumber, 1, _pool);
        if (!OpenPage(pageNumber, sealedPage, first.Pointer, seal))
        {
            first.Free();
            return null;
        }
        var buffer = first;
        var header = (PageHeader*)first.Pointer;
        if ((header->Flags & PageFlags.Overflow) != 0 && header->OverflowSize > StorageConstants.PageSize - PageHeader.SizeOf)
        {
            long runPages = (PageHeader.SizeOf + header->OverflowSize + StorageConstants.PageSize - 1) / StorageConstants.PageSize;
            if (runPages > availablePages || runPages > int.MaxValue)
            {
                first.Free();
                return null; // a header that authenticated cannot say this; refuse rather than read past the file
            }
            buffer = new PageBuffer(pageNumber, (int)runPages);
            new ReadOnlySpan<byte>(first.Pointer, StorageConstants.PageSize).CopyTo(new Span<byte>(buffer.Pointer, StorageConstants.PageSize));
            first.Free();
            for (long i = 1; i < runPages; i++)
            {
                if (!OpenPage(pageNumber + i, sealedPage + (i * StorageConstants.PageSize), buffer.Pointer + (i * StorageConstants.PageSize), seal))
                {
                    buffer.Free();
                    return null;
                }
            }
        }
        Interlocked.Add(ref _opens, buffer.PageCount);
        var replaced = _opened.Publish([buffer], 0);
        if (replaced.Count > 0)
            _retire(replaced); // another reader opened it at the same time: its copy may be in use
        _order.Enqueue(buffer);
        if (_opened.PageCount > _capacityPages || _order.Count > 2 * _capacityPages)
            Evict();
        return buffer.Pointer;
    }

    private bool OpenPage(long pageNumber, byte* sealedPage, byte* plain, Span<byte> seal)
    {
        if (_seals.Read(pageNumber * EncryptionKey.SealSize, seal) < seal.Length)
            return false;
        Span<byte> boundTo = stackalloc byte[sizeof(long)];
        BinaryPrimitives.WriteInt64LittleEndian(boundTo, pageNumber);
        return _key.Open(new ReadOnlySpan<byte>(sealedPage, StorageConstants.PageSize), seal, new Span<byte>(plain, StorageConstants.PageSize), boundTo);
    }

    /// <summary>
    /// Drops the oldest opened pages down to seven eighths of the capacity (the order also remembers pages dropped
    /// since, when their data-file copy changed: those go from it too).
    /// </summary>
    private void Evict()
    {
        var dropped = new List<PageBuffer>();
        long target = _capacityPages / 8 * 7;
        while ((_opened.PageCount > target || _order.Count > _capacityPages) && _order.TryDequeue(out var oldest))
            if (_opened.TryRemove(oldest))
                dropped.Add(oldest);
        if (dropped.Count > 0)
            _retire(dropped);
    }

    /// <summary>Seals <paramref name="pages"/> (a run starting at <paramref name="pageNumber"/>) into <paramref name="sealedPages"/> and <paramref name="seals"/>.</summary>
    public void Seal(long pageNumber, ReadOnlySpan<byte> pages, Span<byte> sealedPages, Span<byte> seals) => Seal(_key, pageNumber, pages, sealedPages, seals);

    /// <summary>Seals a run of pages with <paramref name="key"/>, each bound to its page number (a restore writes them so too).</summary>
    public static void Seal(EncryptionKey key, long pageNumber, ReadOnlySpan<byte> pages, Span<byte> sealedPages, Span<byte> seals)
    {
        Span<byte> boundTo = stackalloc byte[sizeof(long)];
        int count = pages.Length / StorageConstants.PageSize;
        for (int i = 0; i < count; i++)
        {
            BinaryPrimitives.WriteInt64LittleEndian(boundTo, pageNumber + i);
            key.Seal(pages.Slice(i * StorageConstants.PageSize, StorageConstants.PageSize), sealedPages.Slice(i * StorageConstants.PageSize, StorageConstants.PageSize),
                seals.Slice(i * EncryptionKey.SealSize, EncryptionKey.SealSize), boundTo);
        }
    }

    /// <summary>Writes the seals of a run of pages written to the data file, and forgets what was opened of them.</summary>
    public void WriteSeals(long pageNumber, ReadOnlySpan<byte> seals)
    {
        _seals.Write(pageNumber * EncryptionKey.SealSize, seals);
        Forget(pageNumber, seals.Length / EncryptionKey.SealSize);
    }

    /// <summary>Reads the seals of a run of pages.</summary>
    public void ReadSeals(long pageNumber, Span<byte> seals)
    {
        if (_seals.Read(pageNumber * EncryptionKey.SealSize, seals) < seals.Length)
            seals[Math.Max(0, (int)(_seals.Length - (pageNumber * EncryptionKey.SealSize)))..].Clear();
    }

    /// <summary>Drops the opened copies of pages whose data-file copy changes.</summary>
    private void Forget(long pageNumber, int count)
    {
        List<PageBuffer>? dropped = null;
        for (long p = pageNumber; p < pageNumber + count; p++)
        {
            if (_opened.Find(p) is { } b && _opened.TryRemove(b))
                (dropped ??= []).Add(b);
        }
        if (dropped != null)
            _retire(dropped);
    }

    /// <summary>fdatasync of the seals.</summary>
    public void Sync() => _seals.Sync();

    public void Dispose()
    {
        foreach (var b in _opened.All)
            b.Free();
        _seals.Dispose();
    }
}
