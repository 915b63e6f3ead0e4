using RavenLite.Storage.Paging;

namespace RavenLite.Storage.Transactions;

/// <summary>
/// Live transactions in start order, for two decisions: which freed pages may be reused (the
/// oldest snapshot), and when a retired committed-page copy's memory may be returned (no
/// transaction that started before its retirement is still live). Thread-safe (one short lock).
/// </summary>
internal sealed class ReaderRegistry
{
    private readonly object _lock = new();
    private readonly LinkedList<(long Seq, long Snapshot)> _live = new();
    private readonly List<(PageBuffer Buffer, long Seq)> _retired = [];
    private long _seq;

    /// <summary>Registers a transaction whose snapshot is read inside the lock (a commit that published a newer state before taking the lock is seen).</summary>
    public LinkedListNode<(long Seq, long Snapshot)> Register(Func<long> snapshot)
    {
        lock (_lock)
            return _live.AddLast((++_seq, snapshot()));
    }

    /// <summary>
    /// Keeps the registration's place in line (buffers retired after it started are not freed while it lives) but no
    /// longer holds back <see cref="OldestSnapshot"/>: for the flusher, once it holds the buffers it will write.
    /// </summary>
    public void ReleaseSnapshot(LinkedListNode<(long Seq, long Snapshot)> node)
    {
        lock (_lock)
            node.Value = (node.Value.Seq, long.MaxValue);
    }

    public void Unregister(LinkedListNode<(long Seq, long Snapshot)> node)
    {
        lock (_lock)
            _live.Remove(node);
    }

    /// <summary>
    /// Oldest live snapshot, or long.MaxValue when none. The minimum over every live transaction, not the
    /// first one: a write transaction registers with the writer's state, which runs ahead of the published
    /// state while a commit is in flight, so a reader that starts after it can hold an older snapshot.
    /// (Taking the first one let a commit release page copies such a reader still reached: found as an
    /// access violation in an index worker's read transaction.)
    /// </summary>
    public long OldestSnapshot
    {
        get
        {
            lock (_lock)
            {
                long oldest = long.MaxValue;
                foreach (var (_, snapshot) in _live)
                    oldest = Math.Min(oldest, snapshot);
                return oldest;
            }
        }
    }

    /// <summary>Number of live transactions.</summary>
    public int LiveCount
    {
        get
        {
            lock (_lock)
                return _live.Count;
        }
    }

    /// <summary>Hands buffers over for freeing once every transaction that might hold their pointers has ended.</summary>
    public void Retire(IEnumerable<PageBuffer> buffers)
    {
        lock (_lock)
        {
            foreach (var b in buffers)
                _retired.Add((b, _seq));
            FreeRetiredLocked();
        }
    }

    /// <summary>Frees retired buffers that no live transaction can reach (under the lock).</summary>
    private void FreeRetiredLocked()
    {
        long oldestSeq = _live.First?.Value.Seq ?? long.MaxValue;
        int kept = 0;
        for (int i = 0; i < _retired.Count; i++)
        {
            if (_retired[i].Seq < oldestSeq)
                _retired[i].Buffer.Free();
            else
                _retired[kept++] = _retired[i];
        }
        _retired.RemoveRange(kept, _retired.Count - kept);
    }

    /// <summary>Frees everything (dispose).</summary>
    public void FreeAll()
    {
        lock (_lock)
        {
            foreach (var (b, _) in _retired)
                b.Free();
            _retired.Clear();
        }
    }
}
