using System.Globalization;
using RavenLite.Client.Http;

namespace RavenLite.Client.Commands;

/// <summary><c>PUT /databases/{db}/hilo/return?tag=..&amp;end=..&amp;last=..</c>: hands back the unused rest of a range at store disposal.</summary>
public sealed class HiLoReturnCommand(string tag, long end, long last) : RavenCommand<bool>
{
    /// <inheritdoc />
    public override HttpRequestMessage CreateRequest(string? database) =>
        new(HttpMethod.Put, string.Create(CultureInfo.InvariantCulture, $"{DatabasePath(database)}/hilo/return?tag={Uri.EscapeDataString(tag)}&end={end}&last={last}"));

    /// <inheritdoc />
    public override Task<bool> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) => Task.FromResult(true);
}
