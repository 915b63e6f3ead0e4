using System.Collections;
using System.Numerics;

namespace RavenLite.Storage.FreeSpace;

/// <summary>
/// A set of page numbers as a two-level bitmap: a bit per page, and a summary bit per 64-page word that is set
/// while the word holds any page. Add, remove and membership are a bit each; the smallest page is found through the
/// summary (one word per 4,096 pages), so allocation from a free set of millions of pages costs a few word reads,
/// with no allocation per page as a sorted set would make. Grows with the largest page added; enumerates in
/// ascending order. Not thread-safe.
/// </summary>
internal sealed class PageSet : IReadOnlyCollection<long>
{
    private ulong[] _bits = new ulong[64];
    private ulong[] _summary = new ulong[1];
    private int _count;
    private int _lowestWord; // no set bit below this word (a hint: every set word is at or above it)

    public int Count => _count;

    /// <summary>Adds a page; false when it was already in the set.</summary>
    public bool Add(long page)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(page);
        int w = (int)(page >> 6);
        if (w >= _bits.Length)
            Grow(w);
        ulong bit = 1UL << (int)(page & 63);
        if ((_bits[w] & bit) != 0)
            return false;
        _bits[w] |= bit;
        _summary[w >> 6] |= 1UL << (w & 63);
        _count++;
        if (w < _lowestWord)
            _lowestWord = w;
        return true;
    }

    public void UnionWith(IEnumerable<long> pages)
    {
        foreach (long p in pages)
            Add(p);
    }

    /// <summary>Removes a page; false when it was not in the set.</summary>
    public bool Remove(long page)
    {
        int w = (int)(page >> 6);
        if (page < 0 || w >= _bits.Length)
            return false;
        ulong bit = 1UL << (int)(page & 63);
        if ((_bits[w] & bit) == 0)
            return false;
        _bits[w] &= ~bit;
        if (_bits[w] == 0)
            _summary[w >> 6] &= ~(1UL << (w & 63));
        _count--;
        return true;
    }

    public bool Contains(long page)
    {
        int w = (int)(page >> 6);
        return page >= 0 && w < _bits.Length && (_bits[w] & (1UL << (int)(page & 63))) != 0;
    }

    /// <summary>The smallest page; the set must not be empty.</summary>
    public long Min
    {
        get
        {
            if (_count == 0)
                throw new InvalidOperationException("The page set is empty.");
            int w = NextSetWord(_lowestWord);
            _lowestWord = w;
            return ((long)w << 6) + BitOperations.TrailingZeroCount(_bits[w]);
        }
    }

    /// <summary>The first word at or after <paramref name="from"/> holding a page, or -1.</summary>
    private int NextSetWord(int from)
    {
        int s = from >> 6;
        if (s >= _summary.Length)
            return -1;
        ulong sw = _summary[s] & (~0UL << (from & 63));
        while (sw == 0)
        {
            if (++s == _summary.Length)
                return -1;
            sw = _summary[s];
        }
        return (s << 6) + BitOperations.TrailingZeroCount(sw);
    }

    /// <summary>The first page of the lowest run of <paramref name="length"/> consecutive pages in the set, or -1.</summary>
    public long FindRun(int length)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(length, 1);
        long runStart = -1, prev = -2;
        int run = 0;
        foreach (long p in this)
        {
            if (p == prev + 1)
                run++;
            else
            {
                runStart = p;
                run = 1;
            }
            prev = p;
            if (run == length)
                return runStart;
        }
        return -1;
    }

    private void Grow(int word)
    {
        int size = _bits.Length;
        while (size <= word)
            size *= 2;
        Array.Resize(ref _bits, size);
        Array.Resize(ref _summary, (size + 63) >> 6);
    }

    public IEnumerator<long> GetEnumerator()
    {
        if (_count == 0)
            yield break;
        for (int w = NextSetWord(_lowestWord); w >= 0; w = w + 1 < _bits.Length ? NextSetWord(w + 1) : -1)
        {
            ulong bits = _bits[w];
            while (bits != 0)
            {
                yield return ((long)w << 6) + BitOperations.TrailingZeroCount(bits);
                bits &= bits - 1;
            }
        }
    }

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();
}
