using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// A database's state in its record (docs/http-api.md "Administration"): <c>POST /admin/databases/disable</c> and
/// <c>/enable</c> <c>{DatabaseNames}</c> (RavenDB's <c>ToggleDatabasesStateOperation</c>), and <c>POST
/// /admin/databases/set-lock</c> <c>{DatabaseNames, Mode}</c> (<c>SetDatabasesLockOperation</c>), which a delete honours.
/// </summary>
public static class DatabaseStateEndpoints
{
    /// <summary>The deletion lock modes.</summary>
    public static readonly string[] LockModes = ["Unlock", "PreventDeletesIgnore", "PreventDeletesError"];

    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPost("/admin/databases/disable", c => Toggle(c, disable: true)).Requires(Access.Operator);
        app.MapPost("/admin/databases/enable", c => Toggle(c, disable: false)).Requires(Access.Operator);
        app.MapPost("/admin/databases/set-lock", SetLock).Requires(Access.Operator);
    }

    private static List<string> Names(HttpContext context, JsonElement body)
    {
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        if (body.ValueKind != JsonValueKind.Object || !body.TryGetProperty("DatabaseNames", out var names) || names.ValueKind != JsonValueKind.Array
            || names.EnumerateArray().Any(n => n.ValueKind != JsonValueKind.String))
            throw new BadRequestException("The body must be {\"DatabaseNames\": [..]}.");
        var list = names.EnumerateArray().Select(n => n.GetString()!).ToList();
        foreach (string n in list)
            _ = registry.Find(n) ?? throw new DatabaseMissingException(n);
        return list;
    }

    private static async Task Toggle(HttpContext context, bool disable)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "database names").ConfigureAwait(false);
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        var names = Names(context, body.RootElement);
        var results = names.Select(n => (Name: registry.Find(n)!, Changed: registry.SetDisabled(n, disable))).ToList();
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Status");
            foreach (var (name, changed) in results)
            {
                w.WriteStartObject();
                w.WriteString("Name", name);
                w.WriteBoolean("Success", true);
                w.WriteBoolean("Disabled", disable);
                w.WriteString("Reason", changed ? (disable ? "Database state changed to disabled" : "Database state changed to enabled") : $"Database was already {(disable ? "disabled" : "enabled")}");
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    /// <summary>
    /// <c>PUT /admin/databases</c> with an <c>ETag</c> header (RavenDB's <c>UpdateDatabaseOperation</c>): the existing
    /// record takes the body's <c>Settings</c> (as <c>admin/configuration/settings</c>), <c>Disabled</c> and <c>LockMode</c>;
    /// the rest of a RavenDB record is RavenLite's own (indexes, tasks) and changes through their routes.
    /// </summary>
    public static async Task UpdateAsync(HttpContext context, string name, JsonElement record)
    {
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        if (registry.Find(name) is not { } stored)
            throw new DatabaseMissingException(name);
        if (record.TryGetProperty("LockMode", out var lockMode) && lockMode.ValueKind == JsonValueKind.String)
        {
            string mode = LockModes.Contains(lockMode.GetString(), StringComparer.Ordinal) ? lockMode.GetString()! : throw new BadRequestException($"LockMode must be one of {string.Join(", ", LockModes)}.");
            registry.UpdateRecord(stored, r => r.LockMode = mode);
        }
        if (record.TryGetProperty("Settings", out var settings) && settings.ValueKind == JsonValueKind.Object && settings.EnumerateObject().Any())
        {
            var db = registry.Acquire(stored);
            try
            {
                await RecordChangeRoute.RunAsync(context, db, RecordChanges.Settings, settings).ConfigureAwait(false);
            }
            finally
            {
                db.Release();
            }
        }
        if (record.TryGetProperty("Disabled", out var disabled) && disabled.ValueKind is JsonValueKind.True or JsonValueKind.False)
            registry.SetDisabled(stored, disabled.GetBoolean());
        await DatabaseEndpoints.WriteCreatedAsync(context, registry.NextRaftIndex(), stored).ConfigureAwait(false);
    }

    private static async Task SetLock(HttpContext context)
    {
        using var body = await RequestBody.ReadJsonAsync(context, "database lock").ConfigureAwait(false);
        var registry = context.RequestServices.GetRequiredService<DatabaseRegistry>();
        var names = Names(context, body.RootElement);
        string mode = body.RootElement.TryGetProperty("Mode", out var m) && m.ValueKind == JsonValueKind.String && LockModes.Contains(m.GetString(), StringComparer.Ordinal)
            ? m.GetString()! : throw new BadRequestException($"Mode must be one of {string.Join(", ", LockModes)}.");
        foreach (string n in names)
            registry.UpdateRecord(n, r => r.LockMode = mode);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("RaftCommandIndex", registry.NextRaftIndex());
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }
}
