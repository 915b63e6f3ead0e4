using System.Diagnostics;
using RavenLite.Storage.Paging;
using RavenLite.Storage.Transactions;

namespace RavenLite.Storage;

/// <summary>
/// The flusher: committed pages copied to the data file (before-images to the undo file first), the data file synced,
/// the header advanced, journal files recycled (docs/architecture.md, "How a write becomes durable", steps 4, 5 and 7).
/// </summary>
public sealed unsafe partial class StorageEnvironment
{
    // Kept whole: a flush's steps are ordered for crash safety (before-images synced, pages written, data
    // synced, header written, journal recycled), and each step's failure decides whether the environment fails.
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
                    _undo.Save(_headerSequence, LastSyncedTx(), overwritten, _data.ReadImage);
                writing = true;
                WritePages(toWrite);
                _data.Sync();
                Interlocked.Increment(ref _dataSyncs);
                Debug.Assert(state.TxId >= Interlocked.Read(ref _syncedTx) && state.TxId <= _state.TxId,
                    "Invariant 3: the header moves forward, and only to a state that was committed and made visible.");
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
    /// update then dirties (and fdatasync writes) the whole folio, so joined writes raise the bytes
    /// written per transaction (docs/architecture.md, "How a write becomes durable", step 4).
    /// </summary>
    private void WritePages(List<PageBuffer> buffers)
    {
        if (_options.EncryptionKey is { } key)
        {
            WriteSealedPages(buffers, key);
            return;
        }
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

    /// <summary>
    /// An encrypted environment's flush: the pages are stamped and sealed on every core, a batch of about 8 MiB at a
    /// time, then written in order (sealing costs more than the write; one core would be the flush's floor).
    /// </summary>
    private void WriteSealedPages(List<PageBuffer> buffers, Encryption.EncryptionKey key)
    {
        const int BatchPages = 1024;
        var sealedPages = GC.AllocateUninitializedArray<byte>(BatchPages * StorageConstants.PageSize);
        var seals = GC.AllocateUninitializedArray<byte>(BatchPages * Encryption.EncryptionKey.SealSize);
        int next = 0;
        while (next < buffers.Count)
        {
            var batch = new List<(PageBuffer Buffer, int At)>();
            int pages = 0;
            while (next < buffers.Count && (pages == 0 || pages + buffers[next].PageCount <= BatchPages))
            {
                batch.Add((buffers[next], pages));
                pages += buffers[next].PageCount;
                next++;
            }
            if (pages > sealedPages.Length / StorageConstants.PageSize)
            {
                sealedPages = GC.AllocateUninitializedArray<byte>(pages * StorageConstants.PageSize); // one run larger than a batch
                seals = GC.AllocateUninitializedArray<byte>(pages * Encryption.EncryptionKey.SealSize);
            }
            var output = sealedPages;
            var outputSeals = seals;
            Parallel.For(0, batch.Count, i =>
            {
                var (b, at) = batch[i];
                PageChecksum.Stamp(b.Pointer, b.PageNumber, b.Length);
                Encryption.EncryptedPages.Seal(key, b.PageNumber, b.Span, output.AsSpan(at * StorageConstants.PageSize, b.Length),
                    outputSeals.AsSpan(at * Encryption.EncryptionKey.SealSize, b.PageCount * Encryption.EncryptionKey.SealSize));
            });
            foreach (var (b, at) in batch)
            {
                _data.WriteSealed(b.PageNumber, sealedPages.AsSpan(at * StorageConstants.PageSize, b.Length),
                    seals.AsSpan(at * Encryption.EncryptionKey.SealSize, b.PageCount * Encryption.EncryptionKey.SealSize));
                _verified.Add(b.PageNumber);
            }
            _data.StartWriteback(); // paced as the plain flush is, a batch at a time
        }
    }

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
}
