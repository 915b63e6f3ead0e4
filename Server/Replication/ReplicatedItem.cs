namespace RavenLite.Server.Replication;

/// <summary>A document version or a tombstone as a batch carries it (docs/replication.md "Items").</summary>
/// <param name="IsTombstone">A delete (no <paramref name="Data"/>).</param>
/// <param name="Id">The document id (a tombstone's is lower-cased).</param>
/// <param name="Collection">Its collection.</param>
/// <param name="ChangeVector">The version's change vector.</param>
/// <param name="LastModified">When the version was written (or the document deleted), UTC.</param>
/// <param name="Data">The document's stored JSON; empty for a tombstone.</param>
internal sealed record ReplicatedItem(bool IsTombstone, string Id, string Collection, string ChangeVector, DateTime LastModified, ReadOnlyMemory<byte> Data)
{
    /// <summary>True for a revision (a version kept in the document's history), not the document itself.</summary>
    public bool IsRevision { get; init; }

    /// <summary>A counter's state (its document's key in <see cref="Id"/>), instead of a document version; null for documents and tombstones.</summary>
    public CounterItem? Counter { get; init; }

    /// <summary>A time series' change (its document's key in <see cref="Id"/>); null for other items.</summary>
    public SeriesItem? Series { get; init; }

    /// <summary>A time series' change as a batch carries it: the range, whether it was deleted, its entries and (incremental series) their parts.</summary>
    public sealed record SeriesItem(string Name, long From, long To, bool Deleted, List<TimeSeries.TimeSeriesPoint> Points, List<TimeSeries.IncrementalShares.Share> Shares);

    /// <summary>A counter as a batch carries it: its name, whether it was deleted, and its per-database shares.</summary>
    public sealed record CounterItem(string Name, bool Deleted, List<Counters.CounterShares.Share> Shares);

    /// <summary>The items of a batch frame; <see cref="InvalidDataException"/> when one is malformed.</summary>
    public static List<ReplicatedItem> ParseAll(JsonElement batch)
    {
        var result = new List<ReplicatedItem>();
        if (!batch.TryGetProperty("Items", out var items) || items.ValueKind != JsonValueKind.Array)
            throw new InvalidDataException("A replication batch has no Items array.");
        foreach (var item in items.EnumerateArray())
        {
            string type = Text(item, "Type");
            if (type == "Counter")
            {
                result.Add(ParseCounter(item));
                continue;
            }
            if (type == "TimeSeries")
            {
                result.Add(ParseSeries(item));
                continue;
            }
            bool tombstone = type switch
            {
                "Document" or "Revision" => false,
                "Tombstone" => true,
                _ => throw new InvalidDataException($"A replication item of type '{type}' is not known here."),
            };
            var data = ReadOnlyMemory<byte>.Empty;
            if (!tombstone)
            {
                if (!item.TryGetProperty(nameof(Data), out var d) || d.ValueKind != JsonValueKind.Object)
                    throw new InvalidDataException("A replicated document has no Data object.");
                data = System.Runtime.InteropServices.JsonMarshal.GetRawUtf8Value(d).ToArray();
            }
            long ticks = item.TryGetProperty(nameof(LastModified), out var lm) && lm.TryGetInt64(out long t) ? t : 0;
            result.Add(new ReplicatedItem(tombstone, Text(item, "Id"), Text(item, "Collection"), Text(item, "ChangeVector"),
                new DateTime(Math.Clamp(ticks, 0, DateTime.MaxValue.Ticks), DateTimeKind.Utc), data) { IsRevision = type == "Revision" });
        }
        return result;
    }

    private static ReplicatedItem ParseSeries(JsonElement item)
    {
        var points = new List<TimeSeries.TimeSeriesPoint>();
        foreach (var p in item.GetProperty("Points").EnumerateArray())
            points.Add(TimeSeries.TimeSeriesEntryJson.ReadCompact(p));
        var shares = new List<TimeSeries.IncrementalShares.Share>();
        if (item.TryGetProperty("Shares", out var listed) && listed.ValueKind == JsonValueKind.Array)
        {
            foreach (var s in listed.EnumerateArray())
            {
                var increases = s.GetProperty("Increases").EnumerateArray().Select(v => v.GetDouble()).ToArray();
                var decreases = s.GetProperty("Decreases").EnumerateArray().Select(v => v.GetDouble()).ToArray();
                if (increases.Length != decreases.Length || increases.Length is 0 or > TimeSeries.TimeSeriesSegment.MaxValues)
                    throw new InvalidDataException("An incremental part needs as many increases as decreases (1 to 32).");
                shares.Add(new TimeSeries.IncrementalShares.Share(s.GetProperty("At").GetInt64(), Text(s, "Owner"), increases, decreases));
            }
        }
        return new ReplicatedItem(false, Text(item, "DocumentKey"), "", "", DateTime.MinValue, ReadOnlyMemory<byte>.Empty)
        {
            Series = new SeriesItem(Text(item, "Name"), item.GetProperty("From").GetInt64(), item.GetProperty("To").GetInt64(),
                item.TryGetProperty("Deleted", out var d) && d.ValueKind == JsonValueKind.True, points, shares),
        };
    }

    private static ReplicatedItem ParseCounter(JsonElement item)
    {
        var shares = new List<Counters.CounterShares.Share>();
        foreach (var s in item.GetProperty("Shares").EnumerateArray())
            shares.Add(new Counters.CounterShares.Share(Text(s, "DatabaseId"), s.GetProperty("Value").GetInt64(), s.GetProperty("Etag").GetInt64()));
        return new ReplicatedItem(false, Text(item, "DocumentKey"), "", "", DateTime.MinValue, ReadOnlyMemory<byte>.Empty)
        {
            Counter = new CounterItem(Text(item, "Name"), item.TryGetProperty("Deleted", out var d) && d.ValueKind == JsonValueKind.True, shares),
        };
    }

    private static string Text(JsonElement item, string name) =>
        item.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.String && v.GetString() is { Length: > 0 } s
            ? s
            : throw new InvalidDataException($"A replication item has no {name}.");
}
