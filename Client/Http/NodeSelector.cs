namespace RavenLite.Client.Http;

/// <summary>
/// The nodes a database's requests may go to, in the order of its topology (<c>GET /topology?name=</c>: members, then
/// rehabs), and which one to try first: the preferred node (the first that answers; a node that fails passes the
/// preference to the next, and takes it back once it answers again — <see cref="NodeHealthChecks"/>), for reads the next in turn (round robin) or the fastest. Thread-safe: the state is one
/// immutable record swapped whole.
/// </summary>
internal sealed class NodeSelector(IReadOnlyList<Uri> initial)
{
    private const int RaceEvery = 128;

    private sealed record State(IReadOnlyList<Uri> Nodes, long Etag, int Preferred, int Fastest);

    private State _state = new(initial, -1, 0, -1);
    private int _turn = -1;
    private int _reads;

    /// <summary>The topology etag the nodes were read at (-1: not read yet; the initial URLs).</summary>
    public long Etag => Volatile.Read(ref _state).Etag;

    /// <summary>The nodes, in topology order.</summary>
    public IReadOnlyList<Uri> Nodes => Volatile.Read(ref _state).Nodes;

    /// <summary>Every node, the one to try first first.</summary>
    public List<Uri> Order(bool read, ReadBalanceBehavior behavior)
    {
        var s = Volatile.Read(ref _state);
        int n = s.Nodes.Count;
        int first = read && behavior == ReadBalanceBehavior.RoundRobin ? (int)((uint)Interlocked.Increment(ref _turn) % (uint)n)
            : read && behavior == ReadBalanceBehavior.FastestNode && s.Fastest >= 0 ? s.Fastest
            : s.Preferred;
        return [.. Enumerable.Range(0, n).Select(i => s.Nodes[(first + i) % n])];
    }

    /// <summary>True when this read should go to every node to find the fastest (none known yet, or every 128th read).</summary>
    public bool ShouldRace(bool read, ReadBalanceBehavior behavior)
    {
        if (!read || behavior != ReadBalanceBehavior.FastestNode || Nodes.Count < 2)
            return false;
        return Volatile.Read(ref _state).Fastest < 0 || Interlocked.Increment(ref _reads) % RaceEvery == 0;
    }

    /// <summary><paramref name="node"/> did not answer: the preference (and the fastest) moves on to the next node.</summary>
    public void Failed(Uri node) => Swap(s =>
    {
        int i = IndexOf(s.Nodes, node);
        if (i < 0)
            return s;
        return s with
        {
            Preferred = s.Preferred == i ? (i + 1) % s.Nodes.Count : s.Preferred,
            Fastest = s.Fastest == i ? -1 : s.Fastest,
        };
    });

    /// <summary>
    /// <paramref name="node"/>, which had failed, answers again: preferred again when the topology lists it before the
    /// node preferred now (the order the cluster asks the clients to prefer).
    /// </summary>
    public void Restored(Uri node) => Swap(s =>
    {
        int i = IndexOf(s.Nodes, node);
        return i >= 0 && i < s.Preferred ? s with { Preferred = i } : s;
    });

    /// <summary><paramref name="node"/> answered a race first.</summary>
    public void Fastest(Uri node) => Swap(s => s with { Fastest = IndexOf(s.Nodes, node) });

    /// <summary>A topology read from a node: its nodes in order and its etag; the preferred node stays preferred while it is listed.</summary>
    public void Update(IReadOnlyList<Uri> nodes, long etag)
    {
        if (nodes.Count == 0)
            return;
        Swap(s =>
        {
            if (etag <= s.Etag)
                return s;
            int preferred = s.Etag < 0 ? 0 : Math.Max(0, IndexOf(nodes, s.Nodes[s.Preferred]));
            return new State(nodes, etag, preferred, -1);
        });
    }

    private void Swap(Func<State, State> change)
    {
        while (true)
        {
            var current = Volatile.Read(ref _state);
            if (Interlocked.CompareExchange(ref _state, change(current), current) == current)
                return;
        }
    }

    private static int IndexOf(IReadOnlyList<Uri> nodes, Uri node)
    {
        for (int i = 0; i < nodes.Count; i++)
            if (Uri.Compare(nodes[i], node, UriComponents.SchemeAndServer, UriFormat.Unescaped, StringComparison.OrdinalIgnoreCase) == 0)
                return i;
        return -1;
    }
}
