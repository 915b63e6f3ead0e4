using RavenLite.Server.Counters;
using RavenLite.Server.Documents;
using RavenLite.Server.TimeSeries;
using RavenLite.Server.Formatting;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Indexing;

/// <summary>
/// What a counters or time-series index maps (docs/format/indexes.md "Counters and time-series indexes"): the items of
/// one document as JSON — a counter as <c>{Name, Value, DocumentId}</c>, a series as <c>{Name, DocumentId, Start, End,
/// Count, Entries}</c> — and which documents' items changed after an etag, read from the change logs replication keeps
/// (<c>CountersByEtag</c>, <c>TimeSeriesChanges</c>). A change re-maps all of its document's items the index reads.
/// </summary>
internal static class IndexItems
{
    /// <summary>The position key of an item index: the last etag of its change log it has processed.</summary>
    public static string PositionKey(IndexSourceType kind) => kind == IndexSourceType.Counters ? "@counters" : "@timeseries";

    /// <summary>The last etag of the change log of <paramref name="kind"/> (0: none).</summary>
    public static long LastEtag(Transaction tx, IndexSourceType kind)
    {
        if (tx.ReadTree(kind == IndexSourceType.Counters ? CounterShares.ByEtagTree : TimeSeriesReplication.LogTree) is not { } log)
            return 0;
        var c = log.CreateCursor();
        return c.SeekToLast() ? BinaryPrimitives.ReadInt64BigEndian(c.Key) : 0;
    }

    /// <summary>Changes after <paramref name="afterEtag"/>, in etag order: the etag and the lower-cased key of the document whose items changed.</summary>
    public static IEnumerable<(long Etag, byte[] DocKey)> ChangedAfter(Transaction tx, IndexSourceType kind, long afterEtag)
    {
        if (tx.ReadTree(kind == IndexSourceType.Counters ? CounterShares.ByEtagTree : TimeSeriesReplication.LogTree) is not { } log)
            yield break;
        var c = log.CreateCursor();
        for (bool ok = c.Seek(DocumentsStorage.EtagKey(afterEtag + 1)); ok; ok = c.MoveNext())
        {
            long etag = BinaryPrimitives.ReadInt64BigEndian(c.Key);
            var v = c.Value;
            // CountersByEtag: the counter's key (document key, separator, name); TimeSeriesChanges: flags, range, key length, key, name.
            var docKey = kind == IndexSourceType.Counters ? v[..v.IndexOf(ExtensionKeys.Separator)] : v.Slice(19, BinaryPrimitives.ReadUInt16LittleEndian(v[17..]));
            yield return (etag, docKey.ToArray());
        }
    }

    /// <summary>The items of the document that <paramref name="source"/> reads, each as JSON: (item name, JSON).</summary>
    public static List<(string Name, byte[] Json)> Of(Transaction tx, IndexSource source, ReadOnlySpan<byte> docKey, string docId, JsonElement document)
    {
        var items = new List<(string, byte[])>();
        if (source.Kind == IndexSourceType.Counters)
        {
            foreach (var counter in CountersStore.GetAll(tx, docKey))
                if (source.Reads(counter.Name))
                    items.Add((counter.Name, Json(w =>
                    {
                        w.WriteString("Name", counter.Name);
                        w.WriteNumber("Value", counter.Value);
                        w.WriteString("DocumentId", docId);
                    })));
            return items;
        }
        foreach (string name in SeriesNames(document))
        {
            if (!source.Reads(name))
                continue;
            var points = TimeSeriesStore.Read(tx, docKey, name, long.MinValue, long.MaxValue).ToList();
            if (points.Count == 0)
                continue;
            items.Add((name, Json(w =>
            {
                w.WriteString("Name", name);
                w.WriteString("DocumentId", docId);
                w.WriteString("Start", JsonDates.FormatDate(points[0].Timestamp));
                w.WriteString("End", JsonDates.FormatDate(points[^1].Timestamp));
                w.WriteNumber("Count", points.Count);
                w.WriteStartArray("Entries");
                foreach (var p in points)
                {
                    w.WriteStartObject();
                    TimeSeriesEntryJson.WriteFields(w, p);
                    w.WriteNumber("Value", p.Values[0]);
                    w.WriteEndObject();
                }
                w.WriteEndArray();
            })));
        }
        return items;
    }

    /// <summary>The names of a document's time series, as its <c>@metadata.@timeseries</c> lists them (rollups included).</summary>
    public static IEnumerable<string> SeriesNames(JsonElement document) =>
        document.TryGetProperty("@metadata", out var meta) && meta.ValueKind == JsonValueKind.Object && meta.TryGetProperty("@timeseries", out var list) && list.ValueKind == JsonValueKind.Array
            ? list.EnumerateArray().Where(n => n.ValueKind == JsonValueKind.String).Select(n => n.GetString()!).ToList()
            : [];

    private static byte[] Json(Action<Utf8JsonWriter> body)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(256);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            body(w);
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }
}
