namespace RavenLite.Server.Documents;

/// <summary>
/// The <c>@expires</c> and <c>@refresh</c> dates of a document's metadata: read on every put and delete (without
/// parsing the JSON) so the expiration extension can keep its time-ordered trees in step.
/// </summary>
public static class MetadataDates
{
    private static readonly byte[] ExpiresName = "\"@expires\""u8.ToArray();
    private static readonly byte[] RefreshName = "\"@refresh\""u8.ToArray();

    /// <summary>The <c>@expires</c> and <c>@refresh</c> dates (UTC ticks) of a document's metadata JSON, or null for each it lacks (or holds no date).</summary>
    public static (long? Expires, long? Refresh) Read(ReadOnlySpan<byte> metadataJson) =>
        (Date(metadataJson, ExpiresName), Date(metadataJson, RefreshName));

    /// <summary>The date after the last <paramref name="name"/> key in <paramref name="json"/> (the metadata is a document's last property).</summary>
    private static long? Date(ReadOnlySpan<byte> json, ReadOnlySpan<byte> name)
    {
        int at = json.LastIndexOf(name);
        if (at < 0)
            return null;
        var rest = json[(at + name.Length)..].TrimStart(" \t\r\n"u8);
        if (rest.IsEmpty || rest[0] != (byte)':')
            return null;
        rest = rest[1..].TrimStart(" \t\r\n"u8);
        if (rest.IsEmpty || rest[0] != (byte)'"')
            return null;
        int end = rest[1..].IndexOf((byte)'"');
        if (end < 0)
            return null;
        return DateTime.TryParse(Encoding.UTF8.GetString(rest.Slice(1, end)), CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var d)
            ? d.Ticks : null;
    }
}
