using System.Buffers;
using System.Buffers.Binary;
using System.IO.Hashing;
using RavenLite.Storage.Platform;

namespace RavenLite.Storage.Paging;

/// <summary>
/// The <c>undo</c> file: before-images of the data-file pages a flush is about to overwrite, written and fsynced
/// before the flush writes any of them. Freed pages are reused as soon as no reader needs them, so a flush can
/// overwrite a page that the state named by the header still reaches (or that a journal record after it uses as a
/// diff base). If the power fails before the flush's header is synced, opening finds an undo file that belongs to
/// the header's state, writes the before-images back, and so returns the data file to exactly that state before
/// the journal is replayed. An undo file that fails its checksum was never relied on (the flush had not begun
/// writing pages); one that names another header is stale. Format: docs/format/data-file.md ("Undo file").
/// Used by the flusher (under its lock) and by open; not thread-safe.
/// </summary>
internal sealed unsafe class UndoFile : IDisposable
{
    public const ulong Magic = 0x3130_4F44_4E55_4C52; // "RLUNDO01" little-endian
    public const int HeaderSize = 4096;
    private const int ChunkPages = 128; // 1 MiB per write
    private readonly IStorageFile _file;
    private readonly int _imageSize;

    private UndoFile(IStorageFile file, int imageSize)
    {
        _file = file;
        _imageSize = imageSize;
    }

    /// <summary>
    /// Opens the undo file at <paramref name="path"/>, creating it (and syncing its directory, so that it survives a power
    /// loss) when missing. <paramref name="imageSize"/>: the bytes of one before-image (a page, and in an encrypted
    /// environment its seal: <see cref="DataPager.ImageSize"/>).
    /// </summary>
    public static UndoFile Open(IStorageFileSystem fs, string path, int imageSize = StorageConstants.PageSize)
    {
        bool existed = fs.FileExists(path);
        var file = fs.OpenFile(path, create: true);
        if (!existed)
        {
            try
            {
                fs.SyncDirectory(Path.GetDirectoryName(path)!);
            }
            catch
            {
                file.Dispose();
                throw;
            }
        }
        return new UndoFile(file, imageSize);
    }

    /// <summary>Bytes the file occupies.</summary>
    public long Length => _file.Length;

    /// <summary>Bytes the before-images of <paramref name="pages"/> pages take.</summary>
    public long SizeFor(long pages) => pages <= 0 ? 0 : HeaderSize + Round(pages * sizeof(long)) + pages * _imageSize;

    /// <summary>
    /// Grows the file (never shrinks it) to hold the before-images of <paramref name="pages"/> pages, so that the flush
    /// that needs them finds the space. Returns whether it grew.
    /// </summary>
    /// <exception cref="DiskFullException">the disk has no room for it.</exception>
    public bool Reserve(long pages)
    {
        long need = SizeFor(pages);
        long length = _file.Length;
        if (need <= length)
            return false;
        // Steps of at least 1 MiB or an eighth, so a growing workload does not grow the file at every commit.
        long preferred = Math.Max(need, length + Math.Max(1L << 20, length / 8));
        FileGrowth.Allocate(_file, preferred, need, 4096, e => $"No space left on the device for the undo file: '{_file.Path}' needs {need} bytes. {e.Message}");
        return true;
    }

    /// <summary>
    /// Writes the current content of <paramref name="pages"/> (each image read into its span with <paramref name="read"/>)
    /// as the before-images of the state that header <paramref name="sequence"/> names, and fsyncs. Throws
    /// <see cref="DiskFullException"/> when the file cannot grow; nothing of the data file has changed then.
    /// </summary>
    public void Save(long sequence, long syncedTxId, IReadOnlyList<long> pages, SpanAction read)
    {
        long pagesStart = HeaderSize + Round((long)pages.Count * sizeof(long));
        Reserve(pages.Count); // normally a no-op: commits reserve the room (StorageEnvironment.ReserveDataPages)
        var hash = new XxHash3(unchecked((long)Magic));
        var buffer = ArrayPool<byte>.Shared.Rent(ChunkPages * _imageSize);
        try
        {
            // Page numbers, then the pages, each in 1 MiB writes; the header (with the hash of all of it) last.
            for (int i = 0; i < pages.Count;)
            {
                int n = Math.Min(pages.Count - i, buffer.Length / sizeof(long));
                for (int k = 0; k < n; k++)
                    BinaryPrimitives.WriteInt64LittleEndian(buffer.AsSpan(k * sizeof(long)), pages[i + k]);
                var span = buffer.AsSpan(0, n * sizeof(long));
                hash.Append(span);
                _file.Write(HeaderSize + (long)i * sizeof(long), span);
                i += n;
            }
            for (int i = 0; i < pages.Count;)
            {
                int n = Math.Min(pages.Count - i, ChunkPages);
                for (int k = 0; k < n; k++)
                    read(pages[i + k], buffer.AsSpan(k * _imageSize, _imageSize));
                var span = buffer.AsSpan(0, n * _imageSize);
                hash.Append(span);
                _file.Write(pagesStart + (long)i * _imageSize, span);
                i += n;
                if (i % StorageEnvironment.WritebackStepPages < n)
                    _file.StartWriteback(); // paced like the flush's data pages
            }
            var header = buffer.AsSpan(0, 48);
            header.Clear();
            BinaryPrimitives.WriteUInt64LittleEndian(header, Magic);
            BinaryPrimitives.WriteInt64LittleEndian(header[8..], sequence);
            BinaryPrimitives.WriteInt64LittleEndian(header[16..], syncedTxId);
            BinaryPrimitives.WriteInt64LittleEndian(header[24..], pages.Count);
            BinaryPrimitives.WriteInt64LittleEndian(header[32..], _imageSize);
            hash.Append(header[..40]);
            BinaryPrimitives.WriteUInt64LittleEndian(header[40..], hash.GetCurrentHashAsUInt64());
            _file.Write(0, header);
            _file.Sync();
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
    }

    /// <summary>
    /// When the file holds a complete set of before-images for header <paramref name="sequence"/> (state
    /// <paramref name="syncedTxId"/>), writes them back with <paramref name="write"/> and returns how many pages; else 0.
    /// The whole file is verified before anything is written back.
    /// </summary>
    public int Restore(long sequence, long syncedTxId, Action<long, ReadOnlySpan<byte>> write)
    {
        var header = new byte[48];
        if (_file.Read(0, header) < header.Length || BinaryPrimitives.ReadUInt64LittleEndian(header) != Magic)
            return 0;
        long count = BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(24));
        if (BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(8)) != sequence
            || BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(16)) != syncedTxId
            || BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(32)) != _imageSize
            || count <= 0 || HeaderSize + count * (sizeof(long) + _imageSize) > _file.Length)
            return 0; // another header's (stale), or not one this build wrote
        long pagesStart = HeaderSize + Round(count * sizeof(long));
        var numbers = new long[count];
        var numberBytes = new byte[count * sizeof(long)];
        if (_file.Read(HeaderSize, numberBytes) < numberBytes.Length)
            return 0;
        for (int i = 0; i < count; i++)
            numbers[i] = BinaryPrimitives.ReadInt64LittleEndian(numberBytes.AsSpan(i * sizeof(long)));
        var hash = new XxHash3(unchecked((long)Magic));
        hash.Append(numberBytes);
        var buffer = ArrayPool<byte>.Shared.Rent(ChunkPages * _imageSize);
        try
        {
            for (int pass = 0; pass < 2; pass++) // verify everything, then write back
            {
                for (long i = 0; i < count;)
                {
                    int n = (int)Math.Min(count - i, ChunkPages);
                    var span = buffer.AsSpan(0, n * _imageSize);
                    if (_file.Read(pagesStart + i * _imageSize, span) < span.Length)
                        return 0;
                    if (pass == 0)
                        hash.Append(span);
                    else
                        for (int k = 0; k < n; k++)
                            write(numbers[i + k], span.Slice(k * _imageSize, _imageSize));
                    i += n;
                }
                if (pass == 0)
                {
                    hash.Append(header.AsSpan(0, 40));
                    if (hash.GetCurrentHashAsUInt64() != BinaryPrimitives.ReadUInt64LittleEndian(header.AsSpan(40)))
                        return 0; // torn: the flush it belonged to had not begun overwriting pages
                }
            }
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
        return (int)count;
    }

    private static long Round(long bytes) => (bytes + 4095) / 4096 * 4096;

    /// <summary>Reads the before-image of a page into a span.</summary>
    public delegate void SpanAction(long pageNumber, Span<byte> image);

    public void Dispose() => _file.Dispose();
}
