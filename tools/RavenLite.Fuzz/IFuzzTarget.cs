namespace RavenLite.Fuzz;

/// <summary>
/// One kind of outside input fed to RavenLite (docs/reliability.md "Fuzzing"). <see cref="Run"/> returns when the input
/// was handled as the product promises — accepted, or refused the documented way — and throws
/// <see cref="FuzzFindingException"/> (or anything else) when it was not: that is a finding.
/// </summary>
public interface IFuzzTarget : IDisposable
{
    /// <summary>Feeds one input.</summary>
    void Run(ReadOnlySpan<byte> input);
}
