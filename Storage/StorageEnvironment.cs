using System.Buffers;
using System.Diagnostics;
using RavenLite.Storage.Checking;
using RavenLite.Storage.Debugging;
using RavenLite.Storage.FreeSpace;
using RavenLite.Storage.Journal;
using RavenLite.Storage.Paging;
using RavenLite.Storage.Platform;
using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage;

/// <summary>
/// A storage environment: one directory (or a memory file system) holding a memory-mapped data
/// file, a two-copy header and a journal. Invariants:
/// 1. Any number of read transactions run beside at most one write transaction; each read
///    transaction sees exactly the state committed when it began.
/// 2. A commit writes exactly one journal record; with <see cref="DurabilityMode.Sync"/> it
///    returns only after that record is on stable storage.
/// 3. The data file plus the header form a consistent state as of the header's LastSyncedTxId,
///    or the undo file gives it back: before a flush overwrites a page below the synced state's
///    end, that page's before-image is synced in the undo file. Reuse of a freed page waits until
///    every live reader is past the freeing transaction (see <see cref="FreeSpaceManager"/>).
/// 4. Opening replays the journal after the header's state (<see cref="JournalRecovery"/>).
/// 5. After an I/O error on the journal or the data file no write is acknowledged until reopen.
/// State diagram of a commit (docs/architecture.md): Active -(WriteTransaction.Commit)-> Journaled
/// -(PageTable.Publish)-> Visible -(Flush: data write + fsync + header)-> Synced -(RecycleBefore)-> journal space reused.
/// Thread-safety: all public members are thread-safe; transactions themselves are single-threaded.
/// </summary>
public sealed unsafe partial class StorageEnvironment : IDisposable
{
    private const int LargeRecordBytes = 4 << 20;
    private byte[] _sampleBuffer = [];
    private readonly StorageOptions _options;
    private readonly IStorageFileSystem _fs;
    private readonly string _journalDir;
    private readonly HeaderFile _headers;
    private readonly DataPager _data;
    private readonly JournalWriter _journal;
    private readonly PageTable _pageTable = new();
    private readonly PagePool _pool = PagePool.Shared;
    private readonly Queue<PageBuffer> _garbage = new(); // committed copies freed by a later commit, in freeing order (ReleaseGarbage)
    private readonly UndoFile _undo;
    private long _syncedNextPage; // NextPage of the synced state: pages below it that a flush overwrites get before-images first (UndoFile)
    private long _reusedPages, _reusedBeforeLastFlush; // reused (not appended) pages committed since the last flush took its state, and before it (ReserveDataPages)
    private long _unpublishedPages; // pages of commits queued for the journal, not yet in the page table
    private readonly ReaderRegistry _registry = new();
    private readonly FreeSpaceManager _free;
    private readonly SemaphoreSlim _writeLock = new(1, 1);
    private readonly object _flushLock = new();
    private readonly AutoResetEvent _flushSignal = new(false);
    private readonly CancellationTokenSource _stop = new();
    private readonly Thread? _flusher;
    private volatile EnvironmentState _state;
    private long _syncedTx;
    private long _headerSequence;
    private volatile Exception? _failure;
    private volatile bool _checksums = true; // false while a format-2 environment opens (its pages have none yet)
    private readonly Paging.VerifiedPages _verified = new();
    private volatile DiskFullException? _journalFull, _dataFull, _flushFull; // the disk refused a commit journal / data-file space, or a flush; each until its next attempt succeeds
    private const int MaxPooledPayloads = 4;
    private const int MaxPooledPayloadBytes = 64 << 20;
    private volatile EnvironmentState _writerState;
    private readonly object _commitLock = new();
    private readonly List<PendingCommit> _commitQueue = [];
    private readonly List<byte[]> _payloadPool = [];
    private readonly System.Collections.Concurrent.ConcurrentDictionary<long, PageBuffer> _unpublished = new();
    private bool _commitWorkerActive;
    private byte[] _recordBuffer = [];
    private byte[] _sealedRecordBuffer = []; // an encrypted environment's sealed record (journal side only)
    private long _commits, _flushes, _dataSyncs, _uncompressed, _compressed, _journalBytes, _journalSyncs;
    private const int RecentRecords = 64;
    private readonly Queue<Debugging.JournalRecordInfo> _recentRecords = new(); // the latest records, for GetLayout
    private int _disposed;

    // Kept whole: opening in order (header, undo restore, recovery, format upgrade, flusher), each step's
    // failure closing what the earlier ones opened.
    private StorageEnvironment(StorageOptions options)
    {
        _options = options;
        _fs = options.FileSystem;
        string dir = options.Directory;
        _journalDir = Path.Combine(dir, "journal");
        _fs.CreateDirectory(dir);
        _fs.CreateDirectory(_journalDir);

        _headers = HeaderFile.Open(_fs, Path.Combine(dir, "headers"), out var existing);
        try
        {
            var encrypted = OpenEncryption(options, dir, existing);
            _data = new DataPager(_fs.OpenFile(Path.Combine(dir, "data"), create: true), options, encrypted);
            FileHeader header;
            if (existing is { } h)
            {
                header = h;
                _data.EnsurePages(header.NextPage);
            }
            else
            {
                header = new FileHeader { Sequence = 1, LastSyncedTxId = 0, NextPage = 1, JournalFileNumber = 1, JournalOffset = 0 };
                _data.EnsurePages(1);
                _data.Sync();
                _headers.Write(header);
                _fs.SyncDirectory(dir);
            }
            _headerSequence = header.Sequence;
            _undo = UndoFile.Open(_fs, Path.Combine(dir, "undo"), _data.ImageSize);
            UndoPagesRestored = _undo.Restore(header.Sequence, header.LastSyncedTxId, (page, image) =>
            {
                _data.EnsurePages(page + 1);
                _data.WriteImage(page, image);
            });
            if (UndoPagesRestored > 0)
                _data.Sync(); // the header's state is whole again before the journal is replayed onto it
            int version = existing is { } e ? e.FormatVersion : StorageConstants.FormatVersion;
            _checksums = version >= StorageConstants.FormatVersion;

            var target = new RecoveryTarget(_data, _checksums, Path.Combine(dir, "data"));
            var result = JournalRecovery.Run(_fs, _journalDir, header, target, options.EncryptionKey);
            RecoveredTransactions = result.RecordsReplayed;
            RecoveryNote = result.TailNote;
            if (result.RecordsReplayed > 0)
            {
                // Replayed pages may overwrite pages the header's state still uses (freed pages are reused before a
                // flush): their before-images go to the undo file first, as in a flush, so that a crash while they are
                // written leaves a state the next open returns to exactly, and replays again.
                var below = target.Pages.Keys.Where(p => p < header.NextPage).Order().ToList();
                if (below.Count > 0)
                    _undo.Save(header.Sequence, header.LastSyncedTxId, below, _data.ReadImage);
                target.WriteAll();
                _data.EnsurePages(result.NextPage);
                _data.Sync();
                header = new FileHeader
                {
                    FormatVersion = version, // format 3 only once every page carries its checksum (below)
                    Sequence = ++_headerSequence,
                    LastSyncedTxId = result.LastTxId,
                    NextPage = result.NextPage,
                    RootTree = result.RootTree,
                    JournalFileNumber = result.EndFile,
                    JournalOffset = result.EndOffset,
                };
                _headers.Write(header);
            }
            _syncedTx = header.LastSyncedTxId;
            _syncedNextPage = header.NextPage;
            _state = _writerState = new EnvironmentState(header.LastSyncedTxId, header.RootTree, header.NextPage, header.JournalFileNumber, header.JournalOffset);
            _journal = new JournalWriter(_fs, _journalDir, options, header.JournalFileNumber, header.JournalOffset);
            _journal.RecycleBefore(header.JournalFileNumber);
            _free = RebuildFreeSpace(); // reads every tree page: in format 3, verifies each one
            if (version < StorageConstants.FormatVersion)
            {
                StampEveryPage();
                header.FormatVersion = StorageConstants.FormatVersion;
                header.Sequence = ++_headerSequence;
                _headers.Write(header);
            }
        }
        catch
        {
            _undo?.Dispose();
            _data?.Dispose();
            _headers.Dispose();
            throw;
        }
        if (options.BackgroundFlush)
        {
            _flusher = new Thread(FlushLoop) { IsBackground = true, Name = "RavenLite storage flusher" };
            _flusher.Start();
        }
    }

    /// <summary>
    /// The sealed pages of an encrypted environment, or null for an unencrypted one; refuses a key that is not the
    /// environment's, a key for an unencrypted environment and an encrypted environment without its key. A new
    /// environment with a key is an encrypted one: every header carries the key's check value.
    /// </summary>
    private Encryption.EncryptedPages? OpenEncryption(StorageOptions options, string dir, FileHeader? existing)
    {
        var key = options.EncryptionKey;
        bool encrypted = existing is { } h ? !h.KeyCheck.IsEmpty : key != null;
        if (encrypted && key == null)
            throw new StorageEncryptionException($"The environment at '{dir}' is encrypted: it opens only with its encryption key, and none was given.");
        if (!encrypted && key != null)
            throw new StorageEncryptionException($"The environment at '{dir}' is not encrypted, but an encryption key was given: it would not protect data written before.");
        if (key == null)
            return null;
        var check = new KeyCheckValue();
        key.Check(check);
        if (existing is { } e && !((ReadOnlySpan<byte>)e.KeyCheck).SequenceEqual(check))
            throw new StorageEncryptionException($"The encryption key given is not the key of the environment at '{dir}'.");
        _headers.KeyCheck = check;
        return new Encryption.EncryptedPages(key, _fs.OpenFile(Path.Combine(dir, "seals"), create: true), options.OpenedPagesCacheBytes, _pool, _registry.Retire);
    }

    /// <summary>Opens (creating when empty) the environment described by <paramref name="options"/>, running recovery.</summary>
    /// <exception cref="StorageCorruptionException">the files are not a valid environment.</exception>
    public static StorageEnvironment Open(StorageOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        return new StorageEnvironment(options);
    }

    /// <summary>Options it was opened with.</summary>
    public StorageOptions Options => _options;

    /// <summary>Journal records replayed when it opened.</summary>
    public int RecoveredTransactions { get; }

    /// <summary>Before-images written back from the undo file when it opened (a flush was cut short): 0 normally.</summary>
    public int UndoPagesRestored { get; }

    /// <summary>Why recovery stopped where it did (for example a torn tail), or null.</summary>
    public string? RecoveryNote { get; }

    /// <summary>The failure that stopped writes, or null.</summary>
    public Exception? Failure => _failure;

    /// <summary>
    /// While the disk is full for this environment: the refusal, of journal space (commits fail with
    /// <see cref="DiskFullException"/>) or of data-file growth (flushes wait, the journal keeps everything and grows).
    /// Null again after the next commit or flush that finds room; nothing needs reopening.
    /// </summary>
    public DiskFullException? DiskFull
    {
        get
        {
            var full = _journalFull ?? _dataFull ?? _flushFull;
            if (full != null && _fs is DiskFileSystem && full.BytesNeeded > 0)
            {
                // The volume has room again for what was refused: the condition is over, even before a write needs it
                // (a write that fits in space already allocated proves nothing either way).
                try
                {
                    if (new DriveInfo(_options.Directory).AvailableFreeSpace >= full.BytesNeeded)
                    {
                        _journalFull = _dataFull = _flushFull = null;
                        return null;
                    }
                }
                catch (Exception e) when (e is IOException or UnauthorizedAccessException or ArgumentException)
                {
                    // Cannot tell: keep reporting the refusal.
                }
            }
            return full;
        }
    }

    /// <summary>Id of the last committed transaction.</summary>
    public long LastCommittedTxId => _state.TxId;

    /// <summary>Id of the last transaction synced into the data file.</summary>
    public long LastSyncedTxId => Interlocked.Read(ref _syncedTx);

    internal EnvironmentState CurrentState => _state;

    /// <summary>The newest committed state, durable or not: what the next write transaction starts from.</summary>
    internal EnvironmentState WriterState => _writerState;

    internal FreeSpaceManager FreeSpace => _free;

    internal SemaphoreSlim WriteLock => _writeLock;

    internal PagePool Pool => _pool;

    /// <summary>Micro-benchmarks: keep a copy of the next records' uncompressed payloads in <see cref="LastRecordPayload"/>.</summary>
    internal bool CaptureRecordPayloads { get; set; }

    internal byte[]? LastRecordPayload { get; private set; }

    /// <summary>Begins a snapshot read transaction. Cheap; never blocks on the writer.</summary>
    public ReadTransaction ReadTransaction()
    {
        ThrowIfDisposed();
        EnvironmentState? state = null;
        var reg = _registry.Register(() => (state = _state).TxId);
        return new ReadTransaction(this, reg, state!);
    }

    /// <summary>
    /// A second read transaction on <paramref name="snapshot"/>'s snapshot, for another thread (a transaction is used
    /// from one thread at a time). End it before <paramref name="snapshot"/>: the page copies retired since that one
    /// began are kept for it, not for this one.
    /// </summary>
    public ReadTransaction ReadTransaction(ReadTransaction snapshot)
    {
        ThrowIfDisposed();
        ArgumentNullException.ThrowIfNull(snapshot);
        var state = snapshot.State;
        var reg = _registry.Register(() => state.TxId);
        return new ReadTransaction(this, reg, state);
    }

    /// <summary>Begins the write transaction, waiting for the current one to end.</summary>
    /// <exception cref="StorageFailedException">an earlier I/O error stopped the environment.</exception>
    public WriteTransaction WriteTransaction(TimeSpan? timeout = null)
    {
        ThrowIfDisposed();
        ThrowIfFailed();
        if (!_writeLock.Wait(timeout ?? Timeout.InfiniteTimeSpan))
            throw new TimeoutException("Timed out waiting for the write transaction.");
        try
        {
            ThrowIfFailed();
            Debug.Assert(_writeLock.CurrentCount == 0, "Invariant 1: at most one write transaction.");
            // Published and older than every live snapshot: no reader, now or later, reaches what those commits freed.
            _free.ReleasePending(Math.Min(_registry.OldestSnapshot, _state.TxId));
            EnvironmentState? state = null;
            var reg = _registry.Register(() => (state = _writerState).TxId);
            return new WriteTransaction(this, reg, state!, _free.BeginScope());
        }
        catch
        {
            _writeLock.Release();
            throw;
        }
    }

    private long LastSyncedTx() => Interlocked.Read(ref _syncedTx);

    /// <summary>Whether pages carry checksums (format 3; a format-2 environment gets them while it opens).</summary>
    internal bool HasChecksums => _checksums;

    /// <summary>The latest committed state.</summary>
    internal EnvironmentState LatestState => _state;

    internal void EndTransaction(LinkedListNode<(long Seq, long Snapshot)> registration) => _registry.Unregister(registration);

    internal void EndWriteTransaction(WriteTransaction tx, LinkedListNode<(long Seq, long Snapshot)> registration, bool committed)
    {
        if (!committed)
            tx.Scope.Rollback();
        _registry.Unregister(registration);
        _writeLock.Release();
    }

    /// <summary>Pages an environment must have waiting before the process-wide budget (<see cref="StorageOptions.ProcessPageBudget"/>) makes it flush: 64 MiB, so that pressure never turns into a storm of small flushes.</summary>
    public const int MinPressureFlushPages = 8192;

    /// <summary>Pages a flush (and the undo file) writes between two <see cref="IStorageFile.StartWriteback"/> calls: 4 MiB.</summary>
    internal const int WritebackStepPages = 512;

    private void Fail(Exception e)
    {
        _failure ??= e;
    }

    private void ThrowIfFailed()
    {
        if (_failure is { } f)
            throw new StorageFailedException($"The environment stopped after a failure (an I/O error, or a broken invariant in the flush) and accepts no writes until reopened (recovery then replays the journal): {f.Message}", f);
    }

    private void ThrowIfDisposed() => ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);

    /// <summary>Free space is not persisted: every page below NextPage that no tree reaches is free.</summary>
    private FreeSpaceManager RebuildFreeSpace()
    {
        var free = new FreeSpaceManager(_state.NextPage);
        var used = new HashSet<long>();
        using (var tx = ReadTransaction())
        {
            foreach (var (page, count) in PageWalker.ReachablePages(tx))
                for (long p = page; p < page + count; p++)
                    used.Add(p);
        }
        for (long p = 1; p < _state.NextPage; p++)
            if (!used.Contains(p))
                free.AddFree(p);
        return free;
    }

    /// <summary>
    /// The data file page by page at the current snapshot (<see cref="StorageLayout"/>), its map downsampled to at most
    /// <paramref name="maxCells"/> cells. Walks every tree page: cost grows with the file (a diagnostic, not a hot path).
    /// </summary>
    public StorageLayout GetLayout(int maxCells = 4096)
    {
        ThrowIfDisposed();
        return Debugging.StorageLayoutWalker.Walk(this, maxCells);
    }

    /// <summary>The free and reuse-pending page sets, read under the write lock (empty when it is not had within <paramref name="wait"/>).</summary>
    internal (long[] Free, long[] Pending) FreeSpaceSnapshot(TimeSpan wait)
    {
        if (!_writeLock.Wait(wait)) // the writer changes the free set while it holds the lock
            return ([], []);
        try
        {
            return (_free.Free.ToArray(), _free.Pending.ToArray());
        }
        finally
        {
            _writeLock.Release();
        }
    }

    /// <summary>The committed page runs not yet in the data file.</summary>
    internal PageBuffer[] PagesWaitingForFlush() => _pageTable.All.ToArray();

    /// <summary>The latest journal records written.</summary>
    internal Debugging.JournalRecordInfo[] LatestJournalRecords()
    {
        lock (_recentRecords)
            return _recentRecords.ToArray();
    }

    /// <summary>Statistics of the environment and of every tree.</summary>
    public StorageStats GetStats()
    {
        ThrowIfDisposed();
        var trees = new List<TreeStats>();
        TreeHeader root;
        using (var tx = ReadTransaction())
        {
            root = tx.State.RootTree;
            foreach (string name in tx.GetTreeNames())
            {
                var h = tx.ReadTree(name)!.State;
                trees.Add(new TreeStats(name, h.Depth, h.EntryCount, h.BranchPages, h.LeafPages, h.OverflowPages));
            }
        }
        return new StorageStats
        {
            DataFileBytes = _data.FileSize,
            PagesInUse = _state.NextPage,
            FreePages = _free.FreeCount,
            ReusePendingPages = _free.PendingCount,
            PagesWaitingForFlush = _pageTable.PageCount,
            UndoFileBytes = _undo.Length,
            JournalBytesWritten = Interlocked.Read(ref _journalBytes),
            UncompressedBytes = Interlocked.Read(ref _uncompressed),
            CompressedBytes = Interlocked.Read(ref _compressed),
            Commits = Interlocked.Read(ref _commits),
            Flushes = Interlocked.Read(ref _flushes),
            JournalSyncs = Interlocked.Read(ref _journalSyncs),
            DataFileSyncs = Interlocked.Read(ref _dataSyncs),
            LastCommittedTxId = _state.TxId,
            LastSyncedTxId = LastSyncedTx(),
            PagePoolSlabs = PagePool.Shared.SlabCount,
            PagePoolSlabsMapped = PagePool.Shared.SlabTurnover.Mapped,
            RootTree = new TreeStats("$root", root.Depth, root.EntryCount, root.BranchPages, root.LeafPages, root.OverflowPages),
            Trees = trees,
        };
    }

    /// <summary>
    /// Stops the flusher, flushes what is committed (unless the environment failed) and closes the
    /// files. Waits for a running write transaction. Dispose every read transaction first: spans they
    /// handed out point into mappings and buffers that close here.
    /// </summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
            return;
        _stop.Cancel();
        _flusher?.Join();
        _writeLock.Wait();
        WaitForCommits();
        bool flushed = false;
        try
        {
            if (_failure == null)
            {
                Flush();
                flushed = _failure == null;
            }
        }
        catch (Exception e) when (e is StorageFailedException or DiskFullException)
        {
            // Already recorded, or no room to flush: the journal still holds everything for the next open.
        }
        finally
        {
            _journal.Dispose();
            _undo.Dispose();
            if (flushed)
            {
                // The header names the last state and every page of it is synced: the before-images are stale, and the
                // space they take goes back to the volume (the next open creates the file again).
                try
                {
                    _fs.DeleteFile(Path.Combine(_options.Directory, "undo"));
                }
                catch (IOException)
                {
                    // A stale undo file is never applied (it names an older header); the next flush reuses it.
                }
                try
                {
                    _journal.DeleteSpares(); // likewise the recycled journal files kept for reuse
                }
                catch (IOException)
                {
                    // Spares left behind are reused by the next open.
                }
            }
            _data.Dispose();
            _headers.Dispose();
            foreach (var b in _pageTable.All)
                b.Free();
            foreach (var b in _unpublished.Values)
                b.Free(); // commits that failed after queueing (the environment failed)
            _registry.FreeAll();
            _flushSignal.Dispose();
            _stop.Dispose();
            _writeLock.Dispose();
        }
    }

    /// <summary>
    /// Replays into memory (the pages the journal's records write, last version of each); <see cref="WriteAll"/> then
    /// writes them to the data file, stamping each page's checksum (journaled pages carry none: a page gets its
    /// checksum when it is written to the data file). Base pages for diffs are the replayed version, else the data
    /// file's, read through the mapping.
    /// </summary>
    private sealed class RecoveryTarget(DataPager data, bool checksums, string dataPath) : IRecoveryTarget
    {
        public readonly Dictionary<long, byte[]> Pages = [];

        private byte[] _scratch = [];

        public void Write(long pageNumber, int pageCount, ReadOnlySpan<byte> pages)
        {
            // Stamped as the run it is written as (an overflow run's checksum covers the run), then kept page by page:
            // the last version of each page is what the data file gets, as if the runs were written in order.
            if (_scratch.Length < pages.Length)
                _scratch = GC.AllocateUninitializedArray<byte>(pages.Length, pinned: true);
            var copy = _scratch.AsSpan(0, pages.Length);
            pages.CopyTo(copy);
            fixed (byte* p = copy)
                PageChecksum.Stamp(p, pageNumber, copy.Length);
            for (int i = 0; i < pageCount; i++)
            {
                if (!Pages.TryGetValue(pageNumber + i, out var page))
                    Pages[pageNumber + i] = page = GC.AllocateUninitializedArray<byte>(StorageConstants.PageSize);
                copy.Slice(i * StorageConstants.PageSize, StorageConstants.PageSize).CopyTo(page);
            }
        }

        public void WriteAll()
        {
            foreach (var (pageNumber, page) in Pages.OrderBy(p => p.Key))
            {
                data.EnsurePages(pageNumber + 1);
                data.Write(pageNumber, page);
            }
        }

        public ReadOnlySpan<byte> Read(long pageNumber)
        {
            if (Pages.TryGetValue(pageNumber, out var replayed))
                return replayed;
            data.EnsurePages(pageNumber + 1);
            byte* page = data.GetPage(pageNumber);
            if (page == null)
                throw new StorageCorruptionException($"Page {pageNumber}, the base of a journaled diff, does not authenticate: the data file or its seals are damaged.");
            // A diff applied to a damaged base would replay a damaged page as if the journal had it: the base must
            // match its checksum (a diff's base is one page).
            if (checksums && PageChecksum.Verify(page, pageNumber, StorageConstants.PageSize) is { } problem)
                throw new StorageCorruptionException(
                    $"Page {pageNumber} of data file '{dataPath}' (offset {pageNumber * StorageConstants.PageSize}), the base of a journaled diff, is damaged: {problem}. " +
                    "Nothing was replayed onto it; restore the database from a backup, or run 'ravenlite check' for the extent of the damage.");
            return new ReadOnlySpan<byte>(page, StorageConstants.PageSize);
        }
    }
}
