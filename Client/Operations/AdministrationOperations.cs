using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Operations;

/// <summary>An index's lock mode: <c>LockedIgnore</c> keeps its definition when a new one is put; <c>LockedError</c> refuses it.</summary>
public enum IndexLockMode
{
    /// <summary>Definitions may change.</summary>
    Unlock,

    /// <summary>A new definition is ignored.</summary>
    LockedIgnore,

    /// <summary>A new definition is refused (400).</summary>
    LockedError,
}

/// <summary>An index's priority: its worker thread's.</summary>
public enum IndexPriority
{
    /// <summary>Below normal.</summary>
    Low,

    /// <summary>Normal.</summary>
    Normal,

    /// <summary>Above normal.</summary>
    High,
}

/// <summary><c>POST /databases/{db}/indexes/set-lock</c>.</summary>
public sealed class SetIndexesLockOperation(IndexLockMode mode, params string[] indexNames) : IMaintenanceOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<bool>(HttpMethod.Post, "/indexes/set-lock", new JsonObject { ["IndexNames"] = new JsonArray(indexNames.Select(n => (JsonNode?)n).ToArray()), ["Mode"] = mode.ToString() }, _ => true);
}

/// <summary><c>POST /databases/{db}/indexes/set-priority</c>.</summary>
public sealed class SetIndexesPriorityOperation(IndexPriority priority, params string[] indexNames) : IMaintenanceOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<bool>(HttpMethod.Post, "/indexes/set-priority", new JsonObject { ["IndexNames"] = new JsonArray(indexNames.Select(n => (JsonNode?)n).ToArray()), ["Priority"] = priority.ToString() }, _ => true);
}

/// <summary><c>POST /databases/{db}/admin/indexes/enable?name=</c> or <c>disable</c>: a disabled index does not index (kept across restarts).</summary>
public sealed class SetIndexEnabledOperation(string indexName, bool enabled) : IMaintenanceOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<bool>(HttpMethod.Post, $"/admin/indexes/{(enabled ? "enable" : "disable")}?name={Uri.EscapeDataString(indexName)}", null, _ => true);
}

/// <summary><c>POST /databases/{db}/admin/indexes/stop</c> or <c>start</c>: pauses or resumes indexing (all indexes, or one).</summary>
public sealed class SetIndexingRunningOperation(bool running, string? indexName = null) : IMaintenanceOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<bool>(HttpMethod.Post, $"/admin/indexes/{(running ? "start" : "stop")}{(indexName == null ? "" : "?name=" + Uri.EscapeDataString(indexName))}", null, _ => true);
}

/// <summary>Indexing status: <c>Running</c> or <c>Paused</c>, and each index's (<c>Running</c>, <c>Paused</c>, <c>Disabled</c>, <c>Error</c>).</summary>
public sealed record IndexingStatus(string Status, IReadOnlyDictionary<string, string> Indexes);

/// <summary><c>GET /databases/{db}/indexes/status</c>.</summary>
public sealed class GetIndexingStatusOperation : IMaintenanceOperation<IndexingStatus>
{
    /// <inheritdoc />
    public RavenCommand<IndexingStatus> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<IndexingStatus>(HttpMethod.Get, "/indexes/status", null, json => new IndexingStatus((string)json!["Status"]!,
            json["Indexes"]!.AsArray().ToDictionary(i => (string)i!["Name"]!, i => (string)i!["Status"]!, StringComparer.OrdinalIgnoreCase)));
}

/// <summary>RavenDB's client configuration: applied by every client of the database (the .NET client applies the two fields below).</summary>
public sealed class ClientConfiguration
{
    /// <summary>Requests a session may make (null: the client's own setting).</summary>
    public int? MaxNumberOfRequestsPerSession { get; set; }

    /// <summary>Separator of generated ids (null: the client's own).</summary>
    public char? IdentityPartsSeparator { get; set; }

    /// <summary>True: clients use their own settings.</summary>
    public bool Disabled { get; set; }
}

/// <summary><c>PUT /databases/{db}/admin/configuration/client</c>: clients of the database pick it up with their next request.</summary>
public sealed class PutClientConfigurationOperation(ClientConfiguration configuration) : IMaintenanceOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<bool>(HttpMethod.Put, "/admin/configuration/client", new JsonObject
        {
            ["Disabled"] = configuration.Disabled,
            ["MaxNumberOfRequestsPerSession"] = configuration.MaxNumberOfRequestsPerSession,
            ["IdentityPartsSeparator"] = configuration.IdentityPartsSeparator?.ToString(),
        }, _ => true);
}

/// <summary><c>PUT /databases/{db}/admin/configuration/settings</c>: per-database settings (Durability, MergerMaxOperations, MergerMaxBytes); the database reopens to apply them.</summary>
public sealed class PutDatabaseSettingsOperation(IReadOnlyDictionary<string, string> settings) : IMaintenanceOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<bool>(HttpMethod.Put, "/admin/configuration/settings", new JsonObject(settings.Select(kv => KeyValuePair.Create(kv.Key, (JsonNode?)kv.Value))), _ => true);
}

/// <summary><c>GET /databases/{db}/admin/record</c>: the database's settings.</summary>
public sealed class GetDatabaseSettingsOperation : IMaintenanceOperation<IReadOnlyDictionary<string, string>>
{
    /// <inheritdoc />
    public RavenCommand<IReadOnlyDictionary<string, string>> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<IReadOnlyDictionary<string, string>>(HttpMethod.Get, "/admin/record", null,
            json => json!["Settings"]!.AsObject().ToDictionary(kv => kv.Key, kv => (string)kv.Value!, StringComparer.Ordinal));
}

/// <summary><c>GET /databases/{db}/stats/detailed</c>: the statistics as JSON (with <c>CountOfIdentities</c>, <c>CountOfCompareExchange</c>).</summary>
public sealed class GetDetailedStatisticsOperation : IMaintenanceOperation<JsonObject>
{
    /// <inheritdoc />
    public RavenCommand<JsonObject> GetCommand(DocumentConventions conventions) => new AdminCommand<JsonObject>(HttpMethod.Get, "/stats/detailed", null, json => json!);
}

/// <summary><c>POST /admin/compact</c>: compacts a database (offline meanwhile); returns the server operation's id.</summary>
public sealed class CompactDatabaseOperation(string databaseName, bool documents = true, params string[] indexes) : IServerOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) =>
        new AdminCommand<long>(HttpMethod.Post, "/admin/compact", new JsonObject
        {
            ["DatabaseName"] = databaseName,
            ["Documents"] = documents,
            ["Indexes"] = new JsonArray(indexes.Select(n => (JsonNode?)n).ToArray()),
        }, json => (long)json!["OperationId"]!, serverWide: true);
}

/// <summary>A request under <c>/databases/{db}</c> (or the server's root) whose answer, if any, is parsed from JSON.</summary>
internal sealed class AdminCommand<T>(HttpMethod method, string path, JsonNode? body, Func<JsonObject?, T> parse, bool serverWide = false) : RavenCommand<T>
{
    public override HttpRequestMessage CreateRequest(string? database)
    {
        var request = new HttpRequestMessage(method, (serverWide ? "" : DatabasePath(database)) + path);
        if (body != null)
            request.Content = JsonContent(body);
        return request;
    }

    public override async Task<T> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        if (response.StatusCode == System.Net.HttpStatusCode.NoContent || response.Content.Headers.ContentLength == 0)
            return parse(null);
        return parse(await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false));
    }
}
