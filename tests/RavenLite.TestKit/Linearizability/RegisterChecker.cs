namespace RavenLite.TestKit.Linearizability;

/// <summary>
/// Whether a history of operations on one compare-exchange register is linearizable (the Wing–Gong search, with
/// Lowe's memoization of visited (linearized set, state) pairs): is there an order of the operations, each placed
/// between its invocation and its completion, in which each does what it answered? Operations without an answer may be
/// placed anywhere after their invocation, or left out. Used by the cluster tests on histories recorded against real
/// processes; its own tests feed it histories known to be linearizable or not.
/// </summary>
public static class RegisterChecker
{
    /// <summary>True when <paramref name="history"/> is linearizable from an absent value.</summary>
    public static bool IsLinearizable(IReadOnlyList<RegisterOperation> history, int maxStates = 2_000_000)
    {
        ArgumentNullException.ThrowIfNull(history);
        // A put without an answer whose value no read ever saw is left out, which keeps the search small — unless some
        // answer names an index that no answered put produced: then a put without an answer took effect unseen (a
        // refusal reported its index, and the refused client's next put expected it), so all of them stay in.
        var seen = history.Where(o => o.IsRead && o.Result.Value != null).Select(o => o.Result.Value).ToHashSet(StringComparer.Ordinal);
        var produced = history.Where(o => !o.IsRead && o.Outcome == Outcome.Ok).Select(o => o.Result.Index).Append(0).ToHashSet();
        bool unseenWrite = history.Any(o => !o.IsRead
            && ((o.Outcome == Outcome.Refused && !produced.Contains(o.Result.Index)) || (o.Outcome == Outcome.Ok && !produced.Contains(o.ExpectedIndex))));
        var ops = history.Where(o => o.Outcome != Outcome.Unknown || unseenWrite || seen.Contains(o.Value)).OrderBy(o => o.Invoked).ToArray();
        var done = new bool[ops.Length];
        int remaining = ops.Count(o => o.Outcome != Outcome.Unknown);
        var visited = new HashSet<string>(StringComparer.Ordinal);
        return Search(ops, done, remaining, new RegisterState(0, null), visited, maxStates);
    }

    private static bool Search(RegisterOperation[] ops, bool[] done, int remaining, RegisterState state, HashSet<string> visited, int maxStates)
    {
        if (remaining == 0)
            return true;
        if (!visited.Add(Key(done, state)))
            return false;
        if (visited.Count > maxStates)
            throw new InvalidOperationException($"The history is too large to check ({maxStates:N0} states visited).");
        long horizon = long.MaxValue; // no operation invoked after the earliest pending completion can come before it
        for (int i = 0; i < ops.Length; i++)
            if (!done[i] && ops[i].Completed < horizon)
                horizon = ops[i].Completed;
        for (int i = 0; i < ops.Length; i++)
        {
            if (done[i] || ops[i].Invoked > horizon)
                continue;
            if (Apply(state, ops[i]) is not { } next)
                continue;
            done[i] = true;
            bool found = Search(ops, done, remaining - (ops[i].Outcome == Outcome.Unknown ? 0 : 1), next, visited, maxStates);
            done[i] = false;
            if (found)
                return true;
        }
        return false;
    }

    /// <summary>The state after <paramref name="op"/> applied at <paramref name="state"/>, or null when it could not have answered what it did there.</summary>
    private static RegisterState? Apply(RegisterState state, RegisterOperation op)
    {
        if (state.Index == RegisterState.UnknownIndex)
            return ApplyAtUnknownIndex(state, op);
        if (op.IsRead)
            return state == op.Result ? state : null;
        bool expected = state.Index == op.ExpectedIndex;
        return op.Outcome switch
        {
            Outcome.Ok => expected && op.Result.Index > state.Index ? new RegisterState(op.Result.Index, op.Value) : null,
            Outcome.Refused => !expected ? state : null,
            _ => expected ? new RegisterState(RegisterState.UnknownIndex, op.Value) : null,
        };
    }

    /// <summary>
    /// After a put whose answer never came took effect, the value is known but not its index: an operation that
    /// reports one teaches it (a read, a refusal's current index); one that needs it is given the benefit of the doubt.
    /// </summary>
    private static RegisterState? ApplyAtUnknownIndex(RegisterState state, RegisterOperation op)
    {
        if (op.IsRead)
            return state.Value == op.Result.Value ? op.Result : null;
        return op.Outcome switch
        {
            Outcome.Ok => op.ExpectedIndex != 0 ? new RegisterState(op.Result.Index, op.Value) : null,
            Outcome.Refused => op.ExpectedIndex != op.Result.Index ? new RegisterState(op.Result.Index, state.Value) : null,
            _ => op.ExpectedIndex != 0 ? new RegisterState(RegisterState.UnknownIndex, op.Value) : null,
        };
    }

    private static string Key(bool[] done, RegisterState state)
    {
        var sb = new System.Text.StringBuilder(done.Length + 32);
        foreach (bool d in done)
            sb.Append(d ? '1' : '0');
        return sb.Append('|').Append(state.Index).Append('|').Append(state.Value).ToString();
    }
}
