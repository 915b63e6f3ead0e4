using RavenLite.Storage.Platform;

namespace RavenLite.Storage.Paging;

/// <summary>
/// The data file (<c>data</c>): page N at byte N × PageSize, read through a shared read-only
/// mapping and written with pwrite by the flusher and recovery only. Growth preallocates with
/// fallocate. A larger mapping replaces the old one when the file outgrows it; old mappings stay
/// until dispose because readers may hold pointers into them. In an encrypted environment the file holds sealed pages:
/// writes seal, reads return the opened copy (<see cref="Encryption.EncryptedPages"/>). Format: docs/format/data-file.md.
/// </summary>
internal sealed unsafe class DataPager : IDisposable
{
    private readonly IStorageFile _file;
    private readonly StorageOptions _options;
    private readonly Encryption.EncryptedPages? _encrypted;
    private byte[] _sealScratch = [];
    private readonly List<IMappedView> _views = [];
    private byte* _base;
    private long _mapCapacity;
    private readonly object _growLock = new(); // the committer and the flusher (and recovery) grow the file
    private long _length; // the file's length after the last growth: it never shrinks while open

    public DataPager(IStorageFile file, StorageOptions options, Encryption.EncryptedPages? encrypted = null)
    {
        _file = file;
        _options = options;
        _encrypted = encrypted;
        _length = file.Length;
        Remap(Math.Max(options.InitialMapSize, _length));
    }

    /// <summary>Current file length in bytes.</summary>
    public long FileSize => Volatile.Read(ref _length);

    /// <summary>The sealed pages, for an encrypted environment; else null.</summary>
    public Encryption.EncryptedPages? Encrypted => _encrypted;

    /// <summary>
    /// A page's content (in an encrypted environment the opened copy — a whole overflow run when it starts one — or
    /// null when it does not authenticate). The page must lie below the file length.
    /// </summary>
    public byte* GetPage(long pageNumber) =>
        _encrypted == null ? MappedPage(pageNumber) : _encrypted.Get(pageNumber, MappedPage(pageNumber), (FileSize / StorageConstants.PageSize) - pageNumber);

    /// <summary>Address of a page in the mapping: its bytes as stored (sealed, in an encrypted environment).</summary>
    public byte* MappedPage(long pageNumber) => _base + pageNumber * StorageConstants.PageSize;

    /// <summary>Bytes of a page as the undo file keeps it: the page as stored, then its seal in an encrypted environment.</summary>
    public int ImageSize => StorageConstants.PageSize + (_encrypted == null ? 0 : Encryption.EncryptionKey.SealSize);

    /// <summary>Copies a page as stored (and its seal) into <paramref name="image"/> (<see cref="ImageSize"/> bytes).</summary>
    public void ReadImage(long pageNumber, Span<byte> image)
    {
        new ReadOnlySpan<byte>(MappedPage(pageNumber), StorageConstants.PageSize).CopyTo(image);
        _encrypted?.ReadSeals(pageNumber, image[StorageConstants.PageSize..]);
    }

    /// <summary>Writes back a page as <see cref="ReadImage"/> read it.</summary>
    public void WriteImage(long pageNumber, ReadOnlySpan<byte> image)
    {
        _file.Write(pageNumber * StorageConstants.PageSize, image[..StorageConstants.PageSize]);
        _encrypted?.WriteSeals(pageNumber, image[StorageConstants.PageSize..]);
    }

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
        {
            Grow(needed);
            _encrypted?.EnsurePages(FileSize / StorageConstants.PageSize);
        }
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

    /// <summary>Writes a run of pages at its place (sealed, in an encrypted environment). Not thread-safe: the flusher and recovery write.</summary>
    public void Write(long pageNumber, ReadOnlySpan<byte> pages)
    {
        if (_encrypted == null)
        {
            _file.Write(pageNumber * StorageConstants.PageSize, pages);
            return;
        }
        int count = pages.Length / StorageConstants.PageSize;
        int sealBytes = count * Encryption.EncryptionKey.SealSize;
        if (_sealScratch.Length < pages.Length + sealBytes)
            _sealScratch = GC.AllocateUninitializedArray<byte>(pages.Length + sealBytes, pinned: true);
        var sealedPages = _sealScratch.AsSpan(0, pages.Length);
        var seals = _sealScratch.AsSpan(pages.Length, sealBytes);
        _encrypted.Seal(pageNumber, pages, sealedPages, seals);
        _file.Write(pageNumber * StorageConstants.PageSize, sealedPages);
        _encrypted.WriteSeals(pageNumber, seals);
    }

    /// <summary>Writes a run of pages sealed already (<see cref="Encryption.EncryptedPages.Seal(Encryption.EncryptionKey, long, ReadOnlySpan{byte}, Span{byte}, Span{byte})"/>) and their seals.</summary>
    public void WriteSealed(long pageNumber, ReadOnlySpan<byte> sealedPages, ReadOnlySpan<byte> seals)
    {
        _file.Write(pageNumber * StorageConstants.PageSize, sealedPages);
        _encrypted!.WriteSeals(pageNumber, seals);
    }

    /// <summary>fdatasync of the data file (and of the seals of an encrypted environment).</summary>
    public void Sync()
    {
        _file.Sync();
        _encrypted?.Sync();
    }

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
        _encrypted?.Dispose();
    }
}
