using RavenLite.Fuzz;

namespace RavenLite.Server.Tests.Fuzzing;

/// <summary>
/// docs/reliability.md "Fuzzing": every fuzz target's corpus — the seeds, the inputs fuzzing found new coverage with
/// and every finding kept as a regression — replayed through the uninstrumented target, each input within a time limit.
/// </summary>
public class CorpusReplayTests(ITestOutputHelper output)
{
    private static readonly TimeSpan PerInput = TimeSpan.FromSeconds(60);

    public static TheoryData<string> Targets => [.. FuzzTargets.Names];

    [Theory]
    [MemberData(nameof(Targets))]
    public async Task Every_input_of_the_corpus_is_handled_as_promised(string target)
    {
        string corpus = Path.Combine(RepositoryRoot.Find(), "tools", "RavenLite.Fuzz", "corpus", target);
        var inputs = Directory.GetFiles(corpus, "*", SearchOption.AllDirectories).Order(StringComparer.Ordinal).ToList();
        Assert.NotEmpty(inputs);
        using var fuzzed = await Task.Run(() => FuzzTargets.Create(target)).WaitAsync(PerInput);
        foreach (var file in inputs)
        {
            byte[] input = await File.ReadAllBytesAsync(file);
            try
            {
                await Task.Run(() => fuzzed.Run(input)).WaitAsync(PerInput);
            }
            catch (Exception e)
            {
                Assert.Fail($"{Path.GetRelativePath(corpus, file)}: {e}");
            }
        }
        output.WriteLine($"{target}: {inputs.Count} inputs");
    }
}
