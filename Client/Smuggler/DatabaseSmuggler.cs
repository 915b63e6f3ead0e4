using System.Net.Http.Headers;
using System.Text.Json.Nodes;
using RavenLite.Client.Commands;
using RavenLite.Client.Http;

namespace RavenLite.Client.Smuggler;

/// <summary>
/// Export and import of a database as a <c>.ravendbdump</c> (<c>store.Smuggler</c>): the file RavenDB's smuggler writes
/// and reads, so dumps move between RavenDB and RavenLite. The result is the server's counts per kind (and its messages
/// about what it skipped) as JSON.
/// </summary>
public sealed class DatabaseSmuggler(DocumentStore store)
{
    private string Database(string? database) => database ?? store.Database ?? throw new InvalidOperationException("Set DocumentStore.Database or pass a database.");

    /// <summary>Writes the database to <paramref name="toFile"/> (streamed: memory stays flat); returns the export's counts.</summary>
    public async Task<JsonObject> ExportAsync(string toFile, string? database = null, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(toFile);
        string db = Database(database);
        long id = await store.Executor.ExecuteAsync(new NextOperationIdCommand(), db, cancellationToken).ConfigureAwait(false);
        await using (var file = File.Create(toFile))
            await store.Executor.ExecuteAsync(new ExportCommand(id, file), db, cancellationToken).ConfigureAwait(false);
        var state = await store.Executor.ExecuteAsync(new GetOperationStateCommand(id), db, cancellationToken).ConfigureAwait(false);
        return state?["Result"] as JsonObject ?? [];
    }

    /// <summary>Reads <paramref name="fromFile"/> (a RavenDB or RavenLite dump) into the database; returns the import's counts and messages.</summary>
    public async Task<JsonObject> ImportAsync(string fromFile, string? database = null, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(fromFile);
        string db = Database(database);
        long id = await store.Executor.ExecuteAsync(new NextOperationIdCommand(), db, cancellationToken).ConfigureAwait(false);
        await using var file = File.OpenRead(fromFile);
        return await store.Executor.ExecuteAsync(new ImportCommand(id, file), db, cancellationToken).ConfigureAwait(false);
    }

    private sealed class ExportCommand(long operationId, Stream destination) : RavenCommand<bool>
    {
        public override bool KeepsResponse => true;

        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Post, $"{DatabasePath(database)}/smuggler/export?operationId={operationId}") { Content = JsonContent(new JsonObject()) };

        public override async Task<bool> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            using (response)
                await (await response.Content.ReadAsStreamAsync(cancellationToken).ConfigureAwait(false)).CopyToAsync(destination, cancellationToken).ConfigureAwait(false);
            return true;
        }
    }

    private sealed class ImportCommand(long operationId, Stream source) : RavenCommand<JsonObject>
    {
        public override HttpRequestMessage CreateRequest(string? database)
        {
            var file = new StreamContent(source);
            file.Headers.ContentType = new MediaTypeHeaderValue("application/octet-stream");
            var form = new MultipartFormDataContent { { new StringContent("{}"), "importOptions" }, { file, "file", "import.ravendbdump" } };
            return new HttpRequestMessage(HttpMethod.Post, $"{DatabasePath(database)}/smuggler/import?operationId={operationId}") { Content = form };
        }

        public override Task<JsonObject> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) => ReadObjectAsync(response, cancellationToken);
    }
}
