using System.Buffers;
using System.Diagnostics;
using System.Runtime.InteropServices;
using RavenLite.Storage.Journal;
using RavenLite.Storage.Paging;
using RavenLite.Storage.Platform;
using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage;

/// <summary>
/// The commit pipeline: a write transaction's pages published to the next writer at once, its record reserved, built,
/// compressed and written to the journal (group fdatasync in Sync mode) by one runner at a time, and only then its state
/// made visible to readers (docs/architecture.md, "How a write becomes durable", steps 2 and 6).
/// </summary>
public sealed unsafe partial class StorageEnvironment
{
    // Kept whole: a commit's order is its correctness (room reserved, pages published to the next writer,
    // record queued, state made visible only when durable); in one method that order reads top to bottom.
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
            long bound = Lz4.CompressBound(commit.PayloadLength);
            if (_options.EncryptionKey != null)
                bound = Encryption.JournalSealing.SealedLength(bound); // a tag per sealed chunk
            if (_journal.Reserve(JournalRecordHeader.SizeOf + (int)bound))
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

    private void Publish(EnvironmentState state)
    {
        Debug.Assert(state.TxId > _state.TxId, "Invariant 1: readers see committed states in commit order; a published state never goes back.");
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
        if (_options.EncryptionKey is { } key)
            record = Encryption.JournalSealing.Seal(key, ref header, record, ref _sealedRecordBuffer);
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
}
