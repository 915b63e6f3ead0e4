using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Operations;

/// <summary><c>PUT /admin/databases?name=..</c>: creates a database. A database that exists already is a <see cref="Exceptions.ConcurrencyException"/> (409).</summary>
public sealed class CreateDatabaseOperation(string name) : IServerOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) => new Command(name);

    private sealed class Command(string name) : RavenCommand<bool>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Put, "/admin/databases?name=" + Uri.EscapeDataString(name)) { Content = JsonContent(new JsonObject { ["DatabaseName"] = name }) };

        public override Task<bool> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) => Task.FromResult(true);
    }
}
