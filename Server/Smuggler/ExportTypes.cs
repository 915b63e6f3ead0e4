namespace RavenLite.Server.Smuggler;

/// <summary>
/// What an export writes (RavenDB's <c>OperateOnTypes</c>, sent as <c>"Documents,Indexes,.."</c>): the dump's sections
/// for the types named; documents carry their attachments only with <c>Attachments</c>. Without the option, everything.
/// </summary>
public sealed class ExportTypes
{
    private readonly HashSet<string> _types;

    private ExportTypes(IEnumerable<string> types) => _types = new HashSet<string>(types, StringComparer.OrdinalIgnoreCase);

    /// <summary>Every type (RavenDB's default).</summary>
    public static ExportTypes All { get; } = new(["DatabaseRecord", "Documents", "RevisionDocuments", "Indexes", "Identities", "CompareExchange", "Attachments", "CounterGroups", "TimeSeries"]);

    /// <summary>True when the export writes <paramref name="type"/>.</summary>
    public bool Has(string type) => _types.Contains(type);

    /// <summary>The types an export request's JSON body names (<c>OperateOnTypes</c>), <see cref="All"/> without one; 400 for a malformed value.</summary>
    public static ExportTypes Parse(JsonElement options)
    {
        if (options.ValueKind != JsonValueKind.Object || !(options.TryGetProperty("OperateOnTypes", out var t) || options.TryGetProperty("operateOnTypes", out t)) || t.ValueKind == JsonValueKind.Null)
            return All;
        var names = t.ValueKind switch
        {
            JsonValueKind.String => t.GetString()!.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries),
            JsonValueKind.Array when t.EnumerateArray().All(x => x.ValueKind == JsonValueKind.String) => t.EnumerateArray().Select(x => x.GetString()!).ToArray(),
            _ => throw new BadRequestException("OperateOnTypes must be a comma-separated list of types (\"Documents,Indexes\") or an array of them."),
        };
        return names.Length == 0 ? All : new ExportTypes(names);
    }
}
