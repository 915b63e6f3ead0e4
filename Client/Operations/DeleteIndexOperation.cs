using RavenLite.Client.Http;

namespace RavenLite.Client.Operations;

/// <summary><c>DELETE /databases/{db}/indexes?name=..</c>: deletes an index (documents are untouched); false when there was none.</summary>
public sealed class DeleteIndexOperation(string name) : IMaintenanceOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) => new Command(name);

    private sealed class Command(string name) : RavenCommand<bool>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Delete, DatabasePath(database) + "/indexes?name=" + Uri.EscapeDataString(name));

        /// <summary>404: there was no such index (RavenDB's answer, not an error).</summary>
        public override bool IsExpectedStatus(int status) => status == 404;

        public override Task<bool> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) => Task.FromResult((int)response.StatusCode != 404);
    }
}
