using System.Runtime.InteropServices;

namespace RavenLite.Storage.Platform;

/// <summary>
/// Every native call the engine makes, in one place: libc file and memory-mapping calls. Linux only (the engine relies on posix_fallocate, fdatasync and MAP_SHARED
/// coherence with pwrite through the unified page cache).
/// </summary>
internal static unsafe partial class Native
{
    private const string LibC = "libc";

    public const int ProtRead = 0x1;
    public const int ProtWrite = 0x2;
    public const int MadvHugePage = 14;
    public const int MapShared = 0x01;
    public const int MapPrivate = 0x02;
    public const int MapAnonymous = 0x20;
    public const int MapNoReserve = 0x4000;
    public const int ORdOnly = 0;
    public const int ODirectory = 0x10000;
    public const int OWrOnly = 0x1;
    public const int ODirect = 0x4000;
    public const int EInval = 22;

    /// <summary>setpriority(2): with which = PRIO_PROCESS (0) and a thread id, Linux sets that one thread's nice value.</summary>
    [LibraryImport(LibC, SetLastError = true)]
    public static partial int setpriority(int which, int who, int prio);

    /// <summary>gettid(2): the calling thread's kernel id.</summary>
    [LibraryImport(LibC)]
    public static partial int gettid();

    [LibraryImport(LibC, SetLastError = true)]
    public static partial nint mmap(nint addr, nuint length, int prot, int flags, int fd, long offset);

    [LibraryImport(LibC, SetLastError = true)]
    public static partial int munmap(nint addr, nuint length);

    [LibraryImport(LibC, SetLastError = true)]
    public static partial int madvise(nint addr, nuint length, int advice);

    [LibraryImport(LibC, SetLastError = true)]
    public static partial int posix_fallocate(int fd, long offset, long len);

    [LibraryImport(LibC, SetLastError = true)]
    public static partial int fdatasync(int fd);

    [LibraryImport(LibC, SetLastError = true)]
    public static partial int fsync(int fd);

    public const uint SyncFileRangeWaitBefore = 1;
    public const uint SyncFileRangeWrite = 2;

    [LibraryImport(LibC, SetLastError = true)]
    public static partial int sync_file_range(int fd, long offset, long nbytes, uint flags);

    [LibraryImport(LibC, SetLastError = true, StringMarshalling = StringMarshalling.Utf8)]
    public static partial int open(string path, int flags);

    [LibraryImport(LibC, SetLastError = true)]
    public static partial int close(int fd);

    [LibraryImport(LibC, SetLastError = true)]
    public static partial nint pwrite(int fd, byte* buffer, nuint count, long offset);

    /// <summary>Throws an <see cref="IOException"/> carrying errno and the operation's name.</summary>
    public static IOException Error(string what, string path)
    {
        int errno = Marshal.GetLastPInvokeError();
        return new IOException($"{what} failed for '{path}': {Marshal.GetPInvokeErrorMessage(errno)} (errno {errno})", errno);
    }
}
