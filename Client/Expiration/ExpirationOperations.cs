using System.Text.Json.Nodes;
using RavenLite.Client.Http;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Expiration;

/// <summary>
/// <c>POST /databases/{db}/admin/expiration/config</c>: turns on (or off) the task that deletes documents whose
/// <c>@metadata.@expires</c> time passed, checking every <paramref name="deleteFrequencyInSec"/> seconds.
/// </summary>
public sealed class ConfigureExpirationOperation(bool disabled, long deleteFrequencyInSec = 60) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) =>
        new ConfigCommand("expiration", new JsonObject { ["Disabled"] = disabled, ["DeleteFrequencyInSec"] = deleteFrequencyInSec });
}

/// <summary>
/// <c>POST /databases/{db}/admin/refresh/config</c>: turns on (or off) the task that rewrites documents whose
/// <c>@metadata.@refresh</c> time passed (without <c>@refresh</c>), every <paramref name="refreshFrequencyInSec"/> seconds.
/// </summary>
public sealed class ConfigureRefreshOperation(bool disabled, long refreshFrequencyInSec = 60) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) =>
        new ConfigCommand("refresh", new JsonObject { ["Disabled"] = disabled, ["RefreshFrequencyInSec"] = refreshFrequencyInSec });
}

internal sealed class ConfigCommand(string kind, JsonObject body) : RavenCommand<long>
{
    public override HttpRequestMessage CreateRequest(string? database) =>
        new(HttpMethod.Post, $"{DatabasePath(database)}/admin/{kind}/config") { Content = JsonContent(body) };

    public override async Task<long> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
        (long?)(await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false))["RaftCommandIndex"] ?? 0;
}
