using RavenLite.Storage.Platform;

namespace RavenLite.TestKit.Faults;
/// <summary>
/// Wraps a file system and injects faults at the I/O seam (docs/reliability.md R3–R8): fail the Nth
/// counted operation once or from then on, simulate a power loss at the Nth operation (every later
/// operation fails, and <see cref="SimulatePowerLoss"/> builds the disk as a machine would find it
/// on reboot), and report a full disk past a byte budget. Thread-safe (one lock).
/// </summary>
public sealed class FaultInjectingFileSystem : IStorageFileSystem
{
    private readonly IStorageFileSystem _inner;
    private readonly object _lock = new();
    private readonly Dictionary<string, Tracked> _tracked = new(StringComparer.Ordinal);
    private long _operations;
    private bool _syncBroken;

    /// <summary>Wraps <paramref name="inner"/>; files already in it are treated as durable.</summary>
    public FaultInjectingFileSystem(IStorageFileSystem inner) => _inner = inner;

    /// <summary>Operations counted so far (of the kinds in <see cref="CountedOperations"/>).</summary>
    public long OperationCount { get { lock (_lock) return _operations; } }

    /// <summary>Kinds of operation that count towards <see cref="FailAtOperation"/> and <see cref="CrashAtOperation"/>.</summary>
    public FaultOperations CountedOperations { get; set; } = FaultOperations.All;

    /// <summary>When set, the counted operation with this 1-based number throws an IOException.</summary>
    public long? FailAtOperation { get; set; }

    /// <summary>The errno the failure at <see cref="FailAtOperation"/> carries as its HResult (as .NET reports I/O errors on Linux): 5 (EIO) unless set, 28 for ENOSPC.</summary>
    public int FailErrno { get; set; } = 5;

    /// <summary>When true, after a failed fsync every later fsync fails too (a dead disk).</summary>
    public bool PersistentSyncFailure { get; set; }

    /// <summary>When set, the counted operation with this number and all later operations fail: the machine lost power.</summary>
    public long? CrashAtOperation { get; set; }

    /// <summary>True once the simulated power loss happened.</summary>
    public bool Crashed { get; private set; }

    /// <summary>Total bytes the disk holds across files; growth beyond it fails with "no space left on device".</summary>
    public long? DiskCapacity { get; set; }

    /// <summary>Called (outside the lock, on the syncing thread) before every fsync, with the file's path: lets a test hold a sync in flight.</summary>
    public Action<string>? BeforeSync { get; set; }

    /// <summary>Count of injected failures.</summary>
    public int InjectedFailures { get; private set; }

    private void Count(FaultOperations kind, string path)
    {
        lock (_lock)
        {
            if (Crashed)
                throw new IOException($"simulated power loss: the disk is gone ({kind} on '{path}')");
            if (kind == FaultOperations.Sync && _syncBroken)
            {
                InjectedFailures++;
                throw new IOException($"injected persistent fsync failure on '{path}'");
            }
            if ((CountedOperations & kind) == 0)
                return;
            _operations++;
            if (CrashAtOperation is { } c && _operations >= c)
            {
                Crashed = true;
                throw new IOException($"simulated power loss at operation {_operations} ({kind} on '{path}')");
            }
            if (FailAtOperation is { } f && _operations == f)
            {
                InjectedFailures++;
                if (kind == FaultOperations.Sync && PersistentSyncFailure)
                    _syncBroken = true;
                throw new IOException($"injected failure at operation {_operations} ({kind} on '{path}'): " + (FailErrno == 28 ? "No space left on device" : $"errno {FailErrno}"), FailErrno);
            }
        }
    }

    private void CheckSpace(string path, long newEnd)
    {
        lock (_lock)
        {
            if (DiskCapacity is not { } cap)
                return;
            long total = 0;
            foreach (var (p, t) in _tracked)
                total += p == path ? Math.Max(t.Length, newEnd) : t.Length;
            if (!_tracked.ContainsKey(path))
                total += newEnd;
            if (total > cap)
            {
                InjectedFailures++;
                throw new IOException($"No space left on device (injected: disk of {cap} bytes, '{path}' needs {newEnd})", 28);
            }
        }
    }

    /// <inheritdoc />
    public IStorageFile OpenFile(string path, bool create)
    {
        bool exists = _inner.FileExists(path);
        if (!exists && create)
            Count(FaultOperations.Metadata, path);
        else if (Crashed)
            throw new IOException("simulated power loss: the disk is gone");
        var file = _inner.OpenFile(path, create);
        lock (_lock)
        {
            if (!_tracked.TryGetValue(path, out var t))
            {
                t = new Tracked { CreatedUnsynced = !exists };
                if (exists)
                {
                    t.Durable = ReadAll(file);
                    t.Length = t.Durable.Length;
                }
                _tracked[path] = t;
            }
        }
        return new FaultFile(this, path, file);
    }

    private static byte[] ReadAll(IStorageFile file)
    {
        var bytes = new byte[file.Length];
        file.Read(0, bytes);
        return bytes;
    }

    /// <inheritdoc />
    public bool FileExists(string path) => _inner.FileExists(path);

    /// <inheritdoc />
    public void DeleteFile(string path)
    {
        Count(FaultOperations.Metadata, path);
        _inner.DeleteFile(path);
        lock (_lock)
            _tracked.Remove(path);
    }

    /// <inheritdoc />
    public void RenameFile(string source, string destination)
    {
        Count(FaultOperations.Metadata, source);
        _inner.RenameFile(source, destination);
        lock (_lock)
        {
            if (_tracked.Remove(source, out var t))
                _tracked[destination] = t;
        }
    }

    /// <inheritdoc />
    public IReadOnlyList<string> ListFiles(string directory) => _inner.ListFiles(directory);

    /// <inheritdoc />
    public void CreateDirectory(string path) => _inner.CreateDirectory(path);

    /// <inheritdoc />
    public void SyncDirectory(string path)
    {
        Count(FaultOperations.Sync, path);
        _inner.SyncDirectory(path);
        string dir = path.Replace('\\', '/').TrimEnd('/');
        lock (_lock)
        {
            foreach (var (p, t) in _tracked)
                if (string.Equals(Path.GetDirectoryName(p)?.Replace('\\', '/'), dir, StringComparison.Ordinal))
                    t.CreatedUnsynced = false;
        }
    }

    /// <summary>
    /// The disk as a machine would find it after the power loss: synced bytes intact, unsynced
    /// writes dropped, kept or torn per <paramref name="mode"/>, unsynced file creations lost when dropped.
    /// </summary>
    public MemoryFileSystem SimulatePowerLoss(PowerLossMode mode, Random random)
    {
        var result = new MemoryFileSystem();
        lock (_lock)
        {
            foreach (var (path, t) in _tracked)
            {
                bool keepFile = !t.CreatedUnsynced || (mode != PowerLossMode.DropUnsynced && random.Next(2) == 0);
                if (!keepFile)
                    continue;
                var image = new List<byte>(t.Durable);
                foreach (var w in t.Pending)
                {
                    switch (mode)
                    {
                        case PowerLossMode.DropUnsynced:
                            continue;
                        case PowerLossMode.KeepRandomSubset:
                            if (random.Next(2) == 0)
                                Apply(image, w.Offset, w.Data);
                            break;
                        case PowerLossMode.TearUnsynced:
                            int choice = random.Next(3);
                            if (choice == 0)
                                Apply(image, w.Offset, w.Data);
                            else if (choice == 1)
                            {
                                int sector = random.Next(2) == 0 ? 512 : 4096;
                                for (int s = 0; s < w.Data.Length; s += sector)
                                    if (random.Next(2) == 0)
                                        Apply(image, w.Offset + s, w.Data.AsSpan(s, Math.Min(sector, w.Data.Length - s)));
                            }
                            break;
                    }
                }
                result.WriteAllBytes(path, image.ToArray());
            }
        }
        return result;
    }

    private static void Apply(List<byte> image, long offset, ReadOnlySpan<byte> data)
    {
        while (image.Count < offset + data.Length)
            image.Add(0);
        for (int i = 0; i < data.Length; i++)
            image[(int)offset + i] = data[i];
    }

    private sealed class Tracked
    {
        public byte[] Durable = [];
        public long Length;
        public bool CreatedUnsynced;
        public List<PendingWrite> Pending { get; } = [];
    }

    private sealed record PendingWrite(long Offset, byte[] Data);

    private sealed class FaultFile(FaultInjectingFileSystem fs, string path, IStorageFile inner) : IStorageFile
    {
        public string Path => path;

        public long Length => inner.Length;

        public void Write(long offset, ReadOnlySpan<byte> data)
        {
            fs.Count(FaultOperations.Write, path);
            fs.CheckSpace(path, offset + data.Length);
            inner.Write(offset, data);
            Track(offset, data, offset + data.Length);
        }

        public void WriteUncached(long offset, ReadOnlySpan<byte> data)
        {
            // Counted and tracked as a write of the data plus its zero padding: durable only after Sync, like any write.
            fs.Count(FaultOperations.Write, path);
            long end = IStorageFile.UncachedEnd(offset, data.Length);
            fs.CheckSpace(path, end);
            inner.WriteUncached(offset, data);
            Track(offset, data, end);
        }

        /// <summary>Records a completed write of <paramref name="data"/>, zero-extended to <paramref name="end"/>, as pending until the next Sync.</summary>
        private void Track(long offset, ReadOnlySpan<byte> data, long end)
        {
            lock (fs._lock)
            {
                if (!fs._tracked.TryGetValue(path, out var t))
                    return;
                var bytes = new byte[end - offset];
                data.CopyTo(bytes);
                t.Pending.Add(new PendingWrite(offset, bytes));
                t.Length = Math.Max(t.Length, end);
            }
        }

        public int Read(long offset, Span<byte> buffer)
        {
            fs.Count(FaultOperations.Read, path);
            return inner.Read(offset, buffer);
        }

        public void Sync()
        {
            fs.BeforeSync?.Invoke(path);
            fs.Count(FaultOperations.Sync, path);
            inner.Sync();
            lock (fs._lock)
            {
                if (!fs._tracked.TryGetValue(path, out var t))
                    return;
                var image = new List<byte>(t.Durable);
                foreach (var w in t.Pending)
                    Apply(image, w.Offset, w.Data);
                while (image.Count < t.Length)
                    image.Add(0);
                t.Durable = image.ToArray();
                t.Pending.Clear();
            }
        }

        public void Allocate(long length)
        {
            fs.Count(FaultOperations.Allocate, path);
            fs.CheckSpace(path, length);
            inner.Allocate(length);
            lock (fs._lock)
            {
                if (fs._tracked.TryGetValue(path, out var t))
                    t.Length = Math.Max(t.Length, length);
            }
        }

        public IMappedView Map(long capacity) => inner.Map(capacity);

        public void Dispose() => inner.Dispose();
    }
}
