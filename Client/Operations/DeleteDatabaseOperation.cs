using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Operations;

/// <summary><c>DELETE /admin/databases</c>: deletes a database and its files.</summary>
public sealed class DeleteDatabaseOperation(string name) : IServerOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) => new Command(name);

    private sealed class Command(string name) : RavenCommand<bool>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Delete, "/admin/databases") { Content = JsonContent(new JsonObject { ["DatabaseNames"] = new JsonArray(name), ["HardDelete"] = true }) };

        public override Task<bool> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) => Task.FromResult(true);
    }
}
