using RavenLite.Storage.Platform;

namespace RavenLite.Storage.Paging;

/// <summary>
/// The data file (<c>data</c>): page N at byte N × PageSize, read through a shared read-only
/// mapping and written with pwrite by the flusher and recovery only. Growth preallocates with
/// fallocate. A larger mapping replaces the old one when the file outgrows it; old mappings stay
/// until dispose because readers may hold pointers into them. Format: docs/format/data-file.md.
/// </summary>
internal sealed unsafe class DataPager : IDisposable
{
    private readonly IStorageFile _file;
    private readonly StorageOptions _options;
    private readonly List<IMappedView> _views = [];
    private byte* _base;
    private long _mapCapacity;
    private readonly object _growLock = new(); // the committer and the flusher (and recovery) grow the file
    private long _length; // the file's length after the last growth: it never shrinks while open

    public DataPager(IStorageFile file, StorageOptions options)
    {
        _file = file;
        _options = options;
        _length = file.Length;
        Remap(Math.Max(options.InitialMapSize, _length));
    }

    /// <summary>Current file length in bytes.</summary>
    public long FileSize => Volatile.Read(ref _length);

    /// <summary>Address of a page in the mapping. The page must lie below the file length.</summary>
    public byte* GetPage(long pageNumber) => _base + pageNumber * StorageConstants.PageSize;

    /// <summary>
    /// Grows the file (and mapping) to hold at least <paramref name="pages"/> pages: by a growth step (the larger
    /// of <see cref="StorageOptions.DataFileGrowthStep"/> and an eighth of the file's size, up to 1 GiB), or when the disk
    /// has no room for that, by halving steps down to exactly what is needed.
    /// </summary>
    /// <exception cref="DiskFullException">not even the pages needed fit on the disk.</exception>
    /// <returns>Whether the file had to grow (and did).</returns>
    public bool EnsurePages(long pages)
    {
        long needed = pages * StorageConstants.PageSize;
        if (needed <= Volatile.Read(ref _length))
            return false; // every commit asks: no system call unless the file must grow
        lock (_growLock)
            Grow(needed);
        return true;
    }

    private void Grow(long needed)
    {
        long current = _file.Length;
        if (needed <= current)
        {
            if (current > _mapCapacity)
                Remap(Math.Max(current, _mapCapacity * 2)); // grown by a growth that failed part-way (ext4 keeps what it allocated)
            Volatile.Write(ref _length, current);
            return;
        }
        long step = Math.Max(_options.DataFileGrowthStep, Math.Min(current / 8, 1L << 30));
        long target = FileGrowth.Allocate(_file, current + step, needed, StorageConstants.PageSize,
            e => $"No space left on the device for the data file: '{_file.Path}' must grow from {current} to {needed} bytes. {e.Message}");
        if (target > _mapCapacity)
            Remap(Math.Max(target, _mapCapacity * 2));
        Volatile.Write(ref _length, target);
    }

    /// <summary>Writes a run of pages at its place.</summary>
    public void Write(long pageNumber, ReadOnlySpan<byte> pages) =>
        _file.Write(pageNumber * StorageConstants.PageSize, pages);

    /// <summary>fdatasync of the data file.</summary>
    public void Sync() => _file.Sync();

    /// <summary>Starts writing what was written so far (pacing, not durability: <see cref="IStorageFile.StartWriteback"/>).</summary>
    public void StartWriteback() => _file.StartWriteback();

    private void Remap(long capacity)
    {
        var view = _file.Map(capacity);
        _views.Add(view);
        _mapCapacity = Math.Min(view.Capacity, long.MaxValue / 2);
        _base = view.Pointer;
    }

    public void Dispose()
    {
        foreach (var v in _views)
            v.Dispose();
        _views.Clear();
        _file.Dispose();
    }
}
