using System.Text.Json.Nodes;
using RavenLite.Storage;

namespace RavenLite.Server.Databases;

/// <summary>
/// A database's record file <c>database.json</c> beside its storage: its name, its settings (RavenLite's per-database
/// overrides of server options, read when the database opens), its custom analyzers and sorters, and its client configuration (what RavenDB's clients
/// apply to their conventions, with the etag that tells them to fetch it again). Written atomically (temp file,
/// fsync, rename). Thread-safety: callers serialize writes per database (the registry's or the endpoint's lock).
/// </summary>
public sealed class DatabaseRecordFile
{
    /// <summary>The file's name in the database folder.</summary>
    public const string FileName = "database.json";

    /// <summary>Settings a database may override, with what each takes.</summary>
    public static readonly IReadOnlyDictionary<string, string> KnownSettings = new Dictionary<string, string>(StringComparer.Ordinal)
    {
        ["Durability"] = "Sync, Buffered or None: when a commit is acknowledged (storage DurabilityMode)",
        ["MergerMaxOperations"] = "1..1,000,000: most write requests merged into one transaction",
        ["MergerMaxBytes"] = "65,536..1,073,741,824: most bytes merged into one transaction",
    };

    /// <summary>The database's name in its creation casing.</summary>
    public string DatabaseName { get; set; } = "";

    /// <summary>Setting overrides: <see cref="KnownSettings"/> apply, any other key is kept as the client sent it.</summary>
    public Dictionary<string, string> Settings { get; set; } = new(StringComparer.Ordinal);

    /// <summary>RavenDB's <c>ClientConfiguration</c> as stored (null: none).</summary>
    public JsonObject? Client { get; set; }

    /// <summary>Changes whenever <see cref="Client"/> does (UTC ticks of the change).</summary>
    public long ClientEtag { get; set; }

    /// <summary>Disabled (<c>POST /admin/databases/disable</c>): the database stays closed and answers 503 until enabled.</summary>
    public bool Disabled { get; set; }

    /// <summary>An encrypted database (created with <c>Encrypted: true</c>): it opens only with its key (<see cref="DatabaseKeys"/>).</summary>
    public bool Encrypted { get; set; }

    /// <summary>RavenDB's deletion lock: <c>Unlock</c>, <c>PreventDeletesIgnore</c> (a delete skips it) or <c>PreventDeletesError</c> (a delete is refused).</summary>
    public string LockMode { get; set; } = "Unlock";

    /// <summary>The database's custom analyzers (RavenDB's <c>Analyzers</c> of the record): name → C# source.</summary>
    public Dictionary<string, string> Analyzers { get; set; } = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>The database's custom sorters (RavenDB's <c>Sorters</c>): name → C# source.</summary>
    public Dictionary<string, string> Sorters { get; set; } = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>
    /// RavenDB's <c>DocumentsCompression</c> as a client set it (<c>{Collections, CompressAllCollections, CompressRevisions}</c>),
    /// or null. RavenLite compresses every collection's documents whatever it says (docs/format/documents.md "Compression").
    /// </summary>
    public JsonObject? DocumentsCompression { get; set; }

    /// <summary>RavenDB's <c>IndexesHistory</c>: per static index, its last definitions put, newest first (<see cref="AddIndexHistory"/>).</summary>
    public JsonObject IndexesHistory { get; set; } = [];

    /// <summary>How many definitions of an index <see cref="IndexesHistory"/> keeps (RavenDB's default).</summary>
    public const int IndexHistoryLength = 10;

    /// <summary>Records that index <paramref name="name"/> was put with <paramref name="definition"/> (its JSON as clients read it).</summary>
    public void AddIndexHistory(string name, JsonNode definition, DateTime at)
    {
        var list = IndexesHistory[name] as JsonArray ?? [];
        IndexesHistory[name] = list;
        list.Insert(0, new JsonObject { ["Definition"] = definition, ["Source"] = "Client", ["CreatedAt"] = Formatting.JsonDates.FormatDate(at), ["RollingDeployment"] = new JsonObject() });
        while (list.Count > IndexHistoryLength)
            list.RemoveAt(list.Count - 1);
    }

    /// <summary>Reads the record of folder <paramref name="dir"/>.</summary>
    /// <exception cref="JsonException">the file is not a record.</exception>
    public static DatabaseRecordFile Read(string dir)
    {
        var json = JsonNode.Parse(File.ReadAllBytes(Path.Combine(dir, FileName))) as JsonObject ?? throw new JsonException("database.json is not an object.");
        var record = new DatabaseRecordFile { DatabaseName = (string?)json[nameof(DatabaseName)] ?? throw new JsonException("database.json has no DatabaseName.") };
        if (json[nameof(Settings)] is JsonObject settings)
            foreach (var (k, v) in settings)
                record.Settings[k] = (string?)v ?? "";
        record.Client = json[nameof(Client)]?.DeepClone() as JsonObject;
        record.ClientEtag = (long?)json[nameof(ClientEtag)] ?? 0;
        record.Disabled = (bool?)json[nameof(Disabled)] ?? false;
        record.Encrypted = (bool?)json[nameof(Encrypted)] ?? false;
        record.IndexesHistory = json[nameof(IndexesHistory)]?.DeepClone() as JsonObject ?? [];
        record.DocumentsCompression = json[nameof(DocumentsCompression)]?.DeepClone() as JsonObject;
        record.LockMode = (string?)json[nameof(LockMode)] ?? "Unlock";
        foreach (var (target, property) in new[] { (record.Analyzers, nameof(Analyzers)), (record.Sorters, nameof(Sorters)) })
            if (json[property] is JsonObject code)
                foreach (var (k, v) in code)
                    target[k] = (string?)v ?? "";
        return record;
    }

    /// <summary>Writes the record into folder <paramref name="dir"/> (atomically).</summary>
    public void Write(string dir)
    {
        var json = new JsonObject
        {
            [nameof(DatabaseName)] = DatabaseName,
            [nameof(Settings)] = new JsonObject(Settings.Select(kv => KeyValuePair.Create(kv.Key, (JsonNode?)JsonValue.Create(kv.Value)))),
            [nameof(Client)] = Client?.DeepClone(),
            [nameof(ClientEtag)] = ClientEtag,
            [nameof(Disabled)] = Disabled,
            [nameof(Encrypted)] = Encrypted,
            [nameof(LockMode)] = LockMode,
            [nameof(IndexesHistory)] = IndexesHistory.DeepClone(),
            [nameof(DocumentsCompression)] = DocumentsCompression?.DeepClone(),
            [nameof(Analyzers)] = new JsonObject(Analyzers.Select(kv => KeyValuePair.Create(kv.Key, (JsonNode?)JsonValue.Create(kv.Value)))),
            [nameof(Sorters)] = new JsonObject(Sorters.Select(kv => KeyValuePair.Create(kv.Key, (JsonNode?)JsonValue.Create(kv.Value)))),
        };
        string tmp = Path.Combine(dir, FileName + ".tmp");
        using (var f = new FileStream(tmp, FileMode.Create, FileAccess.Write))
        {
            f.Write(JsonSerializer.SerializeToUtf8Bytes(json));
            f.Flush(flushToDisk: true);
        }
        File.Move(tmp, Path.Combine(dir, FileName), overwrite: true);
    }

    /// <summary>Writes <c>"Settings": {..}, "Client": {..}|null</c> as a database record holds them (record answers, dumps).</summary>
    public void WriteSettingsAndClient(Utf8JsonWriter w)
    {
        ArgumentNullException.ThrowIfNull(w);
        w.WriteStartObject(nameof(Settings));
        foreach (var (k, v) in Settings)
            w.WriteString(k, v);
        w.WriteEndObject();
        w.WritePropertyName(nameof(Client));
        if (Client == null)
            w.WriteNullValue();
        else
            w.WriteRawValue(Client.ToJsonString(), skipInputValidation: true);
    }

    /// <summary>
    /// Validates settings sent to <c>admin/configuration/settings</c>: 400 naming a bad value of a <see cref="KnownSettings"/>
    /// key. Other keys (RavenDB settings that mean nothing here, which clients set) are kept verbatim and read back, unused.
    /// </summary>
    public static Dictionary<string, string> ParseSettings(JsonElement body)
    {
        if (body.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("Database settings are a JSON object of \"name\": \"value\".");
        var settings = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (var p in body.EnumerateObject())
        {
            string value = p.Value.ValueKind switch
            {
                JsonValueKind.String => p.Value.GetString()!,
                JsonValueKind.Number or JsonValueKind.True or JsonValueKind.False => p.Value.GetRawText(),
                JsonValueKind.Null => "",
                _ => throw new BadRequestException($"Setting '{p.Name}' must be a string, a number or a boolean."),
            };
            if (string.IsNullOrWhiteSpace(p.Name) || p.Name.Length > 256)
                throw new BadRequestException("A setting's name must be non-empty text of at most 256 characters.");
            if (!KnownSettings.ContainsKey(p.Name))
            {
                settings[p.Name] = value;
                continue;
            }
            bool valid = p.Name switch
            {
                "Durability" => Enum.TryParse<DurabilityMode>(value, ignoreCase: true, out _),
                "MergerMaxOperations" => int.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out int n) && n is >= 1 and <= 1_000_000,
                "MergerMaxBytes" => int.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out int b) && b is >= 65_536 and <= 1 << 30,
                _ => false,
            };
            if (!valid)
                throw new BadRequestException($"Setting '{p.Name}' = '{value}' is out of range: {KnownSettings[p.Name]}.");
            settings[p.Name] = value;
        }
        return settings;
    }

    /// <summary>Validates RavenDB's <c>ClientConfiguration</c>; 400 naming a bad field. Returns the object to store.</summary>
    public static JsonObject ParseClientConfiguration(JsonElement body)
    {
        if (body.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("A client configuration is a JSON object.");
        var result = new JsonObject();
        foreach (var p in body.EnumerateObject())
        {
            switch (p.Name)
            {
                case "Disabled":
                    result[p.Name] = p.Value.ValueKind is JsonValueKind.True or JsonValueKind.False ? p.Value.GetBoolean() : throw new BadRequestException("Disabled must be true or false.");
                    break;
                case "MaxNumberOfRequestsPerSession":
                case "LoadBalancerContextSeed":
                    if (p.Value.ValueKind == JsonValueKind.Null)
                        break;
                    if (!p.Value.TryGetInt32(out int n) || (p.Name == "MaxNumberOfRequestsPerSession" && n < 1))
                        throw new BadRequestException($"{p.Name} must be a whole number{(p.Name == "MaxNumberOfRequestsPerSession" ? " of at least 1" : "")}.");
                    result[p.Name] = n;
                    break;
                case "ReadBalanceBehavior":
                case "LoadBalanceBehavior":
                    if (p.Value.ValueKind == JsonValueKind.Null)
                        break;
                    string[] allowed = p.Name == "ReadBalanceBehavior" ? ["None", "RoundRobin", "FastestNode"] : ["None", "UseSessionContext"];
                    string? value = p.Value.ValueKind == JsonValueKind.String ? p.Value.GetString() : null;
                    result[p.Name] = value != null && allowed.Contains(value) ? value : throw new BadRequestException($"{p.Name} must be one of {string.Join(", ", allowed)}.");
                    break;
                case "IdentityPartsSeparator":
                    if (p.Value.ValueKind == JsonValueKind.Null)
                        break;
                    string? separator = p.Value.ValueKind == JsonValueKind.String ? p.Value.GetString() : null;
                    result[p.Name] = separator is { Length: 1 } && separator != "|" ? separator : throw new BadRequestException("IdentityPartsSeparator must be one character other than '|'.");
                    break;
                default:
                    break; // Etag and fields of newer clients: not stored
            }
        }
        result[nameof(Disabled)] ??= false; // the client configuration's Disabled (same name as the record's)
        return result;
    }
}
