using System.Text.Json;
using System.Text.Json.Nodes;
using RavenLite.Client.Commands;
using RavenLite.Client.Session;

namespace RavenLite.Client.Linq;

/// <summary>Raw RQL through a session: results are tracked entities, or plain objects for projections.</summary>
internal sealed class RawDocumentQuery<T>(AsyncDocumentSession session, string rql) : IAsyncRawDocumentQuery<T>
{
    private readonly JsonObject _parameters = [];
    private TimeSpan? _wait;
    private QueryStatistics? _stats;

    /// <summary>The RQL text.</summary>
    public string Rql => rql;

    /// <summary>The parameters added so far.</summary>
    public JsonObject Parameters => _parameters;

    /// <summary>Whether a wait for the index was asked (a stream cannot wait).</summary>
    public bool Waits => _wait != null;

    public IAsyncRawDocumentQuery<T> AddParameter(string name, object? value)
    {
        ArgumentException.ThrowIfNullOrEmpty(name);
        _parameters[name.TrimStart('$')] = value == null ? null : JsonSerializer.SerializeToNode(value, value.GetType(), session.Store.Conventions.JsonSerializerOptions);
        return this;
    }

    public IAsyncRawDocumentQuery<T> WaitForNonStaleResults(TimeSpan? timeout = null)
    {
        _wait = timeout ?? RavenQueryProvider.DefaultWaitTimeout;
        return this;
    }

    public IAsyncRawDocumentQuery<T> Statistics(out QueryStatistics stats)
    {
        stats = _stats = new QueryStatistics();
        return this;
    }

    public async Task<List<T>> ToListAsync(CancellationToken cancellationToken = default)
    {
        var result = await session.ExecuteQueryAsync(new QueryCommand(rql, _parameters, _wait), cancellationToken).ConfigureAwait(false);
        _stats?.Fill(result);
        return result.Results.Select(session.FromQueryResult<T>).ToList();
    }
}
