using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.TimeSeries;

/// <summary>
/// What replication needs of time series (docs/replication.md "Time series"): every change of a series — entries
/// written in a range, or a range deleted — is logged under a new etag (<c>TimeSeriesChanges</c>, docs/format/documents.md),
/// and travels as the range's entries as they are when it is sent. A destination merges them into its own: the union
/// by timestamp, and at a timestamp both hold with different values, the larger values (compared in order, then the
/// tag) — the same choice on every node, so series never conflict. A deleted range is deleted. Rollups are not logged:
/// every node makes its own from its raw entries.
/// </summary>
public static class TimeSeriesReplication
{
    internal const string LogTree = "TimeSeriesChanges";

    /// <summary>
    /// A logged change, with the range's entries as of the reading transaction (none for a delete) and, for an
    /// incremental series, the entries' per-instance parts (which are what merges; the totals follow from them).
    /// </summary>
    public sealed record Change(long Etag, string DocumentKey, string Name, long From, long To, bool Deleted, List<TimeSeriesPoint> Points,
        List<IncrementalShares.Share> Shares);

    /// <summary>Logs a change of series <paramref name="name"/> of the document keyed <paramref name="docKey"/> in [<paramref name="from"/>, <paramref name="to"/>] (ms).</summary>
    public static void Record(DocumentsWriteContext ctx, ReadOnlySpan<byte> docKey, string name, long from, long to, bool deleted)
    {
        ArgumentNullException.ThrowIfNull(ctx);
        var value = new byte[19 + docKey.Length + Encoding.UTF8.GetByteCount(name)];
        value[0] = deleted ? (byte)1 : (byte)0;
        BinaryPrimitives.WriteInt64LittleEndian(value.AsSpan(1), from);
        BinaryPrimitives.WriteInt64LittleEndian(value.AsSpan(9), to);
        BinaryPrimitives.WriteUInt16LittleEndian(value.AsSpan(17), (ushort)docKey.Length);
        docKey.CopyTo(value.AsSpan(19));
        Encoding.UTF8.GetBytes(name, value.AsSpan(19 + docKey.Length));
        ctx.Transaction.CreateTree(LogTree).Put(DocumentsStorage.EtagKey(ctx.NextEtag()), value);
    }

    /// <summary>Logged changes after <paramref name="afterEtag"/>, in etag order, each with its range's entries now (constant memory per change).</summary>
    public static IEnumerable<Change> ScanByEtag(Transaction tx, long afterEtag)
    {
        if (tx.ReadTree(LogTree) is not { } log)
            yield break;
        var cursor = log.CreateCursor();
        for (bool ok = cursor.Seek(DocumentsStorage.EtagKey(afterEtag + 1)); ok; ok = cursor.MoveNext())
        {
            var v = cursor.Value;
            bool deleted = v[0] == 1;
            long from = BinaryPrimitives.ReadInt64LittleEndian(v[1..]), to = BinaryPrimitives.ReadInt64LittleEndian(v[9..]);
            int keyLength = BinaryPrimitives.ReadUInt16LittleEndian(v[17..]);
            var docKey = v.Slice(19, keyLength).ToArray();
            string name = Encoding.UTF8.GetString(v[(19 + keyLength)..]);
            var points = deleted ? [] : TimeSeriesStore.Read(tx, docKey, name, from, to).ToList();
            var shares = deleted || !TimeSeriesOperation.IsIncremental(name) ? [] : IncrementalShares.Read(tx, docKey, name, from, to);
            yield return new Change(BinaryPrimitives.ReadInt64BigEndian(cursor.Key), Encoding.UTF8.GetString(docKey), name, from, to, deleted, points, shares);
        }
    }

    /// <summary>
    /// Merges a change from another instance (see the type's rules). A document not here yet still takes it: the feed
    /// sends a document at its latest etag, after changes of its series made before; one deleted here does not. A change
    /// that changed something is logged again, so it flows on; one that changed nothing is not (a ring settles).
    /// </summary>
    public static void Merge(DocumentsWriteContext ctx, byte[] docKey, string name, long from, long to, bool deleted, List<TimeSeriesPoint> incoming,
        List<IncrementalShares.Share> shares)
    {
        ArgumentNullException.ThrowIfNull(ctx);
        ArgumentNullException.ThrowIfNull(incoming);
        ArgumentNullException.ThrowIfNull(shares);
        if (!DocumentsStorage.Docs(ctx.Transaction).TryGet(docKey, out _) && ctx.GetTombstone(Encoding.UTF8.GetString(docKey)) != null)
            return; // deleted here: its series went with it
        bool changed = false;
        if (deleted)
        {
            TimeSeriesStore.Change(ctx.Transaction, docKey, name, from, to, points =>
            {
                var kept = points.Where(p => p.Milliseconds < from || p.Milliseconds > to).ToList();
                changed = kept.Count != points.Count;
                return kept;
            });
            IncrementalShares.Delete(ctx.Transaction, docKey, name, from, to);
        }
        else if (shares.Count > 0)
            changed = MergeShares(ctx, docKey, name, shares);
        else if (incoming.Count > 0)
        {
            TimeSeriesStore.Change(ctx.Transaction, docKey, name, incoming[0].Milliseconds, incoming[^1].Milliseconds, points =>
            {
                var byTime = points.ToDictionary(p => p.Milliseconds);
                foreach (var p in incoming)
                {
                    if (byTime.TryGetValue(p.Milliseconds, out var held) && !Wins(p, held))
                        continue;
                    byTime[p.Milliseconds] = p;
                    changed = true;
                }
                return [.. byTime.Values.OrderBy(p => p.Milliseconds)];
            });
        }
        if (changed)
            Record(ctx, docKey, name, from, to, deleted);
    }

    /// <summary>An incremental series: the parts merge (<see cref="IncrementalShares"/>) and the entries they changed take their new totals.</summary>
    private static bool MergeShares(DocumentsWriteContext ctx, byte[] docKey, string name, List<IncrementalShares.Share> shares)
    {
        var tx = ctx.Transaction;
        long first = shares.Min(s => s.Milliseconds), last = shares.Max(s => s.Milliseconds);
        var held = TimeSeriesStore.Read(tx, docKey, name, first, last).ToDictionary(p => p.Milliseconds);
        var entries = IncrementalShares.Merge(tx, docKey, name, TimeSeriesOperation.IncrementalOwner(ctx.Storage), shares,
            ms => held.TryGetValue(ms, out var p) ? p.Values : null);
        if (entries.Count == 0)
            return false;
        TimeSeriesStore.Change(tx, docKey, name, entries.Keys.First(), entries.Keys.Last(), points =>
        {
            var byTime = points.ToDictionary(p => p.Milliseconds);
            foreach (var (ms, entry) in entries)
                byTime[ms] = entry;
            return [.. byTime.Values.OrderBy(p => p.Milliseconds)];
        });
        return true;
    }

    /// <summary>True when <paramref name="incoming"/> replaces <paramref name="held"/> at the same time: larger values (in order), then the larger tag; equal entries do not.</summary>
    private static bool Wins(TimeSeriesPoint incoming, TimeSeriesPoint held)
    {
        for (int i = 0; i < Math.Max(incoming.Values.Length, held.Values.Length); i++)
        {
            double a = i < incoming.Values.Length ? incoming.Values[i] : double.NegativeInfinity;
            double b = i < held.Values.Length ? held.Values[i] : double.NegativeInfinity;
            if (a != b)
                return a > b;
        }
        return string.CompareOrdinal(incoming.Tag, held.Tag) > 0;
    }
}
