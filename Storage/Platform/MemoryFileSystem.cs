using System.Collections.Concurrent;

namespace RavenLite.Storage.Platform;

/// <summary>
/// Files in process memory, for tests and memory-only environments. Each file is one anonymous
/// MAP_NORESERVE reservation of <see cref="FileCapacity"/> bytes, so its address never moves and a
/// mapping of it is the file itself. Survives an environment's dispose: reopening the same instance
/// runs recovery exactly as on disk. Syncs are no-ops here (a process-local file has nothing to flush).
/// </summary>
public sealed class MemoryFileSystem : IStorageFileSystem, IDisposable
{
    private readonly ConcurrentDictionary<string, MemoryFile> _files = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, byte> _directories = new(StringComparer.Ordinal);

    /// <summary>Creates an empty file system whose files may each grow to <paramref name="fileCapacity"/> bytes (default 8 GiB of address space, reserved lazily).</summary>
    public MemoryFileSystem(long fileCapacity = 8L << 30) => FileCapacity = fileCapacity;

    /// <summary>Maximum size of any one file.</summary>
    public long FileCapacity { get; }

    /// <summary>Names of all files, with their directory.</summary>
    public IReadOnlyCollection<string> AllFiles => _files.Keys.ToList();

    /// <inheritdoc />
    public IStorageFile OpenFile(string path, bool create)
    {
        path = Normalize(path);
        if (_files.TryGetValue(path, out var f))
            return new Handle(f);
        if (!create)
            throw new FileNotFoundException($"No such file: {path}", path);
        f = _files.GetOrAdd(path, p => new MemoryFile(p, FileCapacity));
        return new Handle(f);
    }

    /// <summary>A copy of a file's bytes (for tests and crash simulation).</summary>
    public byte[] ReadAllBytes(string path) => _files[Normalize(path)].Snapshot();

    /// <summary>Creates or replaces a file with these bytes.</summary>
    public void WriteAllBytes(string path, ReadOnlySpan<byte> content)
    {
        path = Normalize(path);
        var f = new MemoryFile(path, FileCapacity);
        f.Write(0, content);
        if (_files.TryRemove(path, out var old))
            old.Release();
        _files[path] = f;
    }

    /// <inheritdoc />
    public bool FileExists(string path) => _files.ContainsKey(Normalize(path));

    /// <inheritdoc />
    public void DeleteFile(string path)
    {
        if (_files.TryRemove(Normalize(path), out var f))
            f.Release();
    }

    /// <inheritdoc />
    public void RenameFile(string source, string destination)
    {
        source = Normalize(source);
        destination = Normalize(destination);
        if (!_files.TryRemove(source, out var f))
            throw new FileNotFoundException($"No such file: {source}", source);
        if (_files.TryRemove(destination, out var old))
            old.Release();
        _files[destination] = f;
    }

    /// <inheritdoc />
    public IReadOnlyList<string> ListFiles(string directory)
    {
        directory = Normalize(directory);
        return _files.Keys
            .Where(p => string.Equals(Path.GetDirectoryName(p), directory, StringComparison.Ordinal))
            .Select(p => Path.GetFileName(p))
            .ToList();
    }

    /// <inheritdoc />
    public void CreateDirectory(string path) => _directories[Normalize(path)] = 0;

    /// <inheritdoc />
    public void SyncDirectory(string path)
    {
    }

    /// <summary>Releases every file's memory.</summary>
    public void Dispose()
    {
        foreach (var f in _files.Values)
            f.Release();
        _files.Clear();
    }

    private static string Normalize(string path) => path.Replace('\\', '/').TrimEnd('/');

    private sealed unsafe class MemoryFile
    {
        private readonly long _capacity;
        private readonly object _lock = new();
        private long _length;
        private byte* _base;
        private int _refs = 1;

        public MemoryFile(string path, long capacity)
        {
            Path = path;
            _capacity = capacity;
            nint p = Native.mmap(0, (nuint)capacity, Native.ProtRead | 0x2, Native.MapPrivate | Native.MapAnonymous | Native.MapNoReserve, -1, 0);
            if (p == -1)
                throw Native.Error("mmap(anonymous)", path);
            _base = (byte*)p;
        }

        public string Path { get; }

        public long Length => Volatile.Read(ref _length);

        public byte* Base => _base;

        public void AddRef() => Interlocked.Increment(ref _refs);

        public void Release()
        {
            if (Interlocked.Decrement(ref _refs) == 0)
            {
                _ = Native.munmap((nint)_base, (nuint)_capacity);
                _base = null;
            }
        }

        public void Write(long offset, ReadOnlySpan<byte> data)
        {
            EnsureCapacity(offset + data.Length);
            data.CopyTo(new Span<byte>(_base + offset, data.Length));
            lock (_lock)
                _length = Math.Max(_length, offset + data.Length);
        }

        public int Read(long offset, Span<byte> buffer)
        {
            long len = Length;
            if (offset >= len)
                return 0;
            int n = (int)Math.Min(buffer.Length, len - offset);
            new ReadOnlySpan<byte>(_base + offset, n).CopyTo(buffer);
            return n;
        }

        public void Allocate(long length)
        {
            EnsureCapacity(length);
            lock (_lock)
                _length = Math.Max(_length, length);
        }

        public byte[] Snapshot() => new ReadOnlySpan<byte>(_base, (int)Length).ToArray();

        private void EnsureCapacity(long end)
        {
            if (end > _capacity)
                throw new IOException($"Memory file '{Path}' cannot grow to {end} bytes (capacity {_capacity}).");
        }
    }

    private sealed unsafe class Handle : IStorageFile
    {
        private readonly MemoryFile _file;
        private int _disposed;

        public Handle(MemoryFile file)
        {
            _file = file;
            file.AddRef();
        }

        public string Path => _file.Path;

        public long Length => _file.Length;

        public void Write(long offset, ReadOnlySpan<byte> data) => _file.Write(offset, data);

        public void WriteUncached(long offset, ReadOnlySpan<byte> data)
        {
            _file.Write(offset, data);
            long end = IStorageFile.UncachedEnd(offset, data.Length);
            _file.Write(offset + data.Length, new byte[end - offset - data.Length]);
        }

        public int Read(long offset, Span<byte> buffer) => _file.Read(offset, buffer);

        public void Sync()
        {
        }

        public void Allocate(long length) => _file.Allocate(length);

        public IMappedView Map(long capacity)
        {
            _file.AddRef();
            return new View(_file);
        }

        public void Dispose()
        {
            if (Interlocked.Exchange(ref _disposed, 1) == 0)
                _file.Release();
        }

        private sealed class View(MemoryFile file) : IMappedView
        {
            private int _disposed;

            public byte* Pointer { get; } = file.Base;

            public long Capacity => long.MaxValue;

            public void Dispose()
            {
                if (Interlocked.Exchange(ref _disposed, 1) == 0)
                    file.Release();
            }
        }
    }
}
