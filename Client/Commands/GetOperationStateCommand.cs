using System.Globalization;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Commands;

/// <summary><c>GET /databases/{db}/operations/state?id=..</c>: status and result (or error) of an operation; null when unknown (404).</summary>
/// With <c>serverWide</c>, <c>GET /operations/state?id=..</c>: a server operation (a restore).
public sealed class GetOperationStateCommand(long id, bool serverWide = false) : RavenCommand<JsonObject?>
{
    /// <inheritdoc />
    public override HttpRequestMessage CreateRequest(string? database) =>
        new(HttpMethod.Get, string.Create(CultureInfo.InvariantCulture, $"{(serverWide ? "" : DatabasePath(database))}/operations/state?id={id}"));

    /// <inheritdoc />
    public override bool IsExpectedStatus(int status) => status == 404;

    /// <inheritdoc />
    public override async Task<JsonObject?> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(response);
        return (int)response.StatusCode == 404 ? null : await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
    }
}
