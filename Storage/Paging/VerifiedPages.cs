namespace RavenLite.Storage.Paging;

/// <summary>
/// One bit per data-file page: set once the page has been verified against its checksum since open, or written from
/// memory by this process. Thread-safe: readers test bits without a lock; a bit set on an array that growth has just
/// replaced may be lost, which only means the page is verified once more.
/// </summary>
internal sealed class VerifiedPages
{
    private long[] _bits = new long[1024];
    private readonly object _growLock = new();

    public bool Contains(long page)
    {
        var bits = Volatile.Read(ref _bits);
        long word = page >> 6;
        return word < bits.Length && (Volatile.Read(ref bits[word]) & (1L << (int)(page & 63))) != 0;
    }

    public void Add(long page)
    {
        long word = page >> 6;
        var bits = Volatile.Read(ref _bits);
        if (word >= bits.Length)
        {
            lock (_growLock)
            {
                bits = _bits;
                if (word >= bits.Length)
                {
                    var grown = new long[Math.Max(bits.Length * 2, word + 1)];
                    Array.Copy(bits, grown, bits.Length);
                    Volatile.Write(ref _bits, grown);
                    bits = grown;
                }
            }
        }
        Interlocked.Or(ref bits[word], 1L << (int)(page & 63));
    }
}
