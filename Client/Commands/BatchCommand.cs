using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Commands;

/// <summary>
/// <c>POST /databases/{db}/bulk_docs</c> (PROTOCOL.md §5): PUT, DELETE, Counters and (cluster-wide) compare-exchange
/// commands applied in one transaction; a failed change-vector check (409) applies none of them. Answers one result per command.
/// </summary>
public sealed class BatchCommand(JsonArray commands, bool clusterWide = false) : RavenCommand<JsonArray>
{
    /// <inheritdoc />
    public override HttpRequestMessage CreateRequest(string? database)
    {
        var body = new JsonObject { ["Commands"] = commands };
        if (clusterWide)
            body["TransactionMode"] = "ClusterWide";
        return new(HttpMethod.Post, DatabasePath(database) + "/bulk_docs") { Content = JsonContent(body) };
    }

    /// <inheritdoc />
    public override async Task<JsonArray> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
        return json["Results"] as JsonArray ?? throw new Exceptions.RavenException("bulk_docs answered without Results.");
    }
}
