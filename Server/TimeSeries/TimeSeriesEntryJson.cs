using RavenLite.Server.Formatting;

namespace RavenLite.Server.TimeSeries;

/// <summary>The JSON shape of one time-series entry as the clients read it (<c>{Timestamp, Tag, Values, IsRollup}</c>).</summary>
public static class TimeSeriesEntryJson
{
    /// <summary>Writes <c>{"Timestamp","Tag","Values","IsRollup"}</c>.</summary>
    public static void Write(Utf8JsonWriter w, TimeSeriesPoint p, bool isRollup = false)
    {
        w.WriteStartObject();
        w.WriteString("Timestamp", JsonDates.FormatDate(p.Timestamp));
        if (p.Tag != null)
            w.WriteString("Tag", p.Tag);
        else
            w.WriteNull("Tag");
        w.WriteStartArray("Values");
        foreach (double v in p.Values)
            w.WriteNumberValue(v);
        w.WriteEndArray();
        w.WriteBoolean("IsRollup", isRollup);
        w.WriteEndObject();
    }

    /// <summary>Writes <c>{"From","To","Entries":[..],"TotalResults"}</c>.</summary>
    public static void WriteRange(Utf8JsonWriter w, long from, long to, List<TimeSeriesPoint> entries, long total, bool isRollup = false)
    {
        w.WriteStartObject();
        w.WriteString("From", from <= 0 ? JsonDates.FormatDate(DateTime.MinValue) : JsonDates.FormatDate(new DateTime(from * TimeSpan.TicksPerMillisecond, DateTimeKind.Utc)));
        w.WriteString("To", to == long.MaxValue ? JsonDates.FormatDate(DateTime.MaxValue) : JsonDates.FormatDate(new DateTime(to * TimeSpan.TicksPerMillisecond, DateTimeKind.Utc)));
        w.WriteStartArray("Entries");
        foreach (var p in entries)
            Write(w, p, isRollup);
        w.WriteEndArray();
        w.WriteNumber("TotalResults", total);
        w.WriteEndObject();
    }

    /// <summary>A rollup series (<c>{name}@{policy}</c>), written by the policies.</summary>
    public static bool IsRollup(string name) => name.Contains('@', StringComparison.Ordinal);
}
