using RavenLite.Storage.Platform;

namespace RavenLite.Storage.Journal;

/// <summary>
/// Appends journal records (docs/format/journal.md). Files are preallocated to
/// <see cref="StorageOptions.JournalFileSize"/>; a record that does not fit the rest of the
/// current file starts the next one. Writing and syncing are separate steps, so a group of
/// records (group commit) costs one fdatasync. Files wholly before the synced position are recycled as
/// spares (renamed, reused later without reallocating) or deleted. Called by the single writer
/// (Write, SyncWritten — one committer at a time) and the flusher (RecycleBefore); an internal lock orders the two.
/// </summary>
internal sealed class JournalWriter : IDisposable
{
    private readonly IStorageFileSystem _fs;
    private readonly string _dir;
    private readonly StorageOptions _options;
    private readonly object _lock = new();
    private readonly SortedDictionary<long, IStorageFile> _open = [];
    private readonly List<IStorageFile> _unsynced = [];
    private IStorageFile? _current;
    // The current file's length, known from opening and allocating it. Not asked of the file per record: on Linux
    // 6.13+ (multigrain timestamps) an fstat before each write made the next write stamp a fresh ctime, so every
    // small commit's fdatasync also wrote the inode table block (a third of fill-sync's fdatasync in a profile).
    private long _currentLength;
    private long _zeroedTo = long.MaxValue; // in the current file: bytes from here on may still be unwritten extents (fresh files only)
    private readonly HashSet<long> _fresh = []; // files created empty (not recycled) ahead of becoming current: zero-filled when they do
    private readonly Queue<int> _reserved = new(); // worst-case lengths of records reserved (Reserve) and not yet written, in commit order
    private long _fullUntil; // Stopwatch timestamp: until then allocations ask for the minimum only
    /// <summary>After the disk refused space, allocations ask only for what they need for this long (no storm of fallocate calls).</summary>
    private static readonly long FullRetryTicks = System.Diagnostics.Stopwatch.Frequency / 5;
    private static readonly byte[] ZeroBlock = new byte[4096];

    public JournalWriter(IStorageFileSystem fs, string dir, StorageOptions options, long fileNumber, long offset)
    {
        _fs = fs;
        _dir = dir;
        _options = options;
        FileNumber = fileNumber;
        Position = offset;
    }

    /// <summary>
    /// Records from this size on are written around the page cache (<see cref="IStorageFile.WriteUncached"/>):
    /// copying a large record into the page cache can cost more than the device write itself when the cache has to
    /// take fresh memory, while O_DIRECT costs the device's write only. The journal is read back only by recovery,
    /// so caching it buys nothing. Bulk inserts commit records of about 1 MB, which this bound sends around the cache
    /// too (docs/benchmarks.md, bulk-insert).
    /// Smaller records stay buffered: a small O_DIRECT write waits for the device on its own.
    /// </summary>
    public const int UncachedRecordBytes = 256 << 10;

    /// <summary>
    /// A fresh journal file is zero-filled this far ahead of the records, in 4 KiB writes. Its space is
    /// fallocated (unwritten extents), and every fdatasync after a small record entered a new 4 KiB block
    /// converted an extent and wrote the inode synchronously. Zero-filled ahead, that conversion happens once
    /// per this many bytes. 4 KiB writes keep the page-cache folios small (a large zero write would make each
    /// small record write back a large folio). Recycled files were written before and are not zero-filled.
    /// </summary>
    public const int ZeroAheadBytes = 256 << 10;

    /// <summary>Number of the file the next record goes to (unless it must roll over).</summary>
    public long FileNumber { get; private set; }

    /// <summary>Offset the next record is written at.</summary>
    public long Position { get; private set; }

    /// <summary>Bytes written by appends since open.</summary>
    public long BytesWritten { get; private set; }

    /// <summary>fsyncs issued by appends since open.</summary>
    public long Syncs { get; private set; }

    /// <summary>
    /// Makes sure the journal has room, pre-allocated, for a record of up to <paramref name="length"/> bytes
    /// after the records reserved before it and not yet written (they are written in the order reserved):
    /// places them all, as <see cref="Write"/> would, and opens and allocates the files that takes. Called by the
    /// committer before a transaction is handed on, so that a full disk fails that commit cleanly
    /// (<see cref="DiskFullException"/>, nothing changed) instead of a journal write after later transactions
    /// were built on it. A record never needs more than its reservation: <see cref="Write"/> of the reserved
    /// records allocates nothing.
    /// </summary>
    /// <returns>Whether it took new space (created or grew a file) for it.</returns>
    /// <exception cref="DiskFullException">the file system has no room for it.</exception>
    public bool Reserve(int length)
    {
        lock (_lock)
        {
            bool allocated = false;
            if (_current == null)
            {
                OpenCurrent(FileNumber, length);
                allocated = true;
            }
            long file = FileNumber, pos = Position, fileLength = _currentLength;
            foreach (int r in _reserved)
                Place(r);
            Place(length);
            _reserved.Enqueue(length);
            return allocated;

            void Place(int n)
            {
                bool uncached = n >= UncachedRecordBytes;
                long End(long at) => uncached ? IStorageFile.UncachedEnd(at, n) : at + n;
                if (End(pos) > fileLength)
                {
                    if (pos > 0)
                    {
                        file++;
                        pos = 0;
                        fileLength = OpenOrCreate(file, End(0)).Length;
                        allocated = true;
                    }
                    if (End(0) > fileLength)
                    {
                        var f = _open[file];
                        AllocateWithFallback(f, RoundUp(End(0)), RoundUp(End(0)));
                        allocated = true;
                        fileLength = f.Length;
                        if (file == FileNumber)
                            _currentLength = fileLength;
                    }
                }
                pos += n;
            }
        }
    }

    /// <summary>Forgets every reservation not yet written (the environment failed: they will never be written).</summary>
    public void ClearReservations()
    {
        lock (_lock)
            _reserved.Clear();
    }

    private static long RoundUp(long bytes) => (bytes + 4095L) / 4096 * 4096;

    /// <summary>
    /// Grows <paramref name="file"/> to <paramref name="preferred"/> bytes, or when the disk is too full for that, to
    /// the largest of halving steps down to <paramref name="minimum"/> that fits.
    /// </summary>
    /// <exception cref="DiskFullException">not even <paramref name="minimum"/> fits.</exception>
    private void AllocateWithFallback(IStorageFile file, long preferred, long minimum)
    {
        if (file.Length >= minimum)
            return;
        // Moments after a refusal, ask for what is needed only (one call), not the whole ladder of sizes.
        long size = System.Diagnostics.Stopwatch.GetTimestamp() < Volatile.Read(ref _fullUntil) ? minimum : Math.Max(preferred, minimum);
        try
        {
            FileGrowth.Allocate(file, size, minimum, 4096, e => $"No space left on the device for the journal: '{file.Path}' needs {minimum} bytes. {e.Message}");
        }
        catch (DiskFullException)
        {
            Volatile.Write(ref _fullUntil, System.Diagnostics.Stopwatch.GetTimestamp() + FullRetryTicks);
            throw;
        }
    }

    /// <summary>Writes one record (not yet durable: see <see cref="SyncWritten"/>). Returns the end position.</summary>
    public (long File, long Offset) Write(ReadOnlySpan<byte> record)
    {
        lock (_lock)
        {
            _reserved.TryDequeue(out _);
            var file = _current ?? OpenCurrent(FileNumber, record.Length);
            bool uncached = record.Length >= UncachedRecordBytes;
            // An uncached write also zeroes the rest of its last 4 KiB block, so that much must fit the file too.
            int length = record.Length;
            long End(long at) => uncached ? IStorageFile.UncachedEnd(at, length) : at + length;
            if (End(Position) > _currentLength)
            {
                if (Position > 0)
                {
                    FileNumber++;
                    Position = 0;
                    file = OpenCurrent(FileNumber, record.Length);
                }
                if (End(0) > _currentLength)
                {
                    AllocateWithFallback(file, RoundUp(End(0)), RoundUp(End(0))); // a one-off oversized record: not worth zero-filling
                    _currentLength = file.Length;
                }
            }
            if (uncached)
            {
                file.WriteUncached(Position, record);
            }
            else
            {
                ZeroAhead(file, Position + record.Length);
                file.Write(Position, record);
            }
            if (!_unsynced.Contains(file))
                _unsynced.Add(file);
            Position += record.Length;
            BytesWritten += record.Length;
            return (FileNumber, Position);
        }
    }

    /// <summary>Makes every record written so far durable: one fdatasync per journal file written since the last call (normally one).</summary>
    public void SyncWritten()
    {
        IStorageFile[] files;
        lock (_lock)
        {
            files = [.. _unsynced];
            _unsynced.Clear();
        }
        // Outside the lock: the committer reserves space for the next records (Reserve) while this fsync runs. Only the
        // one committer writes and syncs, and a file is recycled only after a flush past it, which needs this sync first.
        foreach (var f in files)
        {
            f.Sync();
            Syncs++;
        }
    }

    /// <summary>
    /// In a fresh file, writes zeros from the first 4 KiB boundary at or after the written part up to
    /// <see cref="ZeroAheadBytes"/> past <paramref name="end"/> (within the file). Never touches a block
    /// that holds record bytes: the block the next record starts in was written by the records before it.
    /// </summary>
    private void ZeroAhead(IStorageFile file, long end)
    {
        if (end <= _zeroedTo)
            return;
        long from = (Math.Max(_zeroedTo, Position) + 4095) / 4096 * 4096;
        long to = Math.Min(_currentLength, (end + ZeroAheadBytes + 4095) / 4096 * 4096);
        for (long at = from; at + ZeroBlock.Length <= to; at += ZeroBlock.Length)
            file.Write(at, ZeroBlock);
        _zeroedTo = Math.Max(from, to);
    }

    /// <summary>Makes file <paramref name="number"/> the current one (opening or creating it) and records its length and how far it is zero-filled.</summary>
    private IStorageFile OpenCurrent(long number, long recordLength)
    {
        var f = OpenOrCreate(number, recordLength);
        _current = f;
        _currentLength = f.Length;
        // A recycled or existing file was written before: its extents are written already.
        _zeroedTo = _fresh.Remove(number) ? 0 : long.MaxValue;
        return f;
    }

    /// <summary>
    /// Opens journal file <paramref name="number"/>, creating it (from a spare when there is one) with
    /// <see cref="StorageOptions.JournalFileSize"/> bytes, or less when the disk is short of space, but at least
    /// <paramref name="recordLength"/>. A file this creates empty and then cannot allocate is deleted again.
    /// </summary>
    private IStorageFile OpenOrCreate(long number, long recordLength)
    {
        if (_open.TryGetValue(number, out var f))
            return f;
        string path = JournalFileNames.For(_dir, number);
        long minimum = RoundUp(Math.Max(recordLength, 1));
        long size = Math.Max(_options.JournalFileSize, minimum);
        bool fresh = false;
        if (!_fs.FileExists(path))
        {
            string? spare = _fs.ListFiles(_dir).FirstOrDefault(JournalFileNames.IsSpare);
            if (spare != null)
                _fs.RenameFile(Path.Combine(_dir, spare), path);
            else
                fresh = true;
        }
        f = _fs.OpenFile(path, create: true);
        try
        {
            // fallocate, not a zero-fill of the whole file: on Linux 6.x a zero-fill in large writes leaves large
            // page-cache folios, and then every small record dirties (and fdatasync writes) a whole folio instead of
            // one 4 KiB page. ZeroAhead fills in 4 KiB writes instead.
            AllocateWithFallback(f, size, minimum);
            // Also for a file found here but not opened before (created, or renamed from a spare, by an attempt that
            // then found the disk full): its directory entry must be durable before records in it are acknowledged.
            _fs.SyncDirectory(_dir);
        }
        catch
        {
            f.Dispose();
            if (fresh)
            {
                try
                {
                    _fs.DeleteFile(path); // an empty file would later be taken for one written before (no zero-fill)
                }
                catch (IOException)
                {
                    // Left behind: it is opened (and allocated) as an existing file next time.
                }
            }
            throw;
        }
        if (fresh)
            _fresh.Add(number);
        _open[number] = f;
        return f;
    }

    /// <summary>Recycles every journal file numbered below <paramref name="firstNeeded"/>: its records are all in the synced data file.</summary>
    public void RecycleBefore(long firstNeeded)
    {
        lock (_lock)
        {
            var names = _fs.ListFiles(_dir);
            int spares = names.Count(JournalFileNames.IsSpare);
            foreach (string name in names)
            {
                if (!JournalFileNames.TryParse(name, out long n) || n >= firstNeeded || n == FileNumber)
                    continue;
                if (_open.Remove(n, out var f))
                {
                    _unsynced.Remove(f);
                    f.Dispose();
                }
                string path = Path.Combine(_dir, name);
                if (spares < _options.MaxRecycledJournals)
                {
                    _fs.RenameFile(path, Path.Combine(_dir, $"spare-{n}.recycle"));
                    spares++;
                }
                else
                {
                    _fs.DeleteFile(path);
                }
            }
        }
    }

    /// <summary>
    /// Deletes the spare files (recycled journals kept for reuse): at a clean close, where the data file holds every
    /// record, their space goes back to the volume; the next open allocates journal files afresh.
    /// </summary>
    public void DeleteSpares()
    {
        lock (_lock)
            foreach (string name in _fs.ListFiles(_dir).Where(JournalFileNames.IsSpare))
                _fs.DeleteFile(Path.Combine(_dir, name));
    }

    public void Dispose()
    {
        lock (_lock)
        {
            foreach (var f in _open.Values)
                f.Dispose();
            _open.Clear();
            _current = null;
        }
    }
}
