using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Commands;

/// <summary>
/// <c>POST /databases/{db}/queries</c> (docs/protocol.md §6): an RQL query with its parameters, optionally
/// waiting (bounded) for the index to catch up.
/// </summary>
public sealed class QueryCommand(string rql, JsonObject parameters, TimeSpan? waitForNonStaleResults) : RavenCommand<QueryResult>
{
    /// <summary>The RQL text sent.</summary>
    public string Rql { get; } = rql;

    /// <inheritdoc />
    public override bool IsReadRequest => true;

    /// <inheritdoc />
    public override HttpRequestMessage CreateRequest(string? database) =>
        new(HttpMethod.Post, DatabasePath(database) + "/queries") { Content = JsonContent(Body()) };

    /// <summary>The IndexQuery body sent.</summary>
    internal JsonObject Body()
    {
        var body = new JsonObject
        {
            ["Query"] = Rql,
            ["QueryParameters"] = parameters.DeepClone(),
        };
        if (waitForNonStaleResults is { } wait)
        {
            body["WaitForNonStaleResults"] = true;
            body["WaitForNonStaleResultsTimeout"] = (long)wait.TotalMilliseconds;
        }
        return body;
    }

    /// <inheritdoc />
    public override bool IsExpectedStatus(int status) => false;

    /// <inheritdoc />
    public override async Task<QueryResult> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
        Parse(await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false));

    /// <summary>Reads a query answer's JSON.</summary>
    internal static QueryResult Parse(JsonObject json)
    {
        var includes = new List<JsonObject>();
        if (json["Includes"] is JsonObject inc)
            foreach (var (_, d) in inc)
                if (d is JsonObject o)
                    includes.Add(o);
        return new QueryResult(
            (json["Results"] as JsonArray ?? []).Select(n => n as JsonObject).Where(n => n != null).Select(n => n!).ToList(),
            includes,
            (long?)json["TotalResults"] ?? 0,
            (long?)json["SkippedResults"] ?? 0,
            (bool?)json["IsStale"] ?? false,
            (string?)json["IndexName"],
            (long?)json["DurationInMs"] ?? 0);
    }
}

/// <summary>What a query answered.</summary>
/// <param name="Results">Result documents or projections, each with <c>@metadata</c>.</param>
/// <param name="Includes">Documents pulled in by <c>include</c>.</param>
/// <param name="TotalResults">Matches before paging.</param>
/// <param name="SkippedResults">Results skipped (for example by distinct).</param>
/// <param name="IsStale">True when the index had not caught up with every write.</param>
/// <param name="IndexName">The index that answered.</param>
/// <param name="DurationInMs">Server time spent.</param>
public sealed record QueryResult(IReadOnlyList<JsonObject> Results, IReadOnlyList<JsonObject> Includes, long TotalResults, long SkippedResults, bool IsStale, string? IndexName, long DurationInMs);
