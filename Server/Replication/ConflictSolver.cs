using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Replication;

/// <summary>
/// How a database settles concurrent versions (RavenDB's <c>ConflictSolver</c>, docs/replication.md "Conflicts"): a
/// JavaScript resolver per collection first, else the latest version when <see cref="ResolveToLatest"/> (the default
/// of a database that never set one), else the versions are kept in conflict for a person to resolve.
/// Stored as JSON under <c>State/ConflictSolver</c>.
/// </summary>
public sealed record ConflictSolver(bool ResolveToLatest, IReadOnlyDictionary<string, string> ResolveByCollection)
{
    internal static readonly byte[] StateKey = "ConflictSolver"u8.ToArray();

    /// <summary>A database's solver until one is set: the latest version wins.</summary>
    public static ConflictSolver Default { get; } = new(true, new Dictionary<string, string>());

    /// <summary>Reads a solver as RavenDB's clients send it (<c>{ResolveToLatest, ResolveByCollection: {coll: {Script}}}</c>); 400 when malformed.</summary>
    public static ConflictSolver Parse(JsonElement json)
    {
        if (json.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("A conflict solver is a JSON object.");
        bool latest = RavenConnectionString.Property(json, nameof(ResolveToLatest)) is { ValueKind: JsonValueKind.True };
        var scripts = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        if (RavenConnectionString.Property(json, nameof(ResolveByCollection)) is { ValueKind: JsonValueKind.Object } byCollection)
        {
            foreach (var c in byCollection.EnumerateObject())
            {
                string script = c.Value.ValueKind == JsonValueKind.Object && RavenConnectionString.Property(c.Value, "Script") is { ValueKind: JsonValueKind.String } s
                    ? s.GetString()! : throw new BadRequestException($"The resolver of collection '{c.Name}' must be {{\"Script\": \"...\"}}.");
                ConflictScript.Check(c.Name, script);
                scripts[c.Name] = script;
            }
        }
        return new ConflictSolver(latest, scripts);
    }

    /// <summary>The stored solver, or <see cref="Default"/>.</summary>
    public static ConflictSolver Read(Transaction tx)
    {
        using var json = Documents.DocumentsStorage.ReadState(tx, StateKey);
        return json == null ? Default : Parse(json.RootElement);
    }

    public void Write(Utf8JsonWriter w)
    {
        ArgumentNullException.ThrowIfNull(w);
        w.WriteStartObject();
        w.WriteBoolean(nameof(ResolveToLatest), ResolveToLatest);
        w.WriteStartObject(nameof(ResolveByCollection));
        foreach (var (collection, script) in ResolveByCollection)
        {
            w.WriteStartObject(collection);
            w.WriteString("Script", script);
            w.WriteNull("LastModifiedTime");
            w.WriteEndObject();
        }
        w.WriteEndObject();
        w.WriteEndObject();
    }
}
