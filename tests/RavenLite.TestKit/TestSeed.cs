using System.Globalization;

namespace RavenLite.TestKit;

/// <summary>
/// Seeds for randomized tests (docs/conventions.md §7): a fixed seed, plus one random seed per run that
/// is printed; RAVENLITE_TEST_SEED replays a run.
/// </summary>
public static class TestSeed
{
    /// <summary>The seeds a randomized test should run with: the override if set, else the fixed seed and one fresh random seed.</summary>
    public static IReadOnlyList<int> For(int fixedSeed)
    {
        string? env = Environment.GetEnvironmentVariable("RAVENLITE_TEST_SEED");
        if (!string.IsNullOrEmpty(env))
            return [int.Parse(env, CultureInfo.InvariantCulture)];
        return [fixedSeed, Random.Shared.Next()];
    }
}
