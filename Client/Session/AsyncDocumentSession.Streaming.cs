using System.Text.Json.Nodes;
using RavenLite.Client.Linq;

namespace RavenLite.Client.Session;

/// <summary>Streaming: documents by prefix and query results, read as the server sends them, never tracked.</summary>
internal sealed partial class AsyncDocumentSession
{
    public Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(string startsWith, string? matches = null, int start = 0, int pageSize = int.MaxValue,
        string? startAfter = null, string? exclude = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(startsWith);
        var path = new System.Text.StringBuilder("/streams/docs?format=jsonl&startsWith=").Append(Uri.EscapeDataString(startsWith));
        if (matches != null)
            path.Append("&matches=").Append(Uri.EscapeDataString(matches));
        if (exclude != null)
            path.Append("&exclude=").Append(Uri.EscapeDataString(exclude));
        if (startAfter != null)
            path.Append("&startAfter=").Append(Uri.EscapeDataString(startAfter));
        if (start > 0)
            path.Append("&start=").Append(start);
        if (pageSize != int.MaxValue)
            path.Append("&pageSize=").Append(pageSize);
        return OpenStreamAsync<T>(new Streaming.StreamCommand(path.ToString(), null), null, cancellationToken);
    }

    public Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(IQueryable<T> query, CancellationToken cancellationToken = default) =>
        StreamAsync(query, out _, cancellationToken);

    public Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(IQueryable<T> query, out Streaming.StreamQueryStatistics stats, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(query);
        var provider = query.Provider as RavenQueryProvider ?? throw new ArgumentException("Only a query of this session (session.Query<T>()) can be streamed.", nameof(query));
        if (provider.WaitForNonStale != null)
            throw new NotSupportedException("A streamed query does not wait for indexing: remove WaitForNonStaleResults.");
        var rql = provider.Translate(query.Expression);
        stats = new Streaming.StreamQueryStatistics();
        return OpenStreamAsync<T>(QueryStream(rql.Rql, rql.Parameters), stats, cancellationToken);
    }

    public Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(IAsyncRawDocumentQuery<T> query, CancellationToken cancellationToken = default) =>
        StreamAsync(query, out _, cancellationToken);

    public Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(IAsyncRawDocumentQuery<T> query, out Streaming.StreamQueryStatistics stats, CancellationToken cancellationToken = default)
    {
        var raw = query as RawDocumentQuery<T> ?? throw new ArgumentException("Only a query of this session (session.Advanced.AsyncRawQuery<T>()) can be streamed.", nameof(query));
        if (raw.Waits)
            throw new NotSupportedException("A streamed query does not wait for indexing: remove WaitForNonStaleResults.");
        stats = new Streaming.StreamQueryStatistics();
        return OpenStreamAsync<T>(QueryStream(raw.Rql, raw.Parameters), stats, cancellationToken);
    }

    private static Streaming.StreamCommand QueryStream(string rql, JsonObject parameters) =>
        new("/streams/queries?format=jsonl", new JsonObject { ["Query"] = rql, ["QueryParameters"] = parameters.DeepClone() });

    private async Task<IAsyncEnumerator<Streaming.StreamResult<T>>> OpenStreamAsync<T>(Streaming.StreamCommand command, Streaming.StreamQueryStatistics? stats, CancellationToken cancellationToken)
    {
        ThrowIfDisposed();
        CountRequest();
        var response = await Store.Executor.ExecuteAsync(command, Database, cancellationToken).ConfigureAwait(false);
        var lines = await Streaming.StreamReading.OpenAsync(response, stats != null, stats, cancellationToken).ConfigureAwait(false);
        return StreamResults<T>(lines).GetAsyncEnumerator(cancellationToken);
    }

    private async IAsyncEnumerable<Streaming.StreamResult<T>> StreamResults<T>(IAsyncEnumerator<JsonObject> lines)
    {
        await using (lines.ConfigureAwait(false))
        {
            while (await lines.MoveNextAsync().ConfigureAwait(false))
            {
                var result = lines.Current;
                var metadata = result["@metadata"] as JsonObject ?? [];
                yield return new Streaming.StreamResult<T>((string?)metadata["@id"], (string?)metadata["@change-vector"], metadata,
                    metadata["@projection"]?.GetValue<bool>() == true || metadata["@id"] == null ? FromQueryResult<T>(result) : Detached<T>(result));
            }
        }
    }
}
