namespace RavenLite.TestKit.Linearizability;

/// <summary>A compare-exchange register's state: the value's index (0: absent) and its value.</summary>
public readonly record struct RegisterState(long Index, string? Value)
{
    /// <summary>The index of a value written by an operation whose answer never came (learned from a later read).</summary>
    public const long UnknownIndex = -1;
}

/// <summary>What an operation on one key did, as the client saw it.</summary>
public enum Outcome
{
    /// <summary>It happened (a read returned, a put succeeded).</summary>
    Ok,

    /// <summary>A put refused: the index was not the expected one.</summary>
    Refused,

    /// <summary>No answer (timeout, connection lost): it may or may not have happened.</summary>
    Unknown,
}

/// <summary>
/// One operation of a history on one key, with when it was invoked and when it completed (any monotonic clock;
/// <see cref="long.MaxValue"/> for an unknown outcome). A read observes <see cref="Result"/>; a put expects
/// <see cref="ExpectedIndex"/> and writes <see cref="Value"/>, answering the new index (Ok) or the current one (Refused).
/// </summary>
public sealed record RegisterOperation(bool IsRead, long ExpectedIndex, string? Value, Outcome Outcome, RegisterState Result, long Invoked, long Completed)
{
    public static RegisterOperation Read(RegisterState observed, long invoked, long completed) => new(true, 0, null, Outcome.Ok, observed, invoked, completed);

    public static RegisterOperation Put(long expectedIndex, string value, Outcome outcome, long answeredIndex, long invoked, long completed) =>
        new(false, expectedIndex, value, outcome, new RegisterState(answeredIndex, outcome == Outcome.Ok ? value : null), invoked, outcome == Outcome.Unknown ? long.MaxValue : completed);
}
