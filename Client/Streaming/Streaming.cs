using System.Runtime.CompilerServices;
using System.Text;
using System.Text.Json.Nodes;
using RavenLite.Client.Exceptions;
using RavenLite.Client.Http;

namespace RavenLite.Client.Streaming;

/// <summary>One streamed document or projection (not tracked by the session).</summary>
/// <param name="Id">The document's id (null for a map-reduce result).</param>
/// <param name="ChangeVector">The document's change vector (null for projections of reduce results).</param>
/// <param name="Metadata">The result's <c>@metadata</c>.</param>
/// <param name="Document">The entity or projection.</param>
public sealed record StreamResult<T>(string? Id, string? ChangeVector, JsonObject Metadata, T Document);

/// <summary>What a streamed query said of itself before its results.</summary>
public sealed class StreamQueryStatistics
{
    /// <summary>The index (or <c>collection/X</c>) read.</summary>
    public string? IndexName { get; internal set; }

    /// <summary>True when the index had not processed every write.</summary>
    public bool IsStale { get; internal set; }

    /// <summary>The matches, or -1 when the server could not know them before streaming.</summary>
    public long TotalResults { get; internal set; }

    /// <summary>The database's last etag in the snapshot read.</summary>
    public long ResultEtag { get; internal set; }

    /// <summary>When the index last indexed.</summary>
    public DateTime IndexTimestamp { get; internal set; }

    internal void Fill(JsonObject stats)
    {
        IndexName = (string?)stats[nameof(IndexName)];
        IsStale = (bool?)stats[nameof(IsStale)] ?? false;
        TotalResults = (long?)stats[nameof(TotalResults)] ?? -1;
        ResultEtag = (long?)stats[nameof(ResultEtag)] ?? 0;
        IndexTimestamp = stats[nameof(IndexTimestamp)] is { } t ? DateTime.Parse((string)t!, System.Globalization.CultureInfo.InvariantCulture, System.Globalization.DateTimeStyles.AdjustToUniversal | System.Globalization.DateTimeStyles.AssumeUniversal) : default;
    }
}

/// <summary>
/// <c>GET /streams/docs</c> or <c>POST /streams/queries</c> with <c>format=jsonl</c>: the answer is kept open and read
/// line by line by <see cref="StreamReading"/> (the enumerator disposes it).
/// </summary>
internal sealed class StreamCommand(string pathAndQuery, JsonObject? queryBody) : RavenCommand<HttpResponseMessage>
{
    public override bool KeepsResponse => true;

    public override HttpRequestMessage CreateRequest(string? database) => queryBody == null
        ? new HttpRequestMessage(HttpMethod.Get, DatabasePath(database) + pathAndQuery)
        : new HttpRequestMessage(HttpMethod.Post, DatabasePath(database) + pathAndQuery) { Content = JsonContent(queryBody) };

    public override Task<HttpResponseMessage> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) => Task.FromResult(response);
}

/// <summary>Reads a jsonl stream answer one line at a time.</summary>
internal static class StreamReading
{
    /// <summary>
    /// Opens the answer; for a query reads its statistics line into <paramref name="stats"/> first. The enumerator
    /// yields each document (or query <c>Item</c>) as it arrives and disposes the answer when done or disposed.
    /// </summary>
    public static async Task<IAsyncEnumerator<JsonObject>> OpenAsync(HttpResponseMessage response, bool query, StreamQueryStatistics? stats, CancellationToken cancellationToken)
    {
        StreamReader? reader = null;
        try
        {
            reader = new StreamReader(await response.Content.ReadAsStreamAsync(cancellationToken).ConfigureAwait(false), Encoding.UTF8);
            JsonObject? pending = null;
            if (query && await reader.ReadLineAsync(cancellationToken).ConfigureAwait(false) is { } first)
            {
                var line = Parse(first);
                if (line["Stats"] is JsonObject s)
                    stats?.Fill(s);
                else
                    pending = line;
            }
            return Lines(response, reader, query, pending, cancellationToken).GetAsyncEnumerator(cancellationToken);
        }
        catch
        {
            reader?.Dispose();
            response.Dispose();
            throw;
        }
    }

    private static JsonObject Parse(string line) =>
        JsonNode.Parse(line) as JsonObject ?? throw new RavenException("A stream line is not a JSON object: " + (line.Length > 200 ? line[..200] : line));

    private static async IAsyncEnumerable<JsonObject> Lines(HttpResponseMessage response, StreamReader reader, bool query, JsonObject? pending, [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        using (response)
        using (reader)
        {
            var next = pending;
            while (true)
            {
                if (next == null)
                {
                    string? text = await reader.ReadLineAsync(cancellationToken).ConfigureAwait(false);
                    if (text == null)
                        yield break;
                    if (text.Length == 0)
                        continue;
                    next = Parse(text);
                }
                if (!query)
                {
                    yield return next;
                }
                else if (next["Item"] is JsonObject item)
                {
                    yield return item;
                }
                else if (next["Error"] is { } error)
                {
                    throw new RavenException("The streamed query failed on the server: " + error);
                }
                next = null;
            }
        }
    }
}
