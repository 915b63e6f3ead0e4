using RavenLite.Client.Http;

namespace RavenLite.Client.Operations;

/// <summary><c>DELETE /databases/{db}/indexes?name=..</c>: deletes an index (documents are untouched).</summary>
public sealed class DeleteIndexOperation(string name) : IMaintenanceOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) => new Command(name);

    private sealed class Command(string name) : RavenCommand<bool>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Delete, DatabasePath(database) + "/indexes?name=" + Uri.EscapeDataString(name));

        public override Task<bool> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) => Task.FromResult(true);
    }
}
