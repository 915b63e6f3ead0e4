using System.Globalization;
using RavenLite.Client.Http;

namespace RavenLite.Client.Operations;

/// <summary><c>GET /databases?namesOnly=true</c>: database names, paged.</summary>
public sealed class GetDatabaseNamesOperation(int start = 0, int pageSize = 1024) : IServerOperation<IReadOnlyList<string>>
{
    /// <inheritdoc />
    public RavenCommand<IReadOnlyList<string>> GetCommand(DocumentConventions conventions) => new Command(start, pageSize);

    private sealed class Command(int start, int pageSize) : RavenCommand<IReadOnlyList<string>>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Get, string.Create(CultureInfo.InvariantCulture, $"/databases?start={start}&pageSize={pageSize}&namesOnly=true"));

        public override async Task<IReadOnlyList<string>> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
            return (json["Databases"]?.AsArray() ?? []).Select(n => n is System.Text.Json.Nodes.JsonObject o ? (string?)o["Name"] ?? "" : (string?)n ?? "").ToList();
        }
    }
}
