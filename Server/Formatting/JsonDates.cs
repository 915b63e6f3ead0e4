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

    /// <summary>Bytes of a formatted date (4-digit years).</summary>
    public const int DateLength = 28;
}
