using System.Buffers;
using System.Runtime.InteropServices;
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
/// 3. The data file plus the header always form a consistent state as of the header's
///    LastSyncedTxId: the flusher writes only pages allocated after that state, and reuse of a
///    freed page waits until both the synced state and every live reader are past the freeing
///    transaction (see <see cref="FreeSpaceManager"/>).
/// 4. Opening replays the journal after the header's state (<see cref="JournalRecovery"/>).
/// 5. After an I/O error on the journal or the data file no write is acknowledged until reopen.
/// State diagram of a commit (docs/architecture.md): Active -(WriteTransaction.Commit)-> Journaled
/// -(PageTable.Publish)-> Visible -(Flush: data write + fsync + header)-> Synced -(RecycleBefore)-> journal space reused.
/// Thread-safety: all public members are thread-safe; transactions themselves are single-threaded.
/// </summary>
public sealed unsafe class StorageEnvironment : IDisposable
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
    private long _commits, _flushes, _dataSyncs, _uncompressed, _compressed, _journalBytes, _journalSyncs;
    private const int RecentRecords = 64;
    private readonly Queue<Debugging.JournalRecordInfo> _recentRecords = new(); // the latest records, for GetLayout
    private int _disposed;

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
            _data = new DataPager(_fs.OpenFile(Path.Combine(dir, "data"), create: true), options);
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
            _undo = UndoFile.Open(_fs, Path.Combine(dir, "undo"));
            UndoPagesRestored = _undo.Restore(header.Sequence, header.LastSyncedTxId, (page, bytes) =>
            {
                _data.EnsurePages(page + 1);
                _data.Write(page, bytes);
            });
            if (UndoPagesRestored > 0)
                _data.Sync(); // the header's state is whole again before the journal is replayed onto it
            int version = existing is { } e ? e.FormatVersion : StorageConstants.FormatVersion;
            _checksums = version >= StorageConstants.FormatVersion;

            var target = new RecoveryTarget(_data);
            var result = JournalRecovery.Run(_fs, _journalDir, header, target);
            RecoveredTransactions = result.RecordsReplayed;
            RecoveryNote = result.TailNote;
            if (result.RecordsReplayed > 0)
            {
                // Replayed pages may overwrite pages the header's state still uses (freed pages are reused before a
                // flush): their before-images go to the undo file first, as in a flush, so that a crash while they are
                // written leaves a state the next open returns to exactly, and replays again.
                var below = target.Pages.Keys.Where(p => p < header.NextPage).Order().ToList();
                if (below.Count > 0)
                    _undo.Save(header.Sequence, header.LastSyncedTxId, below, p => (nint)_data.GetPage(p));
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

    /// <summary>
    /// The writer's view: pages of commits still in flight to the journal (not yet in the page table,
    /// see <see cref="CommitTransaction"/>), then committed pages. Only the write transaction and the
    /// commit path use it; readers and the flusher never see a page that is not durable.
    /// </summary>
    internal byte* GetWriterPage(long pageNumber)
    {
        // The counter, not ConcurrentDictionary.IsEmpty: when the dictionary is empty, IsEmpty takes every lock and scans
        // every bucket, and the bucket array keeps the size of the largest commit ever queued (a large build makes
        // every later cursor scan in a write transaction slow). The counter rises before the pages
        // go in and falls after they leave, so it is never 0 while one is there.
        if (Volatile.Read(ref _unpublishedPages) != 0 && _unpublished.TryGetValue(pageNumber, out var b))
            return b.Pointer;
        return GetCommittedPage(pageNumber);
    }

    internal byte* GetCommittedPage(long pageNumber)
    {
        byte* p = _pageTable.TryGet(pageNumber);
        if (p != null)
            return p;
        p = _data.GetPage(pageNumber);
        if (!_verified.Contains(pageNumber))
            VerifyFromDisk(p, pageNumber);
        return p;
    }

    /// <summary>A committed page without verification (for describing a damaged one).</summary>
    internal byte* RawPage(long pageNumber)
    {
        byte* p = _pageTable.TryGet(pageNumber);
        return p != null ? p : _data.GetPage(pageNumber);
    }

    /// <summary>
    /// The first read of a data-file page since open: its checksum must match (<see cref="PageChecksum"/>). A mismatch
    /// never returns the page: it fails the environment (every later call says so) and throws, naming the file, the
    /// page, the tree it belongs to and how to recover.
    /// </summary>
    private void VerifyFromDisk(byte* page, long pageNumber)
    {
        if (!_checksums)
            return; // a format-2 environment being opened: its pages get their checksums before it is used
        long available = (_state.NextPage - pageNumber) * StorageConstants.PageSize;
        string? problem = pageNumber < 1 || available <= 0 ? "it is outside the data file's pages" : PageChecksum.Verify(page, pageNumber, available);
        if (problem == null)
        {
            _verified.Add(pageNumber);
            return;
        }
        string tree = Checking.PageWalker.OwnerOf(this, pageNumber) is { } owner ? $"tree '{owner}'" : "no tree found to hold it";
        var e = new StorageCorruptionException(
            $"Page {pageNumber} of data file '{Path.Combine(_options.Directory, "data")}' ({tree}) is damaged: {problem}. Nothing read from it was used. " +
            "The environment refuses further work; restore the database from a backup, or run 'ravenlite check' for the extent of the damage.");
        Fail(e);
        throw e;
    }

    /// <summary>
    /// Gives every reachable page of a format-2 environment its checksum (read through the mapping, stamped, written
    /// back in place), then fsyncs; the caller then writes a format-3 header. Interrupted, it runs again at the next open.
    /// </summary>
    private void StampEveryPage()
    {
        using var tx = ReadTransaction();
        var buffer = new byte[StorageConstants.PageSize];
        foreach (var (page, count) in Checking.PageWalker.ReachablePages(tx))
        {
            long bytes = (long)count * StorageConstants.PageSize;
            byte* p = _data.GetPage(page);
            ulong checksum;
            long length = PageChecksum.CoveredLength(p, bytes);
            if (length < 0)
                throw new StorageCorruptionException($"Page {page} of '{Path.Combine(_options.Directory, "data")}': its header names an overflow run longer than the {count} pages its leaf gives it.");
            checksum = PageChecksum.Compute(p, page, length);
            new ReadOnlySpan<byte>(p, StorageConstants.PageSize).CopyTo(buffer);
            System.Runtime.InteropServices.MemoryMarshal.Write(buffer.AsSpan(24), in checksum);
            _data.Write(page, buffer);
        }
        _data.Sync();
        _checksums = true;
    }

    /// <summary>
    /// Checks the checksum of every page reachable in the latest state, from the data file or the pages not yet
    /// flushed, walking the trees without trusting a page before it matched (for the checker: a mismatch is reported,
    /// not thrown, and the environment goes on).
    /// </summary>
    internal List<string> VerifyPageChecksums()
    {
        var problems = new List<string>();
        if (!_checksums)
            return problems;
        var state = _state;
        var trees = new List<(string Name, long Root)>();
        if (state.RootTree.RootPage != 0)
            VerifyTree("$root", state.RootTree.RootPage, state.NextPage, problems, trees, 0);
        foreach (var (name, root) in trees)
            if (root != 0) // an empty tree has no page
                VerifyTree(name, root, state.NextPage, problems, null, 0);
        return problems;
    }

    private void VerifyTree(string tree, long page, long nextPage, List<string> problems, List<(string, long)>? trees, int depth)
    {
        if (depth > 40 || page < 1 || page >= nextPage)
        {
            problems.Add($"Tree '{tree}': page reference {page} is outside the data file's {nextPage} pages (or too deep).");
            return;
        }
        byte* p = RawPage(page);
        if (OnDisk(page) && PageChecksum.Verify(p, page, (nextPage - page) * StorageConstants.PageSize) is { } problem)
        {
            problems.Add($"Tree '{tree}', page {page}: {problem}.");
            return; // not descended: what it points to cannot be trusted
        }
        int n = Trees.TreePage.Count(p);
        bool leaf = Trees.TreePage.IsLeaf(p);
        for (int i = 0; i < n; i++)
        {
            var node = Trees.TreePage.Node(p, i);
            if (!leaf)
            {
                VerifyTree(tree, Trees.TreePage.ChildPage(p, i), nextPage, problems, trees, depth + 1);
            }
            else if (node->Flags == Trees.NodeFlags.Overflow)
            {
                long first = *(long*)Trees.TreePage.Payload(node);
                int count = Trees.TreePage.OverflowPages(node->DataSize);
                if (first < 1 || first + count > nextPage)
                    problems.Add($"Tree '{tree}': overflow run {first} (+{count}) is outside the data file's {nextPage} pages.");
                else if (OnDisk(first) && PageChecksum.Verify(RawPage(first), first, (long)count * StorageConstants.PageSize) is { } runProblem)
                    problems.Add($"Tree '{tree}', overflow run at page {first} ({count} pages): {runProblem}.");
            }
            else if (trees != null && node->Flags == Trees.NodeFlags.Data && node->DataSize == Trees.TreeHeader.SizeOf)
            {
                trees.Add((System.Text.Encoding.UTF8.GetString(Trees.TreePage.Key(p, i)), Trees.Tree.ReadHeader(new ReadOnlySpan<byte>(Trees.TreePage.Payload(node), Trees.TreeHeader.SizeOf)).RootPage));
            }
        }
    }

    /// <summary>Whether the latest copy of a page is the data file's (a copy not yet flushed is in memory and has no checksum yet).</summary>
    private bool OnDisk(long page) => _pageTable.TryGet(page) == null;

    internal void EndTransaction(LinkedListNode<(long Seq, long Snapshot)> registration) => _registry.Unregister(registration);

    internal void EndWriteTransaction(WriteTransaction tx, LinkedListNode<(long Seq, long Snapshot)> registration, bool committed)
    {
        if (!committed)
            tx.Scope.Rollback();
        _registry.Unregister(registration);
        _writeLock.Release();
    }

    /// <summary>
    /// Commits <paramref name="tx"/>: builds its journal payload, hands its pages to the next write
    /// transaction at once, and queues the record for the journal. The returned task completes once
    /// the record is durable (per the durability mode) and the state is visible to new readers.
    /// With <paramref name="inline"/> the journal I/O runs on the calling thread when no other commit
    /// is writing (the synchronous <see cref="WriteTransaction.Commit"/>); otherwise on the thread pool.
    /// </summary>
    internal Task CommitTransaction(WriteTransaction tx, TreeHeader rootTree, bool inline, Action? onCompleted)
    {
        ThrowIfFailed();
        long txId = tx.Id;
        var pages = tx.DirtyPages.Values.OrderBy(b => b.PageNumber).ToList();
        long nextPage = tx.Scope.NextPage;
        var commit = new PendingCommit(txId, rootTree, nextPage) { OnCompleted = onCompleted };
        long reused = 0, txPages = 0;
        foreach (var b in pages)
        {
            txPages += b.PageCount;
            if (b.PageNumber < tx.Scope.StartNextPage)
                reused += b.PageCount;
        }
        ReserveDataPages(txId, nextPage, reused, txPages);
        if (_options.Durability != DurabilityMode.None)
        {
            BuildPayload(commit, pages);
            ReserveJournal(commit);
        }
        if (inline && _options.Durability != DurabilityMode.None)
        {
            bool idle;
            lock (_commitLock)
            {
                idle = !_commitWorkerActive && _commitQueue.Count == 0;
                if (idle)
                    _commitWorkerActive = true;
            }
            if (idle)
            {
                try
                {
                    WriteGroup([commit]);
                }
                finally
                {
                    lock (_commitLock)
                    {
                        _commitWorkerActive = false;
                        Monitor.PulseAll(_commitLock);
                    }
                }
                tx.DetachDirtyPages();
                PublishPages(pages, tx.Scope.FreedPages, txId);
                tx.Scope.Commit(txId);
                _writerState = new EnvironmentState(txId, rootTree, nextPage, 0, 0);
                Publish(new EnvironmentState(txId, rootTree, nextPage, commit.JournalFile, commit.JournalOffset));
                ReleaseGarbage(txId);
                commit.Done.TrySetResult();
                Notify(commit);
                return commit.Done.Task;
            }
        }
        tx.DetachDirtyPages();
        if (_options.Durability == DurabilityMode.None)
        {
            PublishPages(pages, tx.Scope.FreedPages, txId);
            tx.Scope.Commit(txId);
            _writerState = new EnvironmentState(txId, rootTree, nextPage, 0, 0);
            var last = _state;
            Publish(new EnvironmentState(txId, rootTree, nextPage, last.JournalFile, last.JournalOffset));
            ReleaseGarbage(txId);
            onCompleted?.Invoke();
            return Task.CompletedTask;
        }
        // In flight: the next write transaction sees these pages through GetWriterPage; the page table
        // (readers, flusher) gets them only once the record is durable (DrainCommits). Publishing them
        // earlier let a concurrent flush and crash recovery disagree (found by the SIGKILL test).
        Interlocked.Add(ref _unpublishedPages, txPages); // before the pages: GetWriterPage looks them up only while it is not 0
        foreach (var b in pages)
            _unpublished[b.PageNumber] = b;
        commit.Pages = pages;
        commit.FreedPages = [.. tx.Scope.FreedPages];
        tx.Scope.Commit(txId);
        _writerState = new EnvironmentState(txId, rootTree, nextPage, 0, 0);
        bool startWorker;
        lock (_commitLock)
        {
            _commitQueue.Add(commit);
            startWorker = !_commitWorkerActive;
            _commitWorkerActive = true;
        }
        if (startWorker)
        {
            if (inline)
                DrainCommits();
            else
                ThreadPool.UnsafeQueueUserWorkItem(static env => env.DrainCommits(), this, preferLocal: false);
        }
        return commit.Done.Task;
    }

    /// <summary>
    /// Grows the data file, if it must, to hold every page of the state being committed, and the undo file to hold the
    /// before-images a flush may need for it, before anything of the transaction is handed on. So a flush never needs
    /// space the disk may not have: the journal can always be recycled, and a full disk refuses the commit that needs
    /// more (<see cref="DiskFullException"/>, the caller's transaction rolls back) instead of commits piling up in a
    /// journal that the data file can never absorb. Only reused pages (taken from the free set, below the NextPage the
    /// transaction began with) can be ones a flush overwrites; appended pages never are. A flush writes the reused pages
    /// of commits counted since the flush before it took its state (<see cref="_reusedPages"/>), or of commits counted
    /// just before that and published after (<see cref="_reusedBeforeLastFlush"/>).
    /// </summary>
    private void ReserveDataPages(long txId, long nextPage, long reusedPages, long txPages)
    {
        try
        {
            bool grew = _data.EnsurePages(nextPage);
            if (reusedPages > 0)
            {
                // Both are bounds on what the next flush can overwrite: the reused pages counted (a page reused again and
                // again within one flush interval counts each time), and every page that can be in the page table then.
                long counted = Interlocked.Read(ref _reusedPages) + Interlocked.Read(ref _reusedBeforeLastFlush) + reusedPages;
                long waiting = _pageTable.PageCount + Interlocked.Read(ref _unpublishedPages) + txPages;
                grew |= _undo.Reserve(Math.Min(counted, waiting));
                Interlocked.Add(ref _reusedPages, reusedPages);
            }
            if (grew)
                _dataFull = null; // space was found (a commit that needed none proves nothing)
        }
        catch (DiskFullException e)
        {
            _dataFull = e;
            throw;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            Fail(e);
            throw new StorageFailedException($"Commit of transaction {txId} failed growing the data file; the environment accepts no more writes until reopened: {e.Message}", e);
        }
    }

    /// <summary>
    /// Reserves journal space for <paramref name="commit"/>'s record at its largest (LZ4's bound), before anything of
    /// the transaction is handed on: on a full disk the commit fails here with <see cref="DiskFullException"/> and the
    /// caller's transaction rolls back, leaving the environment as it was. Any other I/O error here fails the environment.
    /// </summary>
    private void ReserveJournal(PendingCommit commit)
    {
        try
        {
            if (_journal.Reserve(JournalRecordHeader.SizeOf + Lz4.CompressBound(commit.PayloadLength)))
                _journalFull = null; // space was found (a reservation that needed none proves nothing)
        }
        catch (DiskFullException e)
        {
            ReturnPayload(commit);
            _journalFull = e;
            throw;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            ReturnPayload(commit);
            Fail(e);
            throw new StorageFailedException($"Commit of transaction {commit.TxId} failed opening the journal; the environment accepts no more writes until reopened: {e.Message}", e);
        }
    }

    /// <summary>Durable pages into the page table (visible to readers and the flusher); the copies they replace are retired.</summary>
    private void PublishPages(List<PageBuffer> pages, IReadOnlyList<long> freed, long txId)
    {
        var replaced = _pageTable.Publish(pages, txId);
        lock (_garbage)
            _pageTable.MarkFreed(freed, txId, _garbage);
        if (replaced.Count > 0)
            _registry.Retire(replaced);
    }

    /// <summary>
    /// After state <paramref name="txId"/> is published: committed copies that a transaction up to the
    /// oldest live snapshot freed leave the page table and go to the registry, without waiting for a
    /// flush. No snapshot reaches them any more (a reader registering from now on sees
    /// <paramref name="txId"/> or later), the flusher never writes a copy freed at or before its state,
    /// and the journal holds their content for recovery. Before this, each random 100-key transaction
    /// left ≈100 garbage copies in memory until the next flush: 0.9–1.5 GB of 8 KiB buffers for a 180 MB
    /// tree, and the page pool kept mapping fresh memory for them.
    /// </summary>
    private void ReleaseGarbage(long txId)
    {
        List<PageBuffer>? released = null;
        lock (_garbage)
        {
            if (_garbage.Count == 0)
                return;
            long limit = Math.Min(_registry.OldestSnapshot, txId);
            while (_garbage.TryPeek(out var b) && b.FreedBy <= limit)
            {
                _garbage.Dequeue();
                if (_pageTable.TryRemove(b))
                    (released ??= []).Add(b);
            }
        }
        if (released != null)
            _registry.Retire(released);
    }

    /// <summary>Pages an environment must have waiting before the process-wide budget (<see cref="StorageOptions.ProcessPageBudget"/>) makes it flush: 64 MiB, so that pressure never turns into a storm of small flushes.</summary>
    public const int MinPressureFlushPages = 8192;

    private void Publish(EnvironmentState state)
    {
        _state = state;
        Interlocked.Increment(ref _commits);
        long waiting = _pageTable.PageCount;
        if (waiting >= _options.FlushThresholdPages || (waiting >= MinPressureFlushPages && _pool.PagesInUse >= _options.ProcessPageBudget))
            _flushSignal.Set();
    }

    /// <summary>
    /// The journal side of commits, one runner at a time: takes every queued commit, compresses,
    /// hashes and writes their records in transaction order, makes them durable with one
    /// fdatasync (group commit), then publishes each state and completes its task.
    /// </summary>
    private void DrainCommits()
    {
        var group = new List<PendingCommit>();
        while (true)
        {
            group.Clear();
            lock (_commitLock)
            {
                if (_commitQueue.Count == 0)
                {
                    _commitWorkerActive = false;
                    Monitor.PulseAll(_commitLock);
                    return;
                }
                group.AddRange(_commitQueue);
                _commitQueue.Clear();
            }
            try
            {
                WriteGroup(group);
            }
            catch (StorageFailedException failure)
            {
                foreach (var c in group)
                {
                    c.Done.TrySetException(failure);
                    Notify(c);
                }
                continue; // later queued commits fail the same way (ThrowIfFailed)
            }
            foreach (var c in group)
            {
                PublishPages(c.Pages, c.FreedPages, c.TxId);
                foreach (var b in c.Pages)
                    _unpublished.TryRemove(new KeyValuePair<long, PageBuffer>(b.PageNumber, b));
                Interlocked.Add(ref _unpublishedPages, -c.PageCount);
                Publish(new EnvironmentState(c.TxId, c.RootTree, c.NextPage, c.JournalFile, c.JournalOffset));
                ReleaseGarbage(c.TxId);
                c.Done.TrySetResult();
                Notify(c);
            }
        }
    }

    private static void Notify(PendingCommit c)
    {
        try
        {
            c.OnCompleted?.Invoke();
        }
        catch (Exception e) when (e is ObjectDisposedException or InvalidOperationException)
        {
            // A caller's wake-up that outlived its owner; the task already carries the outcome.
        }
    }

    /// <summary>Compresses, hashes and writes the records of <paramref name="group"/> in order, then one fdatasync (Sync mode). Throws <see cref="StorageFailedException"/> (and fails the environment) on any error.</summary>
    private void WriteGroup(List<PendingCommit> group)
    {
        try
        {
            ThrowIfFailed();
            foreach (var c in group)
            {
                var record = SealRecord(c);
                (c.JournalFile, c.JournalOffset) = _journal.Write(record);
                Interlocked.Add(ref _journalBytes, record.Length);
                ReturnPayload(c);
            }
            if (_options.Durability == DurabilityMode.Sync)
            {
                long syncStart = System.Diagnostics.Stopwatch.GetTimestamp();
                _journal.SyncWritten();
                StorageMetrics.JournalFsync.Record(System.Diagnostics.Stopwatch.GetElapsedTime(syncStart).TotalSeconds);
                Interlocked.Increment(ref _journalSyncs);
            }
        }
        catch (Exception e)
        {
            foreach (var c in group)
                ReturnPayload(c);
            _journal.ClearReservations();
            if (e is IOException or UnauthorizedAccessException)
                Fail(e);
            var failure = e as StorageFailedException ?? new StorageFailedException(
                $"Commit of transaction {group[0].TxId} failed writing the journal; the environment accepts no more writes until reopened: {e.Message}", e);
            Fail(failure);
            throw failure;
        }
    }

    /// <summary>Waits until every queued commit has been written (or failed).</summary>
    private void WaitForCommits()
    {
        lock (_commitLock)
            while (_commitWorkerActive)
                Monitor.Wait(_commitLock);
    }

    /// <summary>Serializes the pages of one commit (diffs against their base pages where smaller) into a pooled payload buffer.</summary>
    private void BuildPayload(PendingCommit commit, List<PageBuffer> pages)
    {
        long raw = 0;
        foreach (var b in pages)
        {
            raw += JournalPageEntry.SizeOf + (long)b.Length;
            commit.PageCount += b.PageCount;
        }
        commit.EntryCount = pages.Count;
        if (raw > Lz4.MaxInputSize)
            throw new StorageLimitException($"Transaction {commit.TxId} modifies {raw} bytes of pages; one transaction may modify at most {Lz4.MaxInputSize} bytes.");
        // The first 128 bytes stay free: a stored record's header goes there and the record is written from this buffer.
        var buffer = RentPayload(JournalRecordHeader.SizeOf + (int)raw);
        int pos = JournalRecordHeader.SizeOf;
        foreach (var b in pages)
        {
            var entry = new JournalPageEntry { PageNumber = b.PageNumber, PageCount = b.PageCount };
            var body = buffer.AsSpan(pos + JournalPageEntry.SizeOf);
            if (b.BasePage != 0 && b.PageCount == 1)
            {
                // A copy-on-write page: journal only what changed against the committed base, if that is under half a page.
                // Tree pages (every copy-on-write page): the free gaps mean nothing (WriteTransaction.CopyTreePage zeroes the
                // copy's), so only used bytes are journaled; anything else goes whole.
                byte* basePointer = GetWriterPage(b.BasePage);
                var h = (PageHeader*)b.Pointer;
                var bh = (PageHeader*)basePointer;
                int diff = TreePage.HasSaneGap(b.Pointer) && TreePage.HasSaneGap(basePointer)
                    ? PageDiff.EncodeUsed(b.Span, h->Lower, h->Upper, new ReadOnlySpan<byte>(basePointer, StorageConstants.PageSize), bh->Lower, bh->Upper, body, StorageConstants.PageSize / 2)
                    : -1;
                if (diff >= 0)
                {
                    entry.DiffSize = diff;
                    entry.BasePage = b.BasePage;
                }
            }
            if (entry.DiffSize == 0)
                b.Span.CopyTo(body);
            MemoryMarshal.Write(buffer.AsSpan(pos), in entry);
            pos += JournalPageEntry.SizeOf + (entry.DiffSize == 0 ? b.Length : entry.DiffSize);
        }
        commit.Payload = buffer;
        commit.PayloadLength = pos - JournalRecordHeader.SizeOf;
        commit.RawBytes = raw;
        if (CaptureRecordPayloads)
            LastRecordPayload = buffer.AsSpan(JournalRecordHeader.SizeOf, commit.PayloadLength).ToArray();
    }

    /// <summary>
    /// Compresses and hashes one commit's payload into a record (journal side only) and returns it: in
    /// <see cref="_recordBuffer"/>, or, for a large payload that LZ4 barely shrinks (sampled), stored as is
    /// in the payload buffer itself behind its header (<see cref="JournalRecordFlags.Stored"/>).
    /// </summary>
    private ReadOnlySpan<byte> SealRecord(PendingCommit c)
    {
        int uncompressed = c.PayloadLength;
        var payload = c.Payload.AsSpan(JournalRecordHeader.SizeOf, uncompressed);
        var header = new JournalRecordHeader
        {
            Magic = JournalRecordHeader.MagicValue,
            TxId = c.TxId,
            PageCount = c.PageCount,
            EntryCount = c.EntryCount,
            UncompressedSize = uncompressed,
            NextPage = c.NextPage,
            RootTree = c.RootTree,
        };
        Span<byte> record;
        if (uncompressed >= LargeRecordBytes && !CompressionPays(payload))
        {
            header.Flags = JournalRecordFlags.Stored;
            header.CompressedSize = uncompressed;
            record = c.Payload.AsSpan(0, JournalRecordHeader.SizeOf + uncompressed);
        }
        else
        {
            int bound = JournalRecordHeader.SizeOf + Lz4.CompressBound(uncompressed);
            var target = _recordBuffer;
            if (bound > MaxPooledPayloadBytes)
                target = c.RecordLease = ArrayPool<byte>.Shared.Rent(bound); // returned with the payload (ReturnPayload)
            else if (_recordBuffer.Length < bound)
                target = _recordBuffer = GC.AllocateUninitializedArray<byte>((int)Math.Min(Math.Max(bound, _recordBuffer.Length * 2L), MaxPooledPayloadBytes));
            // Large records (bulk loads) favour speed: LZ4 acceleration 8 compresses several times faster for a slightly worse ratio; small records keep the default.
            int acceleration = uncompressed >= LargeRecordBytes ? 8 : 1;
            header.CompressedSize = uncompressed == 0 ? 0 : Lz4.Compress(payload, target.AsSpan(JournalRecordHeader.SizeOf), acceleration);
            record = target.AsSpan(0, JournalRecordHeader.SizeOf + header.CompressedSize);
        }
        MemoryMarshal.Write(record, in header);
        header.Hash = JournalRecovery.ComputeHash(record[..JournalRecordHeader.SizeOf], record[JournalRecordHeader.SizeOf..], (ulong)c.TxId);
        MemoryMarshal.Write(record, in header);
        Interlocked.Add(ref _uncompressed, c.RawBytes);
        Interlocked.Add(ref _compressed, header.CompressedSize);
        lock (_recentRecords)
        {
            if (_recentRecords.Count == RecentRecords)
                _recentRecords.Dequeue();
            _recentRecords.Enqueue(new Debugging.JournalRecordInfo(c.TxId, c.PageCount, c.RawBytes, header.CompressedSize, DateTime.UtcNow));
        }
        return record;
    }

    /// <summary>
    /// Whether LZ4 shrinks <paramref name="payload"/> by at least a fifth, judged on 16 slices of 64 KiB
    /// spread over it (≈1 MiB compressed instead of all of it). Below that, compressing a large record
    /// costs more time than writing the bytes it would save (docs/benchmarks.md, fill-seq).
    /// </summary>
    private bool CompressionPays(ReadOnlySpan<byte> payload)
    {
        const int Slices = 16, SliceBytes = 64 << 10;
        int bound = Lz4.CompressBound(SliceBytes);
        if (_sampleBuffer.Length < bound)
            _sampleBuffer = new byte[bound];
        long input = 0, output = 0;
        long stride = (payload.Length - SliceBytes) / (Slices - 1);
        for (int i = 0; i < Slices; i++)
        {
            var slice = payload.Slice((int)(i * stride), SliceBytes);
            input += slice.Length;
            output += Lz4.Compress(slice, _sampleBuffer, 8);
        }
        return output * 5 <= input * 4;
    }

    private byte[] RentPayload(int minLength)
    {
        if (minLength > MaxPooledPayloadBytes)
            return ArrayPool<byte>.Shared.Rent(minLength); // see ReturnPayload
        lock (_payloadPool)
        {
            for (int i = _payloadPool.Count - 1; i >= 0; i--)
            {
                if (_payloadPool[i].Length >= minLength)
                {
                    var b = _payloadPool[i];
                    _payloadPool.RemoveAt(i);
                    return b;
                }
            }
        }
        // Powers of two, so a slightly larger transaction next time still fits a pooled buffer.
        int size = minLength <= 1 << 30 ? (int)System.Numerics.BitOperations.RoundUpToPowerOf2((uint)Math.Max(minLength, 64 * 1024)) : minLength;
        return GC.AllocateUninitializedArray<byte>(size);
    }

    private void ReturnPayload(PendingCommit c)
    {
        var b = c.Payload;
        c.Payload = [];
        if (b.Length == 0)
            return;
        if (c.RecordLease is { } lease)
        {
            c.RecordLease = null;
            ArrayPool<byte>.Shared.Return(lease);
        }
        if (b.Length > MaxPooledPayloadBytes)
        {
            // A huge transaction's buffer goes to the process-wide pool, which trims what stays unused.
            // Reused, it saves the page faults and kernel zeroing of fresh memory, which cost a large payload
            // several times the time of building it into reused memory.
            ArrayPool<byte>.Shared.Return(b);
            return;
        }
        lock (_payloadPool)
        {
            if (_payloadPool.Count < MaxPooledPayloads)
            {
                _payloadPool.Add(b);
                return;
            }
            // Full: keep the larger buffers, so the pool converges on sizes that fit every commit (no allocation per commit).
            int smallest = 0;
            for (int i = 1; i < _payloadPool.Count; i++)
                if (_payloadPool[i].Length < _payloadPool[smallest].Length)
                    smallest = i;
            if (_payloadPool[smallest].Length < b.Length)
                _payloadPool[smallest] = b;
        }
    }

    /// <summary>One commit between its write transaction and the journal.</summary>
    private sealed class PendingCommit(long txId, TreeHeader rootTree, long nextPage)
    {
        public long TxId { get; } = txId;
        public TreeHeader RootTree { get; } = rootTree;
        public long NextPage { get; } = nextPage;
        public byte[] Payload { get; set; } = [];
        /// <summary>A large record's compression buffer, rented from the shared pool until the record is written.</summary>
        public byte[]? RecordLease { get; set; }
        public int PayloadLength { get; set; }
        public long RawBytes { get; set; }
        public int PageCount { get; set; }
        public int EntryCount { get; set; }
        public long JournalFile { get; set; }
        public long JournalOffset { get; set; }
        public TaskCompletionSource Done { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
        public Action? OnCompleted { get; init; }
        public List<PageBuffer> Pages { get; set; } = [];
        public long[] FreedPages { get; set; } = [];
    }

    /// <summary>
    /// Copies every committed page into the data file, fsyncs it, records the state in the header
    /// and recycles journal files no longer needed. Runs in the background; call it to force one.
    /// </summary>
    /// <exception cref="DiskFullException">the data file cannot grow: nothing changed, the journal holds every commit, a later flush retries.</exception>
    public void Flush()
    {
        ThrowIfFailed();
        lock (_flushLock)
        {
            if (_state.TxId == LastSyncedTx() || _failure != null)
                return;
            // Registered like a reader until the buffers to write are taken, so that no copy the state still reaches leaves
            // the page table before then. The state is read inside the registry's lock: a commit that publishes a newer
            // state and then releases the copies it freed (ReleaseGarbage) either sees this registration or is seen by it,
            // never neither. Then only the registration's place in line stays (the buffers' memory is not returned under
            // the flush), not its snapshot: pages freed after this state are reusable while the flush runs.
            EnvironmentState state = null!;
            long reusedTaken = Interlocked.Read(ref _reusedPages); // counted before the state is taken: all published by then, or straddling
            var registration = _registry.Register(() => (state = _state).TxId);
            var buffers = _pageTable.SnapshotUpTo(state.TxId);
            _registry.ReleaseSnapshot(registration);
            // A copy freed at or before T is unreachable in state T: the data file never needs it.
            var toWrite = buffers.Where(b => b.FreedBy == 0 || b.FreedBy > state.TxId).ToList();
            bool writing = false;
            try
            {
                _data.EnsurePages(state.NextPage);
                // Pages below the synced state's end may be ones it reaches, or diff bases of journal records after it:
                // their before-images go to the undo file, synced, before any is overwritten.
                var overwritten = new List<long>();
                foreach (var b in toWrite)
                    for (long p = b.PageNumber; p < b.PageNumber + b.PageCount && p < _syncedNextPage; p++)
                        overwritten.Add(p);
                if (overwritten.Count > 0)
                    _undo.Save(_headerSequence, LastSyncedTx(), overwritten, p => (nint)_data.GetPage(p));
                writing = true;
                WritePages(toWrite);
                _data.Sync();
                Interlocked.Increment(ref _dataSyncs);
                _headers.Write(new FileHeader
                {
                    Sequence = ++_headerSequence,
                    LastSyncedTxId = state.TxId,
                    NextPage = state.NextPage,
                    RootTree = state.RootTree,
                    JournalFileNumber = state.JournalFile,
                    JournalOffset = state.JournalOffset,
                });
                _syncedNextPage = state.NextPage;
                Interlocked.Exchange(ref _reusedBeforeLastFlush, reusedTaken);
                Interlocked.Add(ref _reusedPages, -reusedTaken);
                Interlocked.Exchange(ref _syncedTx, state.TxId);
                _flushFull = null;
            }
            catch (Exception e) when (!writing && DiskFullException.IsDiskFull(e) && e is not StorageFailedException)
            {
                // Growing the data file or the undo file, or writing the undo file, found no space. No page of the data
                // file has been written: the header still names a state the file holds, and every page since stays in
                // the page table for a later flush. So nothing fails; writes go on while the journal has room
                // (ReserveJournal), and the flusher retries.
                var full = e as DiskFullException ?? new DiskFullException($"No space left on the device to flush the data file: {e.Message}", e);
                _flushFull = full;
                throw full;
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                // Pages may be half-overwritten: only reopening (which writes the before-images back) makes the file whole.
                Fail(e);
                throw new StorageFailedException($"Flush to the data file failed; the environment accepts no more writes until reopened: {e.Message}", e);
            }
            finally
            {
                _registry.Unregister(registration);
            }
            // Unwritten garbage copies leave memory only once no reader's snapshot predates their freeing
            // (such a reader would otherwise fall through to the data file, which never received them).
            long oldest = _registry.OldestSnapshot;
            var done = toWrite;
            foreach (var b in buffers)
                if (b.FreedBy != 0 && b.FreedBy <= state.TxId && b.FreedBy <= oldest)
                    done.Add(b);
            _registry.Retire(_pageTable.Remove(done));
            try
            {
                _journal.RecycleBefore(state.JournalFile);
            }
            catch (IOException)
            {
                // Recycling is an optimisation; a leftover file is recycled at the next flush or open.
            }
            Interlocked.Increment(ref _flushes);
        }
    }

    /// <summary>
    /// Writes each page run with its own pwrite, in page order. Deliberately not joined into larger
    /// writes: on Linux 6.x a large write leaves large page-cache folios behind, and a later one-page
    /// update then dirties (and fdatasync writes) the whole folio — measured 700 KiB written per
    /// random 100-put transaction with 4 MiB joined writes against 472 KiB with per-page writes.
    /// </summary>
    private void WritePages(List<PageBuffer> buffers)
    {
        long unpaced = 0;
        foreach (var b in buffers)
        {
            // Paced: the device gets the flush in 4 MiB steps, so a commit's journal fdatasync never waits behind all of it.
            if ((unpaced += b.PageCount) >= WritebackStepPages)
            {
                _data.StartWriteback();
                unpaced = 0;
            }
            // Checksums are stamped here, on the way to the data file, not at commit: a copy freed before it is flushed
            // (most copies of a random-update workload) is never hashed, and the commit path does not pay for it.
            // Readers never look at the checksum field, so stamping a copy they may be reading is harmless.
            PageChecksum.Stamp(b.Pointer, b.PageNumber, b.Length);
            _data.Write(b.PageNumber, b.Span);
            _verified.Add(b.PageNumber); // written from memory, stamped at commit: nothing to verify when read back
        }
    }

    /// <summary>Pages a flush (and the undo file) writes between two <see cref="IStorageFile.StartWriteback"/> calls: 4 MiB.</summary>
    internal const int WritebackStepPages = 512;

    private void FlushLoop()
    {
        var handles = new[] { _flushSignal, _stop.Token.WaitHandle };
        while (!_stop.IsCancellationRequested)
        {
            WaitHandle.WaitAny(handles, _options.FlushIntervalMs);
            if (_stop.IsCancellationRequested || _failure != null)
                break;
            try
            {
                Flush();
            }
            catch (DiskFullException)
            {
                // Retried after a pause, however often commits signal: asking a full disk again at once only burns CPU.
                _stop.Token.WaitHandle.WaitOne(Math.Max(_options.FlushIntervalMs, 250));
            }
            catch (StorageFailedException)
            {
                break;
            }
            catch (Exception e)
            {
                // Anything else (a broken invariant): the environment stops taking writes, as after an I/O error, and the
                // process goes on — an exception leaving this thread would end it, and every other database with it.
                Fail(e);
                break;
            }
        }
    }

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
        using var tx = ReadTransaction();
        long pages = tx.State.NextPage;
        var owner = new int[pages]; // 1 = unused until a walk or the free list says otherwise
        Array.Fill(owner, 1);
        var owners = new List<string> { "free", "unused", "journal-pending", "reuse-pending" };
        var trees = new List<Debugging.TreeLayout>();
        void Tree(string name, TreeHeader h)
        {
            int index = owners.Count;
            owners.Add(name);
            var fill = new int[10];
            if (h.RootPage != 0)
                WalkLayout(tx, h.RootPage, index, owner, fill, 0);
            trees.Add(new Debugging.TreeLayout(name, h.Depth, h.EntryCount, h.BranchPages, h.LeafPages, h.OverflowPages, fill));
        }
        Tree("$root", tx.State.RootTree);
        foreach (string name in tx.GetTreeNames())
            Tree(name, tx.ReadTree(name)!.State);
        long free = 0;
        long[] freeList = [], pendingList = [];
        if (_writeLock.Wait(TimeSpan.FromSeconds(5))) // the writer changes the free set while it holds the lock
        {
            try
            {
                freeList = _free.Free.ToArray();
                pendingList = _free.Pending.ToArray();
            }
            finally
            {
                _writeLock.Release();
            }
        }
        foreach (long p in freeList)
        {
            if (p < pages)
                owner[p] = 0;
            free++;
        }
        foreach (long p in pendingList)
            if (p < pages && owner[p] == 1)
                owner[p] = 3; // freed, waiting for older readers (reachable from this snapshot: still its tree's)
        long pending = 0;
        foreach (var b in _pageTable.All.ToArray())
        {
            for (long p = b.PageNumber; p < b.PageNumber + b.PageCount && p < pages; p++)
                owner[p] = 2;
            pending += b.PageCount;
        }
        long perCell = Math.Max(1, (pages + maxCells - 1) / Math.Max(1, maxCells));
        var cells = new int[(pages + perCell - 1) / perCell];
        var counts = new Dictionary<int, int>();
        for (int c = 0; c < cells.Length; c++)
        {
            counts.Clear();
            for (long p = c * perCell; p < Math.Min(pages, (c + 1) * perCell); p++)
                counts[owner[p]] = counts.GetValueOrDefault(owner[p]) + 1;
            cells[c] = counts.MaxBy(kv => kv.Value).Key;
        }
        Debugging.JournalRecordInfo[] journal;
        lock (_recentRecords)
            journal = _recentRecords.ToArray();
        return new StorageLayout
        {
            PageSize = StorageConstants.PageSize,
            Pages = pages,
            FreePages = free,
            ReusePendingPages = pendingList.Length,
            JournalPendingPages = pending,
            Trees = trees,
            Owners = owners,
            Cells = cells,
            PagesPerCell = perCell,
            Journal = journal,
        };
    }

    private static void WalkLayout(Transaction tx, long pageNumber, int index, int[] owner, int[] fill, int depth)
    {
        if (depth > 40 || pageNumber < 1 || pageNumber >= owner.Length)
            return; // a damaged tree: the checker reports it; the layout shows what it can
        owner[pageNumber] = index;
        byte* page = tx.GetPage(pageNumber);
        fill[Math.Min(9, TreePage.UsedBytes(page) * 10 / StorageConstants.PageSize)]++;
        int n = TreePage.Count(page);
        bool leaf = TreePage.IsLeaf(page);
        for (int i = 0; i < n; i++)
        {
            if (leaf)
            {
                var node = TreePage.Node(page, i);
                if (node->Flags == NodeFlags.Overflow)
                {
                    long first = *(long*)TreePage.Payload(node);
                    for (long p = first; p < first + TreePage.OverflowPages(node->DataSize) && p < owner.Length; p++)
                        owner[p] = index;
                }
            }
            else
            {
                WalkLayout(tx, TreePage.ChildPage(page, i), index, owner, fill, depth + 1);
            }
        }
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
    private sealed class RecoveryTarget(DataPager data) : IRecoveryTarget
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
            return new ReadOnlySpan<byte>(data.GetPage(pageNumber), StorageConstants.PageSize);
        }
    }
}
