using RavenLite.TestKit;

namespace RavenLite.Storage.Tests.Transactions;

/// <summary>
/// When the flusher runs besides its interval and its own threshold: once the pages in use across the process's
/// environments pass <see cref="StorageOptions.ProcessPageBudget"/>, an environment with at least
/// <see cref="StorageEnvironment.MinPressureFlushPages"/> waiting flushes.
/// </summary>
public sealed class FlushPolicyTests
{
    private static StorageHarness Harness(long budget) => StorageHarness.InMemory(o => new StorageOptions
    {
        Directory = o.Directory, InitialMapSize = o.InitialMapSize, FileSystem = o.FileSystem,
        FlushThresholdPages = int.MaxValue, FlushIntervalMs = int.MaxValue, ProcessPageBudget = budget,
    });

    /// <summary>Commits 30 KB values (four overflow pages each) until at least <paramref name="pages"/> wait for the flush.</summary>
    private static void CommitUntilWaiting(StorageEnvironment env, long pages, ref int next)
    {
        var random = new Random(5);
        while (env.GetStats().PagesWaitingForFlush < pages)
        {
            using var tx = env.WriteTransaction();
            var tree = tx.CreateTree("t");
            for (int i = 0; i < 64; i++, next++)
                tree.Put(TestData.Key(next), TestData.Value(random, 30_000));
            tx.Commit();
        }
    }

    private static bool FlushedWithin(StorageEnvironment env, TimeSpan wait)
    {
        var until = DateTime.UtcNow + wait;
        while (env.GetStats().Flushes == 0)
        {
            if (DateTime.UtcNow > until)
                return false;
            Thread.Sleep(20);
        }
        return true;
    }

    [Fact]
    public void Over_the_process_budget_an_environment_flushes_once_it_holds_the_minimum()
    {
        using var h = Harness(budget: 1); // every environment of the process is over it
        int next = 0;
        CommitUntilWaiting(h.Env, StorageEnvironment.MinPressureFlushPages / 2, ref next);
        Assert.False(FlushedWithin(h.Env, TimeSpan.FromMilliseconds(300)), "flushed with fewer pages waiting than the minimum");

        CommitUntilWaiting(h.Env, StorageEnvironment.MinPressureFlushPages, ref next);
        Assert.True(FlushedWithin(h.Env, TimeSpan.FromSeconds(20)), "the budget did not make the environment flush");
        using var tx = h.Env.ReadTransaction();
        Assert.Equal(next, tx.ReadTree("t")!.Count);
    }

    [Fact]
    public void Under_the_process_budget_pages_wait_for_the_threshold_or_the_interval()
    {
        using var h = Harness(budget: long.MaxValue);
        int next = 0;
        CommitUntilWaiting(h.Env, StorageEnvironment.MinPressureFlushPages + 512, ref next);
        Assert.False(FlushedWithin(h.Env, TimeSpan.FromMilliseconds(500)), "flushed although neither the threshold, the interval nor the budget was reached");
        Assert.True(h.Env.GetStats().PagesWaitingForFlush >= StorageEnvironment.MinPressureFlushPages);
    }
}
