using System.Text;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Commands;

/// <summary>
/// <c>GET /databases/{db}/docs?id=..&amp;id=..&amp;include=..</c>, or <c>POST .../docs</c> with
/// <c>{"Ids":[..]}</c> when the ids are long (docs/protocol.md §4.1). Results follow request order, null
/// for a missing id; a single missing id is a 404, read as "not found".
/// </summary>
public sealed class GetDocumentsCommand(IReadOnlyList<string> ids, IReadOnlyList<string>? includes = null) : RavenCommand<GetDocumentsResult>
{
    private const int MaxGetUrlIdChars = 1024;

    /// <inheritdoc />
    public override bool IsReadRequest => true;

    /// <inheritdoc />
    public override HttpRequestMessage CreateRequest(string? database)
    {
        var url = new StringBuilder(DatabasePath(database)).Append("/docs?");
        foreach (string inc in includes ?? [])
            url.Append("&include=").Append(Uri.EscapeDataString(inc));
        if (ids.Sum(i => i.Length) < MaxGetUrlIdChars)
        {
            foreach (string id in ids)
                url.Append("&id=").Append(Uri.EscapeDataString(id));
            return new HttpRequestMessage(HttpMethod.Get, url.ToString());
        }
        var body = new JsonObject { ["Ids"] = new JsonArray(ids.Select(i => (JsonNode?)JsonValue.Create(i)).ToArray()) };
        return new HttpRequestMessage(HttpMethod.Post, url.ToString()) { Content = JsonContent(body) };
    }

    /// <inheritdoc />
    public override bool IsExpectedStatus(int status) => status == 404;

    /// <inheritdoc />
    public override async Task<GetDocumentsResult> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(response);
        if ((int)response.StatusCode == 404)
            return new GetDocumentsResult([null], []);
        var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
        var results = (json["Results"] as JsonArray ?? []).Select(n => n as JsonObject).ToList();
        var included = new List<JsonObject>();
        if (json["Includes"] is JsonObject inc)
            foreach (var (_, doc) in inc)
                if (doc is JsonObject d)
                    included.Add(d);
        return new GetDocumentsResult(results, included);
    }
}

/// <summary>Documents (with <c>@metadata</c>) in request order, null where missing, and the included documents.</summary>
public sealed record GetDocumentsResult(IReadOnlyList<JsonObject?> Results, IReadOnlyList<JsonObject> Includes);
