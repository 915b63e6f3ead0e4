using System.Runtime.InteropServices;

namespace RavenLite.Storage.Paging;

/// <summary>
/// Reuses single-page native buffers. Copy-on-write allocates a buffer per touched page and the
/// flusher retires them in bulk; handing freed buffers back avoids an aligned allocation and fresh
/// page faults on every touch. Holds at most <see cref="MaxPooled"/> pages (64 MiB). Thread-safe.
/// </summary>
internal sealed unsafe class PagePool : IDisposable
{
    public const int MaxPooled = 8192;
    private readonly Stack<IntPtr> _free = new();

    public byte* Rent()
    {
        lock (_free)
        {
            if (_free.TryPop(out var p))
                return (byte*)p;
        }
        return (byte*)NativeMemory.AlignedAlloc(StorageConstants.PageSize, 4096);
    }

    public void Return(byte* page)
    {
        lock (_free)
        {
            if (_free.Count < MaxPooled)
            {
                _free.Push((IntPtr)page);
                return;
            }
        }
        NativeMemory.AlignedFree(page);
    }

    public void Dispose()
    {
        lock (_free)
        {
            while (_free.TryPop(out var p))
                NativeMemory.AlignedFree((void*)p);
        }
    }
}
