using RavenLite.Client.Http;

namespace RavenLite.Client.Commands;

/// <summary><c>GET /databases/{db}/operations/next-operation-id</c>: an id for a bulk insert (docs/protocol.md §7).</summary>
public sealed class NextOperationIdCommand : RavenCommand<long>
{
    /// <inheritdoc />
    public override HttpRequestMessage CreateRequest(string? database) => new(HttpMethod.Get, DatabasePath(database) + "/operations/next-operation-id");

    /// <inheritdoc />
    public override async Task<long> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
        return (long?)json["Id"] ?? throw new Exceptions.RavenException("next-operation-id answered without Id.");
    }
}
