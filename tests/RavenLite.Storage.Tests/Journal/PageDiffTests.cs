using RavenLite.Storage.Journal;
using RavenLite.TestKit;

namespace RavenLite.Storage.Tests.Journal;

public class PageDiffTests
{
    [Fact]
    public void Random_edits_round_trip_and_unchanged_pages_encode_empty()
    {
        foreach (int seed in TestSeed.For(5))
        {
            var r = new Random(seed);
            for (int n = 0; n < 2000; n++)
            {
                var basePage = new byte[StorageConstants.PageSize];
                r.NextBytes(basePage);
                var page = (byte[])basePage.Clone();
                int edits = r.Next(0, 40);
                for (int e = 0; e < edits; e++)
                {
                    int at = r.Next(page.Length);
                    int len = Math.Min(r.Next(1, 300), page.Length - at);
                    r.NextBytes(page.AsSpan(at, len));
                }
                var diff = new byte[StorageConstants.PageSize * 2];
                int size = PageDiff.Encode(page, basePage, diff, diff.Length);
                Assert.True(size >= 0);
                if (edits == 0)
                    Assert.Equal(0, size);
                var rebuilt = (byte[])basePage.Clone();
                Assert.True(PageDiff.Apply(diff.AsSpan(0, size), rebuilt));
                Assert.Equal(page, rebuilt);
            }
        }
    }

    [Fact]
    public void Encoding_matches_the_byte_at_a_time_definition_for_shifts_edits_and_limits()
    {
        foreach (int seed in TestSeed.For(5))
        {
            var r = new Random(seed);
            for (int n = 0; n < 1500; n++)
            {
                var basePage = new byte[StorageConstants.PageSize];
                // Sparse bytes like a leaf (slots, headers, zeroed gaps), or noise.
                if (r.Next(2) == 0)
                    r.NextBytes(basePage);
                else
                    for (int i = 0; i < basePage.Length; i++)
                        basePage[i] = r.Next(4) == 0 ? (byte)r.Next(256) : (byte)0;
                var page = (byte[])basePage.Clone();
                for (int e = r.Next(0, 6); e > 0; e--)
                {
                    int at = r.Next(page.Length - 2), len = r.Next(1, page.Length - at - 1), by = r.Next(1, 9);
                    if (r.Next(2) == 0)
                    {
                        // An insert: the bytes from `at` move up by `by` (a slot-array shift).
                        len = Math.Min(len, page.Length - at - by);
                        if (len > 0)
                            Array.Copy(basePage, at, page, at + by, len);
                    }
                    else
                        r.NextBytes(page.AsSpan(at, Math.Min(len, r.Next(1, 40))));
                }
                int limit = r.Next(3) == 0 ? r.Next(0, 600) : StorageConstants.PageSize * 2;
                var expected = ReferenceEncode(page, basePage, limit);
                var diff = new byte[StorageConstants.PageSize * 2];
                int size = PageDiff.Encode(page, basePage, diff, limit);
                Assert.Equal(expected?.Length ?? -1, size);
                if (expected != null)
                    Assert.Equal(expected, diff.AsSpan(0, size).ToArray());
            }
        }
    }

    /// <summary>The diff format's definition, one byte at a time: a run ends where 8 equal bytes start or the rest of the page is equal.</summary>
    private static byte[]? ReferenceEncode(byte[] page, byte[] basePage, int limit)
    {
        var output = new List<byte>();
        int n = page.Length, pos = 0;
        while (pos < n)
        {
            while (pos < n && page[pos] == basePage[pos])
                pos++;
            if (pos >= n)
                break;
            int start = pos, d = pos + 1;
            while (d < n)
            {
                int equal = 0;
                while (d + equal < n && page[d + equal] == basePage[d + equal])
                    equal++;
                if (equal >= 8 || d + equal >= n)
                    break;
                d += equal + 1;
            }
            int end = Math.Min(d, n);
            if (output.Count + 4 + (end - start) > limit)
                return null;
            output.AddRange([(byte)start, (byte)(start >> 8), (byte)(end - start), (byte)((end - start) >> 8)]);
            output.AddRange(page.AsSpan(start, end - start).ToArray());
            pos = end;
        }
        return output.ToArray();
    }

    [Fact]
    public void Limit_is_respected_and_bad_runs_are_rejected()
    {
        var a = new byte[StorageConstants.PageSize];
        var b = new byte[StorageConstants.PageSize];
        new Random(1).NextBytes(b);
        Assert.Equal(-1, PageDiff.Encode(b, a, new byte[StorageConstants.PageSize], StorageConstants.PageSize / 2));
        Assert.False(PageDiff.Apply([0xF0, 0x1F, 0x20, 0x00, 1], new byte[StorageConstants.PageSize]));
    }

    [Fact]
    public void Random_small_updates_journal_a_fraction_of_the_modified_pages()
    {
        using var h = StorageHarness.InMemory();
        var r = new Random(3);
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("t");
            for (int i = 0; i < 50_000; i++)
                t.Put(TestData.Key(i * 2), TestData.Value(r, 100));
            tx.Commit();
        }
        var before = h.Env.GetStats();
        for (int n = 0; n < 50; n++)
        {
            using var tx = h.Env.WriteTransaction();
            var t = tx.CreateTree("t");
            for (int k = 0; k < 100; k++)
                t.Put(TestData.Key(r.Next(50_000) * 2 + 1), TestData.Value(r, 100));
            tx.Commit();
        }
        var after = h.Env.GetStats();
        double raw = after.UncompressedBytes - before.UncompressedBytes;
        double journal = after.JournalBytesWritten - before.JournalBytesWritten;
        Assert.True(journal < raw / 5, $"journal {journal:N0} bytes for {raw:N0} bytes of modified pages");
    }
    /// <summary>
    /// A copy-on-write tree page is journaled by its used bytes only, and recovery's copy of the base may differ from
    /// the base in memory in the base's free gap. Whatever the gaps hold — including in-memory gap bytes that equal the
    /// new bytes written over them (which a diff that trusted the base's gap would leave out) — applying the diff to
    /// the recovery copy gives the page's used bytes exactly.
    /// </summary>
    [Fact]
    public void A_used_bytes_diff_rebuilds_the_used_bytes_on_a_base_whose_gap_differs()
    {
        const int size = StorageConstants.PageSize;
        foreach (int seed in TestSeed.For(5))
        {
            var r = new Random(seed);
            for (int n = 0; n < 2000; n++)
            {
                // The base in memory: used bytes, and a gap [baseLower, baseUpper) of anything.
                int baseLower = r.Next(32, size / 2), baseUpper = r.Next(baseLower, size + 1);
                var inMemory = new byte[size];
                r.NextBytes(inMemory);
                // The page: inserts grow the offsets up into the base's gap and nodes down into it; edits elsewhere.
                int lower = Math.Min(baseUpper, baseLower + 2 * r.Next(0, 40));
                int upper = Math.Max(lower, baseUpper - r.Next(0, 600));
                if (r.Next(5) == 0)
                    (lower, upper) = (Math.Max(32, baseLower - 2 * r.Next(0, 10)), Math.Min(size, baseUpper + r.Next(0, 300))); // removals shrink both
                var page = (byte[])inMemory.Clone();
                r.NextBytes(page.AsSpan(baseLower, Math.Max(0, lower - baseLower)));
                r.NextBytes(page.AsSpan(upper, Math.Max(0, baseUpper - upper)));
                for (int e = r.Next(0, 4); e > 0; e--)
                {
                    int at = r.Next(size - 1);
                    r.NextBytes(page.AsSpan(at, Math.Min(r.Next(1, 64), size - at)));
                }
                // Often the in-memory gap already holds exactly the bytes then written there.
                if (r.Next(2) == 0)
                    for (int i = baseLower; i < baseUpper; i++)
                        if (r.Next(3) > 0)
                            inMemory[i] = page[i];
                r.NextBytes(page.AsSpan(lower, upper - lower)); // the page's own gap: anything
                var diff = new byte[size * 2];
                int length = PageDiff.EncodeUsed(page, lower, upper, inMemory, baseLower, baseUpper, diff, diff.Length);
                Assert.True(length >= 0);
                // Recovery's copy of the base: the same used bytes, another gap.
                var recovered = (byte[])inMemory.Clone();
                r.NextBytes(recovered.AsSpan(baseLower, baseUpper - baseLower));
                Assert.True(PageDiff.Apply(diff.AsSpan(0, length), recovered));
                Assert.Equal(page.AsSpan(0, lower).ToArray(), recovered.AsSpan(0, lower).ToArray());
                Assert.Equal(page.AsSpan(upper).ToArray(), recovered.AsSpan(upper).ToArray());
                Assert.Equal(-1, length > 40 ? PageDiff.EncodeUsed(page, lower, upper, inMemory, baseLower, baseUpper, diff, length - 1) : -1);
            }
        }
    }
}
