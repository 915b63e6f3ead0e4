using RavenLite.TestKit.Linearizability;

namespace RavenLite.Server.Tests.Cluster;

/// <summary>
/// The linearizability checker the cluster tests use (TestKit/Linearizability), on histories whose answer is known:
/// it must accept every linearizable one and catch each kind of violation — above all a stale read, what a follower
/// answering from its own state without a read barrier produces.
/// </summary>
public sealed class RegisterCheckerTests
{
    private static readonly RegisterState Absent = new(0, null);

    [Fact]
    public void A_read_after_an_acknowledged_put_that_misses_it_is_caught()
    {
        var put = RegisterOperation.Put(0, "a", Outcome.Ok, 5, invoked: 0, completed: 1);
        Assert.True(RegisterChecker.IsLinearizable([put, RegisterOperation.Read(new(5, "a"), 2, 3)]));
        Assert.False(RegisterChecker.IsLinearizable([put, RegisterOperation.Read(Absent, 2, 3)])); // stale: no read barrier
    }

    [Fact]
    public void Concurrent_operations_may_take_effect_in_either_order()
    {
        var put = RegisterOperation.Put(0, "a", Outcome.Ok, 5, invoked: 0, completed: 10);
        Assert.True(RegisterChecker.IsLinearizable([put, RegisterOperation.Read(Absent, 1, 2)]));
        Assert.True(RegisterChecker.IsLinearizable([put, RegisterOperation.Read(new(5, "a"), 1, 2)]));
        // Two reads, the second after the first completed, cannot see the value disappear.
        Assert.False(RegisterChecker.IsLinearizable([put, RegisterOperation.Read(new(5, "a"), 1, 2), RegisterOperation.Read(Absent, 3, 4)]));
    }

    [Fact]
    public void Two_puts_expecting_the_same_index_cannot_both_succeed_and_a_refusal_must_name_the_current_index()
    {
        Assert.False(RegisterChecker.IsLinearizable([
            RegisterOperation.Put(0, "a", Outcome.Ok, 5, 0, 10),
            RegisterOperation.Put(0, "b", Outcome.Ok, 6, 1, 11),
        ]));
        Assert.True(RegisterChecker.IsLinearizable([
            RegisterOperation.Put(0, "a", Outcome.Ok, 5, 0, 10),
            RegisterOperation.Put(0, "b", Outcome.Refused, 5, 1, 11),
        ]));
        Assert.False(RegisterChecker.IsLinearizable([
            RegisterOperation.Put(0, "a", Outcome.Ok, 5, 0, 1),
            RegisterOperation.Put(5, "b", Outcome.Refused, 5, 2, 3), // refused though the index was the expected one
        ]));
        Assert.True(RegisterChecker.IsLinearizable([
            RegisterOperation.Put(0, "a", Outcome.Ok, 5, 0, 1),
            RegisterOperation.Put(5, "b", Outcome.Ok, 8, 2, 3),
            RegisterOperation.Read(new(8, "b"), 4, 5),
        ]));
    }

    [Fact]
    public void A_put_without_an_answer_may_or_may_not_have_happened()
    {
        var lost = RegisterOperation.Put(0, "a", Outcome.Unknown, 0, invoked: 0, completed: 0);
        Assert.True(RegisterChecker.IsLinearizable([lost, RegisterOperation.Read(Absent, 5, 6)]));
        Assert.True(RegisterChecker.IsLinearizable([lost, RegisterOperation.Read(new(7, "a"), 5, 6), RegisterOperation.Put(7, "b", Outcome.Ok, 9, 7, 8)]));
        Assert.False(RegisterChecker.IsLinearizable([lost, RegisterOperation.Read(new(7, "a"), 5, 6), RegisterOperation.Read(Absent, 7, 8)]));
    }

    /// <summary>
    /// A put without an answer that took effect and that no read saw still shows: another client's put is refused with
    /// the index it made, and that client's next put expects it. Leaving such a put out (as an unseen one may be) would
    /// call this linearizable history a violation.
    /// </summary>
    [Fact]
    public void A_put_without_an_answer_seen_only_through_a_refusal_may_have_happened()
    {
        var history = new List<RegisterOperation>
        {
            RegisterOperation.Put(0, "a", Outcome.Ok, 5, 0, 1),
            RegisterOperation.Put(5, "u", Outcome.Unknown, 0, 2, 0), // took effect at index 7; its client gave up
            RegisterOperation.Put(5, "d", Outcome.Refused, 7, 3, 4),
            RegisterOperation.Put(7, "d", Outcome.Ok, 9, 5, 6),
            RegisterOperation.Read(new(9, "d"), 7, 8),
        };
        Assert.True(RegisterChecker.IsLinearizable(history));
        // Without the put that had no answer, index 7 comes from nowhere: not linearizable.
        Assert.False(RegisterChecker.IsLinearizable([.. history.Where(o => o.Value != "u")]));
    }
}
