using RavenLite.Client.Http;

namespace RavenLite.Client.Operations;

/// <summary><c>GET /databases/{db}/stats</c>: document and index counts of a database.</summary>
public sealed class GetStatisticsOperation : IMaintenanceOperation<DatabaseStatistics>
{
    /// <inheritdoc />
    public RavenCommand<DatabaseStatistics> GetCommand(DocumentConventions conventions) => new Command();

    private sealed class Command : RavenCommand<DatabaseStatistics>
    {
        public override HttpRequestMessage CreateRequest(string? database) => new(HttpMethod.Get, DatabasePath(database) + "/stats");

        public override async Task<DatabaseStatistics> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
            return new DatabaseStatistics(
                (long?)json["CountOfDocuments"] ?? 0,
                (long?)json["CountOfIndexes"] ?? 0,
                (long?)json["CountOfTombstones"] ?? 0,
                (string?)json["DatabaseId"] ?? "",
                (long?)json["LastDocEtag"] ?? 0);
        }
    }
}
