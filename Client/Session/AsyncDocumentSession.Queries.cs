using System.Text.Json;
using System.Text.Json.Nodes;
using RavenLite.Client.Commands;
using RavenLite.Client.Linq;

namespace RavenLite.Client.Session;

/// <summary>Queries: LINQ and raw RQL, and turning their results into entities or projections.</summary>
internal sealed partial class AsyncDocumentSession
{
    public IRavenQueryable<T> Query<T>(string? indexName = null, string? collectionName = null)
    {
        ThrowIfDisposed();
        var provider = new RavenQueryProvider(this, typeof(T), indexName, collectionName ?? (indexName == null ? Conventions.FindCollectionName(typeof(T)) : null));
        return new RavenQueryable<T>(provider);
    }

    public IAsyncRawDocumentQuery<T> AsyncRawQuery<T>(string rql)
    {
        ArgumentException.ThrowIfNullOrEmpty(rql);
        return new RawDocumentQuery<T>(this, rql);
    }

    /// <summary>Runs a query (counted against the request guard); keeps its included documents for later loads.</summary>
    internal async Task<QueryResult> ExecuteQueryAsync(QueryCommand command, CancellationToken cancellationToken)
    {
        ThrowIfDisposed();
        CountRequest();
        var result = await Store.Executor.ExecuteAsync(command, Database, cancellationToken).ConfigureAwait(false);
        foreach (var inc in result.Includes)
            if (inc["@metadata"]?["@id"]?.GetValue<string>() is { } id && !_byId.ContainsKey(id))
                _included[id] = inc;
        return result;
    }

    /// <summary>Turns one query result into <typeparamref name="T"/>: a tracked entity for whole documents, a plain object for projections.</summary>
    internal T FromQueryResult<T>(JsonObject result)
    {
        var metadata = result["@metadata"] as JsonObject;
        bool projection = metadata?["@projection"]?.GetValue<bool>() == true || metadata?["@id"] == null;
        if (!projection)
            return Materialize<T>(result);
        if (IsScalar(typeof(T)))
        {
            // select Name: a one-field projection into a scalar.
            foreach (var (k, v) in result)
                if (k != "@metadata")
                    return v.Deserialize<T>(Conventions.JsonSerializerOptions)!;
            return default!;
        }
        return WithoutMetadata(result).Deserialize<T>(Conventions.JsonSerializerOptions)!;
    }

    /// <summary>A copy of a server document or projection without its <c>@metadata</c>: the entity's own fields.</summary>
    private static JsonObject WithoutMetadata(JsonObject document)
    {
        var body = new JsonObject();
        foreach (var (k, v) in document)
            if (k != "@metadata")
                body[k] = v?.DeepClone();
        return body;
    }

    private static bool IsScalar(Type t)
    {
        t = Nullable.GetUnderlyingType(t) ?? t;
        return t.IsPrimitive || t == typeof(string) || t == typeof(decimal) || t == typeof(DateTime) || t == typeof(DateTimeOffset) || t == typeof(Guid) || t.IsEnum;
    }
}
