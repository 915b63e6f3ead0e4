using RavenLite.Storage.Paging;

namespace RavenLite.Storage.Tests.Platform;

public unsafe class PagePoolTests
{
    [Fact]
    public void Pages_are_distinct_aligned_and_writable_across_slabs_and_reused_after_return()
    {
        using var pool = new PagePool();
        int count = PagePool.PagesPerSlab * 4; // every slab full, so a rent after a return must reuse
        var pages = new List<nint>();
        for (int i = 0; i < count; i++)
        {
            byte* p = pool.Rent();
            Assert.Equal(0, (long)p % StorageConstants.PageSize);
            new Span<byte>(p, StorageConstants.PageSize).Fill((byte)i);
            pages.Add((nint)p);
        }
        Assert.Equal(count, pages.Distinct().Count());
        Assert.Equal(4, pool.SlabCount);
        for (int i = 0; i < count; i++)
            Assert.True(new Span<byte>((byte*)pages[i], StorageConstants.PageSize).IndexOfAnyExcept((byte)i) < 0, $"page {i} was overwritten");

        foreach (var p in pages.Take(100))
            pool.Return((byte*)p);
        var again = Enumerable.Range(0, 100).Select(_ => (nint)pool.Rent()).ToHashSet();
        Assert.True(again.SetEquals(pages.Take(100)), "returned pages are rented again before a new slab is mapped");
        Assert.Equal(4, pool.SlabCount);
    }

    [Fact]
    public void Free_pages_of_a_recent_peak_stay_mapped_and_go_back_to_the_OS_after_two_quiet_windows()
    {
        long now = 0;
        using var pool = new PagePool(() => now);
        int count = PagePool.MaxPooled + PagePool.PagesPerSlab * 4;
        var pages = Enumerable.Range(0, count).Select(_ => (nint)pool.Rent()).ToList();
        int mapped = pool.SlabCount;
        Assert.Equal((count + PagePool.PagesPerSlab - 1) / PagePool.PagesPerSlab, mapped);
        foreach (var p in pages)
            pool.Return((byte*)p);
        // A wave of use that falls back (a flush) keeps its pages for the next wave: no new slab, no fresh memory.
        Assert.Equal(mapped, pool.SlabCount);
        now += PagePool.TrimWindowMs;
        pages = Enumerable.Range(0, count).Select(_ => (nint)pool.Rent()).ToList();
        Assert.Equal(mapped, pool.SlabCount);
        foreach (var p in pages)
            pool.Return((byte*)p);
        Assert.Equal(mapped, pool.SlabCount);

        // Two windows without such use: beyond MaxPooled free pages, fully free slabs are unmapped.
        now += 2 * PagePool.TrimWindowMs;
        byte* one = pool.Rent();
        pool.Return(one);
        Assert.True(pool.SlabCount * PagePool.PagesPerSlab <= PagePool.MaxPooled + PagePool.PagesPerSlab, $"{pool.SlabCount} slabs still mapped");
        Assert.True(pool.SlabCount < mapped);
        byte* fresh = pool.Rent();
        fresh[0] = 1; // still usable after slabs were released
        pool.Return(fresh);
    }

    [Fact]
    public void A_page_from_elsewhere_is_refused_and_returns_after_dispose_are_ignored()
    {
        var pool = new PagePool();
        byte* p = pool.Rent();
        byte* foreign = (byte*)System.Runtime.InteropServices.NativeMemory.AlignedAlloc(StorageConstants.PageSize, 4096);
        try
        {
            Assert.Throws<InvalidOperationException>(() => pool.Return(foreign));
        }
        finally
        {
            System.Runtime.InteropServices.NativeMemory.AlignedFree(foreign);
        }
        pool.Dispose();
        pool.Return(p); // a late return (a reader outliving the environment) must not throw
        Assert.Throws<ObjectDisposedException>(() => pool.Rent());
    }
}
