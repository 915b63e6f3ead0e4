namespace RavenLite.Server.Databases;

/// <summary>
/// Which member of a database's group runs each ongoing task (docs/cluster.md "Ongoing tasks"). Every member holds
/// every task (they are part of the database record), but only one runs it: the task's mentor node while that node is a
/// member, else the member picked by the task id among the members sorted by tag — the same choice on every node that
/// applied the same group change, whatever order the clients prefer. A rehab or promotable runs none; a database on
/// one server (no group) runs all of its tasks. Thread-safe: the group is replaced whole.
/// </summary>
public sealed class TaskOwnership
{
    private volatile Group? _group;

    private sealed record Group(string Me, IReadOnlyList<string> Members, IReadOnlyDictionary<string, string> Urls);

    /// <summary>Raised (on the caller's thread) when the group's members or this node's tag changed: tasks may move.</summary>
    public event Action? Changed;

    /// <summary>
    /// Sets the group as this node applied it: its tag <paramref name="me"/>, the <paramref name="members"/> (not rehabs
    /// or promotables) and each node's URL.
    /// </summary>
    public void SetGroup(string me, IReadOnlyList<string> members, IReadOnlyDictionary<string, string> urls)
    {
        ArgumentNullException.ThrowIfNull(members);
        var sorted = members.Order(StringComparer.Ordinal).ToList();
        var old = _group;
        if (old != null && old.Me == me && old.Members.SequenceEqual(sorted) && old.Urls.Count == urls.Count && !old.Urls.Except(urls).Any())
            return;
        _group = new Group(me, sorted, new Dictionary<string, string>(urls, StringComparer.Ordinal));
        Changed?.Invoke();
    }

    /// <summary>The tag of the node that runs task <paramref name="taskId"/>, null for a database on one server (this one runs it).</summary>
    public string? ResponsibleNode(long taskId, string? mentorNode)
    {
        var group = _group;
        if (group == null || group.Members.Count == 0)
            return null;
        if (mentorNode != null && group.Members.Contains(mentorNode, StringComparer.Ordinal))
            return mentorNode;
        return group.Members[(int)((ulong)taskId % (ulong)group.Members.Count)];
    }

    /// <summary>The URL of the node <see cref="ResponsibleNode"/> names, null when it is this server (or unknown).</summary>
    public string? UrlOf(string? tag) => tag != null && _group?.Urls.GetValueOrDefault(tag) is { } url ? url : null;

    /// <summary>True when this node runs task <paramref name="taskId"/>.</summary>
    public bool Owns(long taskId, string? mentorNode) =>
        _group is not { } group || ResponsibleNode(taskId, mentorNode) == group.Me;
}
