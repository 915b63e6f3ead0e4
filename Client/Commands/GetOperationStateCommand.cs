using System.Globalization;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Commands;

/// <summary><c>GET /databases/{db}/operations/state?id=..</c>: status and result (or error) of an operation; null when unknown (404).</summary>
public sealed class GetOperationStateCommand(long id) : RavenCommand<JsonObject?>
{
    /// <inheritdoc />
    public override HttpRequestMessage CreateRequest(string? database) =>
        new(HttpMethod.Get, string.Create(CultureInfo.InvariantCulture, $"{DatabasePath(database)}/operations/state?id={id}"));

    /// <inheritdoc />
    public override bool IsExpectedStatus(int status) => status == 404;

    /// <inheritdoc />
    public override async Task<JsonObject?> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(response);
        return (int)response.StatusCode == 404 ? null : await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
    }
}
