using RavenLite.Storage.Transactions;

namespace RavenLite.Server.TimeSeries;

/// <summary>
/// What an incremental series (<c>INC:</c>) keeps besides its totals (docs/format/documents.md "Incremental shares"):
/// per entry, every database instance's part, as a grow-only sum of its increases and a shrink-only sum of its
/// decreases per value. An instance only ever changes its own part, so parts from different nodes merge by taking, per
/// value, the larger increase and the smaller decrease — concurrent increments on two nodes add up, in any order, and
/// never conflict. An entry's values are the sums of its parts; the series' segments hold those totals, so reads,
/// queries, indexes and rollups never look here. <c>TimeSeriesShares</c>: key = the series' key prefix
/// (<see cref="TimeSeriesStore"/>), the time (int64 ms, big endian), the part's owner (<c>{node tag}-{database id}</c>,
/// UTF-8); value = a value count (uint8), then per value its increase and decrease (two doubles, little endian).
/// </summary>
public static class IncrementalShares
{
    internal const string TreeName = "TimeSeriesShares";

    /// <summary>One instance's part of an entry: the sum of its increases and of its decreases per value.</summary>
    public sealed record Share(long Milliseconds, string Owner, double[] Increases, double[] Decreases)
    {
        /// <summary>What this part adds to the entry, per value.</summary>
        public double[] Values => [.. Increases.Select((inc, i) => inc + Decreases[i])];
    }

    private static byte[] Key(byte[] prefix, long ms, string owner)
    {
        var key = new byte[prefix.Length + 8 + Encoding.UTF8.GetByteCount(owner)];
        prefix.CopyTo(key, 0);
        BinaryPrimitives.WriteInt64BigEndian(key.AsSpan(prefix.Length), ms);
        Encoding.UTF8.GetBytes(owner, key.AsSpan(prefix.Length + 8));
        return key;
    }

    /// <summary>The parts of a series' entries within [<paramref name="from"/>, <paramref name="to"/>] (ms), by time then owner.</summary>
    public static List<Share> Read(Transaction tx, ReadOnlySpan<byte> docKey, string name, long from, long to)
    {
        var result = new List<Share>();
        if (tx.ReadTree(TreeName) is not { } tree)
            return result;
        var prefix = TimeSeriesStore.Prefix(docKey, name);
        var c = tree.CreateCursor();
        c.Prefix = prefix;
        var seek = new byte[prefix.Length + 8];
        prefix.CopyTo(seek, 0);
        BinaryPrimitives.WriteInt64BigEndian(seek.AsSpan(prefix.Length), Math.Max(from, 0));
        for (bool ok = c.Seek(seek); ok; ok = c.MoveNext())
        {
            long ms = BinaryPrimitives.ReadInt64BigEndian(c.Key[prefix.Length..]);
            if (ms > to)
                break;
            result.Add(Decode(ms, Encoding.UTF8.GetString(c.Key[(prefix.Length + 8)..]), c.Value));
        }
        return result;
    }

    /// <summary>
    /// Adds <paramref name="deltas"/> to <paramref name="owner"/>'s part of the entry at <paramref name="ms"/> and answers
    /// the entry as it now is. An entry that has a total but no parts (written before parts were kept, or restored from
    /// a dump) has one implicit part, the owner's: <paramref name="heldTotal"/>.
    /// </summary>
    public static TimeSeriesPoint Add(WriteTransaction tx, ReadOnlySpan<byte> docKey, string name, string owner, long ms, double[] deltas, double[]? heldTotal)
    {
        ArgumentNullException.ThrowIfNull(deltas);
        var shares = Read(tx, docKey, name, ms, ms);
        if (shares.Count == 0 && heldTotal != null)
            shares.Add(Split(ms, owner, heldTotal));
        int own = shares.FindIndex(s => s.Owner == owner);
        var mine = own < 0 ? new Share(ms, owner, [], []) : shares[own];
        mine = Widen(mine, deltas.Length);
        for (int i = 0; i < deltas.Length; i++)
        {
            if (deltas[i] >= 0)
                mine.Increases[i] += deltas[i];
            else
                mine.Decreases[i] += deltas[i];
        }
        if (own < 0)
            shares.Add(mine);
        else
            shares[own] = mine;
        Write(tx, docKey, name, mine);
        return Entry(ms, shares);
    }

    /// <summary>
    /// Takes parts from another instance (see the type's rules); answers the entries that changed, as they now are, by
    /// time. Entries here without parts keep their total as this instance's implicit part (<paramref name="owner"/>).
    /// </summary>
    public static SortedDictionary<long, TimeSeriesPoint> Merge(WriteTransaction tx, ReadOnlySpan<byte> docKey, string name, string owner,
        IReadOnlyList<Share> incoming, Func<long, double[]?> heldTotal)
    {
        ArgumentNullException.ThrowIfNull(incoming);
        ArgumentNullException.ThrowIfNull(heldTotal);
        var changed = new SortedDictionary<long, TimeSeriesPoint>();
        foreach (var atTime in incoming.GroupBy(s => s.Milliseconds))
        {
            long ms = atTime.Key;
            var shares = Read(tx, docKey, name, ms, ms);
            if (shares.Count == 0 && heldTotal(ms) is { } held)
            {
                shares.Add(Split(ms, owner, held));
                Write(tx, docKey, name, shares[0]);
            }
            bool any = false;
            foreach (var theirs in atTime)
            {
                int at = shares.FindIndex(s => s.Owner == theirs.Owner);
                var merged = at < 0 ? Widen(theirs, theirs.Increases.Length) : MergeOne(shares[at], theirs);
                if (at >= 0 && SameAs(shares[at], merged))
                    continue;
                if (at < 0)
                    shares.Add(merged);
                else
                    shares[at] = merged;
                Write(tx, docKey, name, merged);
                any = true;
            }
            if (any)
                changed[ms] = Entry(ms, shares);
        }
        return changed;
    }

    /// <summary>Removes the parts of the entries within [<paramref name="from"/>, <paramref name="to"/>] (the range was deleted).</summary>
    public static void Delete(WriteTransaction tx, ReadOnlySpan<byte> docKey, string name, long from, long to)
    {
        if (tx.ReadTree(TreeName) is not { Count: > 0 })
            return;
        var tree = tx.CreateTree(TreeName);
        var prefix = TimeSeriesStore.Prefix(docKey, name);
        foreach (var s in Read(tx, docKey, name, from, to))
            tree.Delete(Key(prefix, s.Milliseconds, s.Owner));
    }

    /// <summary>
    /// The per-owner values of each entry in [<paramref name="from"/>, <paramref name="to"/>] (the answers'
    /// <c>NodeValues</c>); an entry without parts is <paramref name="owner"/>'s alone.
    /// </summary>
    public static Func<TimeSeriesPoint, IReadOnlyDictionary<string, double[]>> NodeValues(Transaction tx, ReadOnlySpan<byte> docKey, string name, long from, long to, string owner)
    {
        var byTime = new Dictionary<long, SortedDictionary<string, double[]>>();
        foreach (var s in Read(tx, docKey, name, from, to))
        {
            if (!byTime.TryGetValue(s.Milliseconds, out var perOwner))
                byTime[s.Milliseconds] = perOwner = new SortedDictionary<string, double[]>(StringComparer.Ordinal);
            perOwner[s.Owner] = s.Values;
        }
        return p => byTime.TryGetValue(p.Milliseconds, out var parts) ? parts : new Dictionary<string, double[]> { [owner] = p.Values };
    }


    private static Share Split(long ms, string owner, double[] total) =>
        new(ms, owner, [.. total.Select(v => Math.Max(v, 0))], [.. total.Select(v => Math.Min(v, 0))]);

    private static Share Widen(Share s, int length)
    {
        int n = Math.Max(length, s.Increases.Length);
        var inc = new double[n];
        var dec = new double[n];
        s.Increases.CopyTo(inc, 0);
        s.Decreases.CopyTo(dec, 0);
        return s with { Increases = inc, Decreases = dec };
    }

    private static Share MergeOne(Share mine, Share theirs)
    {
        var merged = Widen(mine, theirs.Increases.Length);
        for (int i = 0; i < theirs.Increases.Length; i++)
        {
            merged.Increases[i] = Math.Max(merged.Increases[i], theirs.Increases[i]);
            merged.Decreases[i] = Math.Min(merged.Decreases[i], theirs.Decreases[i]);
        }
        return merged;
    }

    private static bool SameAs(Share a, Share b) => a.Increases.SequenceEqual(b.Increases) && a.Decreases.SequenceEqual(b.Decreases);

    /// <summary>
    /// An entry from its parts: the values are their sums; the tag, as RavenDB's incremental entries carry one, is
    /// <c>TC:INC-</c> and the database id of the lowest owner — the same on every node once the parts are the same.
    /// </summary>
    private static TimeSeriesPoint Entry(long ms, List<Share> shares)
    {
        var total = new double[shares.Max(s => s.Increases.Length)];
        foreach (var s in shares)
            for (int i = 0; i < s.Increases.Length; i++)
                total[i] += s.Increases[i] + s.Decreases[i];
        string owner = shares.Select(s => s.Owner).Min(StringComparer.Ordinal)!;
        int dash = owner.IndexOf('-', StringComparison.Ordinal);
        return new TimeSeriesPoint(ms, total, "TC:INC-" + owner[(dash + 1)..]);
    }

    private static void Write(WriteTransaction tx, ReadOnlySpan<byte> docKey, string name, Share s)
    {
        var value = new byte[1 + (s.Increases.Length * 16)];
        value[0] = (byte)s.Increases.Length;
        for (int i = 0; i < s.Increases.Length; i++)
        {
            BinaryPrimitives.WriteDoubleLittleEndian(value.AsSpan(1 + (i * 16)), s.Increases[i]);
            BinaryPrimitives.WriteDoubleLittleEndian(value.AsSpan(9 + (i * 16)), s.Decreases[i]);
        }
        tx.CreateTree(TreeName).Put(Key(TimeSeriesStore.Prefix(docKey, name), s.Milliseconds, s.Owner), value);
    }

    private static Share Decode(long ms, string owner, ReadOnlySpan<byte> value)
    {
        int n = value[0];
        var inc = new double[n];
        var dec = new double[n];
        for (int i = 0; i < n; i++)
        {
            inc[i] = BinaryPrimitives.ReadDoubleLittleEndian(value[(1 + (i * 16))..]);
            dec[i] = BinaryPrimitives.ReadDoubleLittleEndian(value[(9 + (i * 16))..]);
        }
        return new Share(ms, owner, inc, dec);
    }
}
