using System.Buffers.Binary;
using System.IO.Hashing;
using System.Runtime.InteropServices;
using RavenLite.Storage.Paging;
using RavenLite.Storage.Platform;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Backup;

/// <summary>
/// Builds an environment directory from page streams written by <see cref="StorageSnapshot.Write"/>: the full stream
/// first, then incremental ones in the order they were taken (each must name the previous one's transaction as its
/// base). <see cref="Complete"/> syncs the data file and writes the header as of the last stream's transaction, with
/// an empty journal; <see cref="StorageEnvironment.Open"/> then opens it as that snapshot (free space is rebuilt from
/// reachability). The directory must not hold an environment. Format: docs/format/backup.md. Not thread-safe.
/// </summary>
public sealed class SnapshotRestorer : IDisposable
{
    private readonly IStorageFileSystem _fs;
    private readonly string _directory;
    private readonly IStorageFile _data;
    private readonly Encryption.EncryptionKey? _key;
    private readonly IStorageFile? _seals;
    private long _txId = -1;
    private long _nextPage;
    private TreeHeader _root;
    private bool _completed;

    /// <summary>
    /// Starts a restore into <paramref name="directory"/> (created; it must not hold a data file yet); with
    /// <paramref name="key"/>, into an encrypted environment (pages sealed as they are written, the header carrying the key's check).
    /// </summary>
    public SnapshotRestorer(string directory, IStorageFileSystem? fileSystem = null, Encryption.EncryptionKey? key = null)
    {
        _fs = fileSystem ?? DiskFileSystem.Instance;
        _directory = directory;
        _fs.CreateDirectory(directory);
        _fs.CreateDirectory(Path.Combine(directory, "journal"));
        string dataPath = Path.Combine(directory, "data");
        if (_fs.FileExists(dataPath) || _fs.FileExists(Path.Combine(directory, "headers")))
            throw new InvalidOperationException($"'{directory}' already holds an environment.");
        _data = _fs.OpenFile(dataPath, create: true);
        _key = key;
        if (key != null)
            _seals = _fs.OpenFile(Path.Combine(directory, "seals"), create: true);
    }

    /// <summary>The transaction of the last stream applied (-1 before any).</summary>
    public long TxId => _txId;

    /// <summary>Pages written so far.</summary>
    public long PagesWritten { get; private set; }

    /// <summary>
    /// Applies one page stream. The first must be a full stream; each later one an incremental whose base is the
    /// previous stream's transaction.
    /// </summary>
    /// <exception cref="InvalidDataException">the stream is truncated, fails its checksum, or does not follow the previous one.</exception>
    public void Apply(Stream input, string name)
    {
        ObjectDisposedException.ThrowIf(_completed, this);
        var hasher = new XxHash64();
        var header = new byte[StorageSnapshot.HeaderSize];
        StreamReading.ReadExactly(input, header, name);
        hasher.Append(header);
        if (BinaryPrimitives.ReadUInt64LittleEndian(header) != StorageSnapshot.Magic)
            throw new InvalidDataException($"'{name}' is not a RavenLite storage snapshot (bad magic number).");
        int version = BinaryPrimitives.ReadInt32LittleEndian(header.AsSpan(8));
        if (version != StorageSnapshot.Version)
            throw new InvalidDataException($"'{name}' is snapshot format version {version}; this build reads {StorageSnapshot.Version}.");
        int pageSize = BinaryPrimitives.ReadInt32LittleEndian(header.AsSpan(12));
        if (pageSize != StorageConstants.PageSize)
            throw new InvalidDataException($"'{name}' has {pageSize}-byte pages; this build uses {StorageConstants.PageSize}.");
        long txId = BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(16));
        long nextPage = BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(24));
        long baseTx = BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(32));
        if (nextPage < 1 || txId < 0)
            throw new InvalidDataException($"'{name}' declares transaction {txId} and {nextPage} pages.");
        if (_txId < 0 && baseTx != 0)
            throw new InvalidDataException($"'{name}' is an incremental snapshot (after transaction {baseTx}); a restore starts with a full one.");
        if (_txId >= 0 && baseTx != _txId)
            throw new InvalidDataException($"'{name}' follows transaction {baseTx}, but the snapshots before it end at transaction {_txId}.");

        _data.Allocate(nextPage * StorageConstants.PageSize);
        _seals?.Allocate(nextPage * Encryption.EncryptionKey.SealSize);
        var runHeader = new byte[StorageSnapshot.RunHeaderSize];
        var buffer = new byte[StorageSnapshot.MaxRunPages * StorageConstants.PageSize];
        long runs = 0;
        while (true)
        {
            StreamReading.ReadExactly(input, runHeader, name);
            hasher.Append(runHeader);
            long start = BinaryPrimitives.ReadInt64LittleEndian(runHeader);
            int count = BinaryPrimitives.ReadInt32LittleEndian(runHeader.AsSpan(8));
            if (start == -1)
            {
                if (count != runs)
                    throw new InvalidDataException($"'{name}' ends after {runs} page runs but its trailer counts {count}.");
                break;
            }
            if (start < 1 || count < 1 || count > StorageSnapshot.MaxRunPages || start + count > nextPage)
                throw new InvalidDataException($"'{name}' has a run of {count} pages at page {start}, outside its {nextPage} pages.");
            var bytes = buffer.AsSpan(0, count * StorageConstants.PageSize);
            StreamReading.ReadExactly(input, bytes, name);
            hasher.Append(bytes);
            if (_key != null)
            {
                // Sealed as the encrypted environment's flusher would seal them: plain pages never reach the disk.
                var sealedPages = new byte[bytes.Length];
                var seals = new byte[count * Encryption.EncryptionKey.SealSize];
                Encryption.EncryptedPages.Seal(_key, start, bytes, sealedPages, seals);
                _data.Write(start * StorageConstants.PageSize, sealedPages);
                _seals!.Write(start * Encryption.EncryptionKey.SealSize, seals);
            }
            else
                _data.Write(start * StorageConstants.PageSize, bytes);
            PagesWritten += count;
            runs++;
        }
        Span<byte> digest = stackalloc byte[8];
        StreamReading.ReadExactly(input, digest, name);
        if (BinaryPrimitives.ReadUInt64LittleEndian(digest) != hasher.GetCurrentHashAsUInt64())
            throw new InvalidDataException($"'{name}' fails its checksum: the file is damaged.");
        _txId = txId;
        _nextPage = nextPage;
        _root = MemoryMarshal.Read<TreeHeader>(header.AsSpan(40, TreeHeader.SizeOf));
    }

    /// <summary>Syncs the data file and writes the header as of the last stream; the directory then opens as that snapshot.</summary>
    public void Complete()
    {
        if (_txId < 0)
            throw new InvalidOperationException("No snapshot was applied.");
        _data.Sync();
        _seals?.Sync();
        using (var headers = HeaderFile.Open(_fs, Path.Combine(_directory, "headers"), out _))
        {
            if (_key != null)
            {
                var check = new KeyCheckValue();
                _key.Check(check);
                headers.KeyCheck = check;
            }
            headers.Write(new FileHeader
            {
                // Format 2: the first open (re)stamps every page's checksum, so snapshots taken before pages carried
                // checksums restore too (the snapshot's own hashes verified the bytes on the way in).
                FormatVersion = 2,
                Sequence = 1,
                LastSyncedTxId = _txId,
                NextPage = _nextPage,
                RootTree = _root,
                JournalFileNumber = 1,
                JournalOffset = 0,
            });
        }
        _fs.SyncDirectory(_directory);
        _completed = true;
    }

    /// <inheritdoc />
    public void Dispose()
    {
        _data.Dispose();
        _seals?.Dispose();
    }
}
