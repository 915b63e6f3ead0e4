using Microsoft.Win32.SafeHandles;

namespace RavenLite.Storage.Platform;

/// <summary>The real file system (Linux). pwrite/pread through RandomAccess, fdatasync, posix_fallocate, mmap.</summary>
public sealed class DiskFileSystem : IStorageFileSystem
{
    /// <summary>Shared instance; the type holds no state.</summary>
    public static DiskFileSystem Instance { get; } = new();

    /// <inheritdoc />
    public IStorageFile OpenFile(string path, bool create)
    {
        var handle = File.OpenHandle(path, create ? FileMode.OpenOrCreate : FileMode.Open, FileAccess.ReadWrite, FileShare.Read);
        return new DiskFile(path, handle);
    }

    /// <inheritdoc />
    public bool FileExists(string path) => File.Exists(path);

    /// <inheritdoc />
    public void DeleteFile(string path) => File.Delete(path);

    /// <inheritdoc />
    public void RenameFile(string source, string destination) => File.Move(source, destination, overwrite: true);

    /// <inheritdoc />
    public IReadOnlyList<string> ListFiles(string directory) =>
        Directory.Exists(directory)
            ? Directory.GetFiles(directory).Select(p => System.IO.Path.GetFileName(p)).ToList()
            : [];

    /// <inheritdoc />
    public void CreateDirectory(string path) => Directory.CreateDirectory(path);

    /// <inheritdoc />
    public void SyncDirectory(string path)
    {
        int fd = Native.open(path, Native.ORdOnly | Native.ODirectory);
        if (fd < 0)
            throw Native.Error("open(directory)", path);
        try
        {
            if (Native.fsync(fd) != 0)
                throw Native.Error("fsync(directory)", path);
        }
        finally
        {
            _ = Native.close(fd);
        }
    }

    private sealed unsafe class DiskFile(string path, SafeFileHandle handle) : IStorageFile
    {
        public string Path { get; } = path;

        public long Length => RandomAccess.GetLength(handle);

        private int Fd => (int)handle.DangerousGetHandle();

        public void Write(long offset, ReadOnlySpan<byte> data) => RandomAccess.Write(handle, data, offset);

        /// <summary>Bytes copied into the aligned bounce buffer per O_DIRECT pwrite.</summary>
        private const int BounceBytes = 4 << 20;

        private int _directFd = -1;
        private bool _directUnsupported;
        private byte* _bounce;

        public void WriteUncached(long offset, ReadOnlySpan<byte> data)
        {
            const int Block = IStorageFile.UncachedBlock;
            long end = IStorageFile.UncachedEnd(offset, data.Length);
            // The head up to the first block boundary shares its block with earlier bytes: an ordinary write.
            int head = (int)Math.Min(data.Length, (Block - offset % Block) % Block);
            if (head > 0)
                Write(offset, data[..head]);
            long pos = offset + head;
            var rest = data[head..];
            while (pos < end)
            {
                if (!TryOpenDirect())
                {
                    Write(pos, rest);
                    Write(pos + rest.Length, new byte[end - pos - rest.Length]);
                    return;
                }
                int n = (int)Math.Min(BounceBytes, end - pos);
                int copy = Math.Min(n, rest.Length);
                var bounce = new Span<byte>(_bounce, n);
                rest[..copy].CopyTo(bounce);
                bounce[copy..].Clear(); // the zero padding of the last block
                if (!PwriteDirect(bounce, pos))
                    continue; // O_DIRECT refused (EINVAL): this chunk and the rest go through the page cache
                rest = rest[copy..];
                pos += n;
            }
        }

        private bool TryOpenDirect()
        {
            if (_directUnsupported)
                return false;
            if (_directFd >= 0)
                return true;
            int fd = Native.open(Path, Native.OWrOnly | Native.ODirect);
            if (fd < 0)
            {
                if (System.Runtime.InteropServices.Marshal.GetLastPInvokeError() != Native.EInval)
                    throw Native.Error("open(O_DIRECT)", Path);
                _directUnsupported = true; // the file system has no O_DIRECT (tmpfs on older kernels)
                return false;
            }
            _directFd = fd;
            _bounce = (byte*)System.Runtime.InteropServices.NativeMemory.AlignedAlloc(BounceBytes, IStorageFile.UncachedBlock);
            return true;
        }

        /// <summary>Writes all of an aligned chunk with O_DIRECT; false (and direct I/O off for this file) if the kernel refuses it with EINVAL.</summary>
        private bool PwriteDirect(Span<byte> chunk, long offset)
        {
            int done = 0;
            while (done < chunk.Length)
            {
                nint n;
                fixed (byte* p = chunk)
                    n = Native.pwrite(_directFd, p + done, (nuint)(chunk.Length - done), offset + done);
                if (n < 0)
                {
                    int errno = System.Runtime.InteropServices.Marshal.GetLastPInvokeError();
                    if (errno == 4) // EINTR
                        continue;
                    if (errno == Native.EInval && done == 0)
                    {
                        _directUnsupported = true;
                        return false;
                    }
                    throw Native.Error("pwrite(O_DIRECT)", Path);
                }
                done += (int)n;
            }
            return true;
        }

        public int Read(long offset, Span<byte> buffer)
        {
            int total = 0;
            while (total < buffer.Length)
            {
                int n = RandomAccess.Read(handle, buffer[total..], offset + total);
                if (n == 0)
                    break;
                total += n;
            }
            return total;
        }

        public void Sync()
        {
            if (Native.fdatasync(Fd) != 0)
                throw Native.Error("fdatasync", Path);
        }

        public void StartWriteback()
        {
            // A hint for pacing: an error here (say EIO) shows again, and fails the engine, at the next Sync.
            Native.sync_file_range(Fd, 0, 0, Native.SyncFileRangeWaitBefore | Native.SyncFileRangeWrite);
        }

        public void Allocate(long length)
        {
            long current = Length;
            if (length <= current)
                return;
            int rc = Native.posix_fallocate(Fd, current, length - current);
            if (rc != 0) // posix_fallocate returns the error number instead of setting errno
                throw new IOException($"posix_fallocate failed for '{Path}' growing to {length} bytes: errno {rc}" + (rc == 28 ? " (no space left on device)" : ""), rc);
        }

        public IMappedView Map(long capacity)
        {
            nint p = Native.mmap(0, (nuint)capacity, Native.ProtRead, Native.MapShared, Fd, 0);
            if (p == -1)
                throw Native.Error("mmap", Path);
            return new NativeMapping((byte*)p, capacity);
        }

        public void Dispose()
        {
            handle.Dispose();
            if (_directFd >= 0)
            {
                _ = Native.close(_directFd);
                _directFd = -1;
            }
            if (_bounce != null)
            {
                System.Runtime.InteropServices.NativeMemory.AlignedFree(_bounce);
                _bounce = null;
            }
        }
    }
}

/// <summary>A munmap-on-dispose mapping.</summary>
internal sealed unsafe class NativeMapping(byte* pointer, long capacity) : IMappedView
{
    private int _disposed;

    public byte* Pointer { get; } = pointer;

    public long Capacity { get; } = capacity;

    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) == 0)
            _ = Native.munmap((nint)Pointer, (nuint)Capacity);
    }
}
