using RavenLite.Storage.FreeSpace;
using RavenLite.TestKit;

namespace RavenLite.Storage.Tests.FreeSpace;

public class PageSetTests
{
    /// <summary>Random adds, removes, minimum takes and run searches agree with a SortedSet model, across word and summary boundaries and growth.</summary>
    [Fact]
    public void Agrees_with_a_sorted_set_model()
    {
        foreach (int seed in TestSeed.For(5))
        {
            var r = new Random(seed);
            var set = new PageSet();
            var model = new SortedSet<long>();
            for (int i = 0; i < 50_000; i++)
            {
                // Mostly small numbers (dense words), sometimes far ones (growth, sparse summary words).
                long page = r.Next(4) == 0 ? r.Next(1, 1_000_000) : r.Next(1, 20_000);
                switch (r.Next(6))
                {
                    case 0 or 1 or 2:
                        Assert.Equal(model.Add(page), set.Add(page));
                        break;
                    case 3:
                        Assert.Equal(model.Remove(page), set.Remove(page));
                        break;
                    case 4 when model.Count > 0:
                        Assert.Equal(model.Min, set.Min);
                        model.Remove(model.Min);
                        set.Remove(set.Min);
                        break;
                    case 5:
                        Assert.Equal(model.Contains(page), set.Contains(page));
                        int length = r.Next(1, 5);
                        Assert.Equal(ModelRun(model, length), set.FindRun(length));
                        break;
                }
                Assert.Equal(model.Count, set.Count);
            }
            Assert.Equal(model, set.ToList());
        }
    }

    [Fact]
    public void Empty_set_has_no_minimum_and_no_runs()
    {
        var set = new PageSet();
        Assert.Throws<InvalidOperationException>(() => set.Min);
        Assert.Equal(-1, set.FindRun(1));
        Assert.Empty(set);
        set.Add(70_000);
        set.Remove(70_000);
        Assert.Empty(set);
        Assert.False(set.Contains(70_000));
        Assert.False(set.Remove(-1));
    }

    /// <summary>Brute force: the smallest page that starts <paramref name="length"/> consecutive members.</summary>
    private static long ModelRun(SortedSet<long> model, int length) =>
        model.Where(p => Enumerable.Range(1, length - 1).All(k => model.Contains(p + k))).DefaultIfEmpty(-1).First();
}
