using RavenLite.Storage.Paging;

namespace RavenLite.Storage;

/// <summary>Reading committed pages: the page table first, then the data file, each data-file page verified on its first read.</summary>
public sealed unsafe partial class StorageEnvironment
{
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
        if (p == null)
            FailUnauthenticated(pageNumber); // an encrypted page whose seal does not verify
        if (!_verified.Contains(pageNumber))
            VerifyFromDisk(p, pageNumber);
        return p;
    }

    /// <summary>A sealed page that does not authenticate: damaged (or written under another key). Fails the environment, as a checksum mismatch does.</summary>
    private void FailUnauthenticated(long pageNumber)
    {
        var e = new StorageCorruptionException(
            $"Page {pageNumber} of data file '{Path.Combine(_options.Directory, "data")}' is damaged: its seal does not authenticate (the bytes or the seal changed since it was written). " +
            "Nothing read from it was used. The environment refuses further work; restore the database from a backup, or run 'ravenlite check' for the extent of the damage.");
        Fail(e);
        throw e;
    }

    /// <summary>A committed page without verification (for describing a damaged one).</summary>
    internal byte* RawPage(long pageNumber)
    {
        byte* p = _pageTable.TryGet(pageNumber);
        if (p == null)
            p = _data.GetPage(pageNumber);
        return p != null ? p : _data.MappedPage(pageNumber); // one that does not authenticate: its bytes as stored
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
            if (p == null)
                throw new StorageCorruptionException($"Page {page} of '{Path.Combine(_options.Directory, "data")}' does not authenticate: the restored pages or their seals are damaged.");
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

    /// <summary>Whether the latest copy of a page is the data file's (a copy not yet flushed is in memory and has no checksum yet).</summary>
    internal bool OnDisk(long page) => _pageTable.TryGet(page) == null;
}
