namespace RavenLite.Server.Formatting;

/// <summary>Dates as RavenDB writes them in documents, metadata and answers.</summary>
public static class JsonDates
{
    /// <summary>Formats a UTC time the way RavenDB and its clients expect: 7 fractional digits and Z (the round-trip "O" format of a UTC time, which .NET formats without parsing a pattern).</summary>
    public static string FormatDate(DateTime utc) => DateTime.SpecifyKind(utc, DateTimeKind.Utc).ToString("O", System.Globalization.CultureInfo.InvariantCulture);

    /// <summary><see cref="FormatDate(DateTime)"/> as UTF-8 into <paramref name="destination"/> (at least <see cref="DateLength"/> bytes); returns the length.</summary>
    public static int FormatDate(DateTime utc, Span<byte> destination) =>
        DateTime.SpecifyKind(utc, DateTimeKind.Utc).TryFormat(destination, out int written, "O", System.Globalization.CultureInfo.InvariantCulture) ? written
            : throw new ArgumentException("The destination is too small for a date.", nameof(destination));

    /// <summary>Writes <paramref name="name"/> as a formatted date, or null when there is none.</summary>
    public static void WriteDateOrNull(Utf8JsonWriter w, string name, DateTime? value)
    {
        ArgumentNullException.ThrowIfNull(w);
        if (value is { } v)
            w.WriteString(name, FormatDate(v));
        else
            w.WriteNull(name);
    }

    /// <summary>Bytes of a formatted date (4-digit years).</summary>
    public const int DateLength = 28;

    /// <summary>The last millisecond (since 0001-01-01) a DateTime holds: a range bound at or after it is the end of time.</summary>
    public const long MaxMilliseconds = 315_537_897_599_999;

    /// <summary>
    /// A range bound (milliseconds since 0001-01-01) as a date, or null for an open end (at or before 0, or at or after
    /// <see cref="MaxMilliseconds"/>), as RavenDB writes time-series ranges (its clients cache ranges by these bounds).
    /// </summary>
    public static void WriteBound(Utf8JsonWriter w, string name, long ms)
    {
        ArgumentNullException.ThrowIfNull(w);
        if (ms <= 0 || ms >= MaxMilliseconds)
            w.WriteNull(name);
        else
            w.WriteString(name, FormatDate(new DateTime(ms * TimeSpan.TicksPerMillisecond, DateTimeKind.Utc)));
    }
}
