namespace RavenLite.Storage.Platform;

/// <summary>
/// An open file behind the I/O seam. Not thread-safe for concurrent writers; the engine gives each
/// file one writer (the journal writer or the flusher). Reads may run concurrently with writes.
/// </summary>
public interface IStorageFile : IDisposable
{
    /// <summary>Alignment of uncached writes (offset, length and memory): 4 KiB.</summary>
    const int UncachedBlock = 4096;

    /// <summary>The end of an uncached write of <paramref name="length"/> bytes at <paramref name="offset"/>, padding included.</summary>
    static long UncachedEnd(long offset, long length) => (offset + length + UncachedBlock - 1) / UncachedBlock * UncachedBlock;

    /// <summary>Path as opened.</summary>
    string Path { get; }

    /// <summary>Current length in bytes.</summary>
    long Length { get; }

    /// <summary>Writes all of <paramref name="data"/> at <paramref name="offset"/> (pwrite).</summary>
    void Write(long offset, ReadOnlySpan<byte> data);

    /// <summary>
    /// Writes <paramref name="data"/> at <paramref name="offset"/> like <see cref="Write"/>, and zeroes the
    /// bytes from its end to the next <see cref="UncachedBlock"/> boundary (the file must be allocated that
    /// far). Where the platform allows, everything from the first block boundary at or after
    /// <paramref name="offset"/> bypasses the page cache (O_DIRECT): a large journal record then costs the
    /// device's write, not a copy into freshly allocated page-cache memory. Durable only after <see cref="Sync"/>.
    /// </summary>
    void WriteUncached(long offset, ReadOnlySpan<byte> data);

    /// <summary>Reads up to <paramref name="buffer"/>.Length bytes at <paramref name="offset"/>; returns the count (0 at end).</summary>
    int Read(long offset, Span<byte> buffer);

    /// <summary>Makes every completed write durable (fdatasync). Throws on failure; the engine then stops.</summary>
    void Sync();

    /// <summary>
    /// Starts writing the file's dirty pages to the device now, after waiting for the writeback started before to finish
    /// (sync_file_range with SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE over the whole file). Not a
    /// durability point: <see cref="Sync"/> still is. A large flush calls it every few MiB, so that the device never
    /// holds the whole flush at once and a journal fdatasync queues behind a few MiB at most, never behind the whole
    /// flush. A file system without such a call does nothing here.
    /// </summary>
    void StartWriteback()
    {
    }

    /// <summary>Grows the file to at least <paramref name="length"/> bytes with real disk space reserved (posix_fallocate), so a full disk is an error here, never a SIGBUS later.</summary>
    void Allocate(long length);

    /// <summary>
    /// Maps the file read-only with room for <paramref name="capacity"/> bytes of address space.
    /// Only bytes below <see cref="Length"/> may be touched. The view stays valid until disposed,
    /// even if the file grows; it reflects later writes.
    /// </summary>
    IMappedView Map(long capacity);
}
