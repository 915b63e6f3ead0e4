using RavenLite.Server.Formatting;

namespace RavenLite.Server.TimeSeries;

/// <summary>The JSON shape of one time-series entry as the clients read it (<c>{Timestamp, Tag, Values, IsRollup}</c>).</summary>
public static class TimeSeriesEntryJson
{
    /// <summary>Writes <c>{"Timestamp","Tag","Values","IsRollup"}</c>, and <c>"NodeValues":{owner:[values]}</c> when given (an incremental entry's parts).</summary>
    public static void Write(Utf8JsonWriter w, TimeSeriesPoint p, bool isRollup = false, IReadOnlyDictionary<string, double[]>? nodeValues = null)
    {
        w.WriteStartObject();
        WriteFields(w, p);
        w.WriteBoolean("IsRollup", isRollup);
        if (nodeValues != null)
        {
            w.WriteStartObject("NodeValues");
            foreach (var (owner, values) in nodeValues)
            {
                w.WriteStartArray(owner);
                foreach (double v in values)
                    w.WriteNumberValue(v);
                w.WriteEndArray();
            }
            w.WriteEndObject();
        }
        w.WriteEndObject();
    }

    /// <summary>Writes an entry's <c>"Timestamp","Tag","Values"</c> into the object being written (answers and index items share them).</summary>
    public static void WriteFields(Utf8JsonWriter w, TimeSeriesPoint p)
    {
        ArgumentNullException.ThrowIfNull(w);
        w.WriteString("Timestamp", JsonDates.FormatDate(p.Timestamp));
        if (p.Tag != null)
            w.WriteString("Tag", p.Tag);
        else
            w.WriteNull("Tag");
        w.WriteStartArray("Values");
        foreach (double v in p.Values)
            w.WriteNumberValue(v);
        w.WriteEndArray();
    }

    /// <summary>
    /// Writes <c>{"From","To","Entries":[..],"TotalResults"}</c>; an unbounded end is null, as RavenDB writes it (its clients
    /// cache ranges by these bounds).
    /// </summary>
    // total: the range's TotalResults; null leaves it out (a range of the sessions' reads that does not cover the whole series).
    // nodeValues: each entry's per-owner parts (full=true of an incremental series); null leaves NodeValues out.
    public static void WriteRange(Utf8JsonWriter w, long from, long to, List<TimeSeriesPoint> entries, long? total, bool isRollup = false,
        Func<TimeSeriesPoint, IReadOnlyDictionary<string, double[]>>? nodeValues = null)
    {
        w.WriteStartObject();
        JsonDates.WriteBound(w, "From", from);
        JsonDates.WriteBound(w, "To", to);
        w.WriteStartArray("Entries");
        foreach (var p in entries)
            Write(w, p, isRollup, nodeValues?.Invoke(p));
        w.WriteEndArray();
        if (total is { } t)
            w.WriteNumber("TotalResults", t);
        w.WriteEndObject();
    }

    /// <summary>Writes the compact shape dumps and replication carry: <c>[ms since 0001-01-01, [values], tag?]</c>.</summary>
    public static void WriteCompact(Utf8JsonWriter w, TimeSeriesPoint p)
    {
        ArgumentNullException.ThrowIfNull(w);
        w.WriteStartArray();
        w.WriteNumberValue(p.Milliseconds);
        w.WriteStartArray();
        foreach (double v in p.Values)
            w.WriteNumberValue(v);
        w.WriteEndArray();
        if (p.Tag != null)
            w.WriteStringValue(p.Tag);
        w.WriteEndArray();
    }

    /// <summary>Reads the shape <see cref="WriteCompact"/> writes.</summary>
    public static TimeSeriesPoint ReadCompact(JsonElement e) =>
        new(e[0].GetInt64(), e[1].EnumerateArray().Select(v => v.GetDouble()).ToArray(), e.GetArrayLength() > 2 && e[2].ValueKind == JsonValueKind.String ? e[2].GetString() : null);

    /// <summary>A rollup series (<c>{name}@{policy}</c>), written by the policies.</summary>
    public static bool IsRollup(string name) => name.Contains('@', StringComparison.Ordinal);
}
