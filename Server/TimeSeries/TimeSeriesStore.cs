using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.TimeSeries;

/// <summary>
/// Time series of documents in the <c>TimeSeries</c> tree (docs/format/documents.md "Time series"): key = document key,
/// 0x1E, lower-cased series name, 0x1E, the segment's first time (int64 ms, big endian); value = a segment
/// (<see cref="TimeSeriesSegment"/>). A change decodes the segments it touches, merges, and encodes them again
/// (splitting what grew past a segment's size). The document's <c>@timeseries</c> lists the names.
/// Static: every method works on the transaction it is given.
/// </summary>
public static class TimeSeriesStore
{
    internal const string TreeName = "TimeSeries";
    private const byte Separator = ExtensionKeys.Separator;

    /// <summary>The key prefix of one series (or, with <paramref name="name"/> null, of all the document's series).</summary>
    internal static byte[] Prefix(ReadOnlySpan<byte> docKey, string? name)
    {
        int nameLength = name == null ? 0 : Encoding.UTF8.GetByteCount(name.ToLowerInvariant()) + 1;
        var p = new byte[docKey.Length + 1 + nameLength];
        docKey.CopyTo(p);
        p[docKey.Length] = Separator;
        if (name != null)
        {
            Encoding.UTF8.GetBytes(name.ToLowerInvariant(), p.AsSpan(docKey.Length + 1));
            p[^1] = Separator;
        }
        return p;
    }

    private static byte[] Key(byte[] prefix, long start)
    {
        var k = new byte[prefix.Length + 8];
        prefix.CopyTo(k, 0);
        BinaryPrimitives.WriteInt64BigEndian(k.AsSpan(prefix.Length), start);
        return k;
    }

    /// <summary>The series' segments overlapping [<paramref name="from"/>, <paramref name="to"/>] (ms), in time order: (key, bytes).</summary>
    private static List<(byte[] Key, byte[] Bytes)> Segments(Transaction tx, byte[] prefix, long from, long to)
    {
        var result = new List<(byte[], byte[])>();
        if (tx.ReadTree(TreeName) is not { } tree)
            return result;
        from = Math.Max(from, 0); // times are ms since 0001-01-01: never negative (big-endian keys would sort a negative last)
        var c = tree.CreateCursor();
        c.Prefix = prefix;
        // The segment holding 'from' is the last one starting at or before it; when none does, the series' first.
        bool ok = (from < long.MaxValue ? c.SeekBefore(Key(prefix, from + 1)) : c.SeekToLast()) || c.SeekToFirst();
        for (; ok; ok = c.MoveNext())
        {
            long start = BinaryPrimitives.ReadInt64BigEndian(c.Key[prefix.Length..]);
            if (start > to)
                break;
            result.Add((c.Key.ToArray(), c.Value.ToArray()));
        }
        return result;
    }

    /// <summary>The entries of a series within [<paramref name="from"/>, <paramref name="to"/>] (ms), in time order.</summary>
    public static IEnumerable<TimeSeriesPoint> Read(Transaction tx, ReadOnlySpan<byte> docKey, string name, long from, long to)
    {
        var segments = Segments(tx, Prefix(docKey, name), from, to);
        return Filter(segments, from, to);
    }

    private static IEnumerable<TimeSeriesPoint> Filter(List<(byte[] Key, byte[] Bytes)> segments, long from, long to)
    {
        foreach (var (_, bytes) in segments)
            foreach (var p in TimeSeriesSegment.Decode(bytes))
                if (p.Milliseconds >= from && p.Milliseconds <= to)
                    yield return p;
    }

    /// <summary>
    /// Applies changes to a series: <paramref name="change"/> receives the entries of the affected range (every segment
    /// overlapping [<paramref name="from"/>, <paramref name="to"/>]) and returns them changed (sorted, distinct times);
    /// the range's segments are replaced by the new encoding. Returns the series' entry count afterwards.
    /// </summary>
    public static void Change(WriteTransaction tx, ReadOnlySpan<byte> docKey, string name, long from, long to, Func<List<TimeSeriesPoint>, List<TimeSeriesPoint>> change)
    {
        var tree = tx.CreateTree(TreeName);
        var prefix = Prefix(docKey, name);
        var segments = Segments(tx, prefix, from, to);
        var points = new List<TimeSeriesPoint>();
        foreach (var (_, bytes) in segments)
            points.AddRange(TimeSeriesSegment.Decode(bytes));
        var changed = change(points);
        foreach (var (key, _) in segments)
            tree.Delete(key);
        foreach (var (start, bytes) in TimeSeriesSegment.Encode(changed))
            tree.Put(Key(prefix, start), bytes);
    }

    /// <summary>True when the series has at least one entry.</summary>
    public static bool Exists(Transaction tx, ReadOnlySpan<byte> docKey, string name)
    {
        if (tx.ReadTree(TreeName) is not { } t)
            return false;
        var c = t.CreateCursor();
        c.Prefix = Prefix(docKey, name);
        return c.SeekToFirst();
    }

    /// <summary>Entry count, first and last time of a series (null when it has no entry).</summary>
    public static (long Count, DateTime Start, DateTime End)? Statistics(Transaction tx, ReadOnlySpan<byte> docKey, string name)
    {
        if (tx.ReadTree(TreeName) is not { } t)
            return null;
        var c = t.CreateCursor();
        c.Prefix = Prefix(docKey, name);
        long count = 0;
        long first = 0;
        byte[]? last = null;
        for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
        {
            var (n, start) = TimeSeriesSegment.Header(c.Value);
            if (count == 0)
                first = start;
            count += n;
            last = c.Value.ToArray();
        }
        if (last == null)
            return null;
        long end = TimeSeriesSegment.Decode(last)[^1].Milliseconds;
        return (count, new DateTime(first * TimeSpan.TicksPerMillisecond, DateTimeKind.Utc), new DateTime(end * TimeSpan.TicksPerMillisecond, DateTimeKind.Utc));
    }

    /// <summary>Removes every series of a document (it is being deleted), their change notes and incremental parts.</summary>
    public static void DeleteAll(WriteTransaction tx, ReadOnlySpan<byte> docKey)
    {
        foreach (string name in new[] { TreeName, ChangedTree, IncrementalShares.TreeName })
        {
            if (tx.ReadTree(name) is not { Count: > 0 })
                continue;
            var tree = tx.CreateTree(name);
            var keys = new List<byte[]>();
            var c = tree.CreateCursor();
            c.Prefix = Prefix(docKey, null);
            for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
                keys.Add(c.Key.ToArray());
            foreach (var k in keys)
                tree.Delete(k);
        }
    }

    internal const string ChangedTree = "TimeSeriesChanged";

    /// <summary>
    /// Notes that a series' entries from <paramref name="fromMs"/> on changed (kept: the earliest such time), so the next
    /// policy run rolls those periods up again (a late entry in a period already rolled up).
    /// </summary>
    public static void MarkChanged(WriteTransaction tx, ReadOnlySpan<byte> docKey, string name, long fromMs)
    {
        var tree = tx.CreateTree(ChangedTree);
        var key = Prefix(docKey, name);
        Span<byte> value = stackalloc byte[8];
        if (tree.TryGet(key, out var old) && BinaryPrimitives.ReadInt64LittleEndian(old) <= fromMs)
            return;
        BinaryPrimitives.WriteInt64LittleEndian(value, Math.Max(fromMs, 0));
        tree.Put(key, value);
    }

    /// <summary>The earliest changed time noted for a series (and the note removed), or null.</summary>
    public static long? TakeChanged(WriteTransaction tx, ReadOnlySpan<byte> docKey, string name)
    {
        if (tx.ReadTree(ChangedTree) is not { Count: > 0 })
            return null;
        var tree = tx.CreateTree(ChangedTree);
        var key = Prefix(docKey, name);
        if (!tree.TryGet(key, out var v))
            return null;
        long from = BinaryPrimitives.ReadInt64LittleEndian(v);
        tree.Delete(key);
        return from;
    }

    /// <summary>Number of segments in the database.</summary>
    public static long SegmentCount(Transaction tx) => tx.ReadTree(TreeName)?.Count ?? 0;
}
