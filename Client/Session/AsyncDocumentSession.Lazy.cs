using System.Text;
using System.Text.Json.Nodes;
using RavenLite.Client.Commands;

namespace RavenLite.Client.Session;

/// <summary>Lazy operations: deferred loads and queries sent together in one multi_get.</summary>
internal sealed partial class AsyncDocumentSession
{
    private readonly List<Lazy.PendingLazy> _lazies = [];

    private SessionLazily? _lazily;

    public Lazy.IAsyncLazySessionOperations Lazily => _lazily ??= new SessionLazily(this);

    public Lazy.IAsyncEagerSessionOperations Eagerly => _lazily ??= new SessionLazily(this);

    /// <summary>Defers a request until a lazy value is asked for; <paramref name="read"/> turns its answer (status, JSON) into the value.</summary>
    internal Lazy<Task<TResult>> AddLazy<TResult>(string url, string query, string method, JsonObject? content, Func<int, JsonNode?, TResult> read, bool notFoundIsAnswer = false)
    {
        ThrowIfDisposed();
        var pending = new Lazy.PendingLazy(url, query, method, content, notFoundIsAnswer);
        _lazies.Add(pending);
        return new Lazy<Task<TResult>>(async () =>
        {
            if (!pending.Done.Task.IsCompleted)
                await ExecuteAllPendingLazyOperationsAsync(default).ConfigureAwait(false);
            var (status, result) = await pending.Done.Task.ConfigureAwait(false);
            return read(status, result);
        });
    }

    internal async Task ExecuteAllPendingLazyOperationsAsync(CancellationToken cancellationToken)
    {
        if (_lazies.Count == 0)
            return;
        var batch = _lazies.ToList();
        _lazies.Clear();
        try
        {
            CountRequest();
            var results = await Store.Executor.ExecuteAsync(new Lazy.MultiGetCommand(batch), Database, cancellationToken).ConfigureAwait(false);
            await Lazy.MultiGetCommand.DispatchAsync(batch, results, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e)
        {
            foreach (var p in batch)
                p.Done.TrySetException(e);
            throw;
        }
    }

    /// <summary>A lazy query: its RQL answered inside the next multi_get; <paramref name="read"/> gets the answer.</summary>
    internal Lazy<Task<TResult>> AddLazyQuery<TResult>(QueryCommand command, Func<QueryResult, TResult> read) =>
        AddLazy("/queries", "", "POST", command.Body(), (_, json) => read(QueryCommand.Parse(json as JsonObject ?? [])));

    private sealed class SessionLazily(AsyncDocumentSession session) : Lazy.IAsyncLazySessionOperations, Lazy.IAsyncEagerSessionOperations
    {
        public Lazy<Task<T?>> LoadAsync<T>(string id)
        {
            ArgumentException.ThrowIfNullOrEmpty(id);
            var many = LoadAsync<T>([id]);
            return new Lazy<Task<T?>>(async () => (await many.Value.ConfigureAwait(false)).GetValueOrDefault(id));
        }

        public Lazy<Task<Dictionary<string, T?>>> LoadAsync<T>(IEnumerable<string> ids)
        {
            var list = ids.Distinct(StringComparer.OrdinalIgnoreCase).ToList();
            var query = new StringBuilder("?");
            foreach (string id in list)
                query.Append("&id=").Append(Uri.EscapeDataString(id));
            return session.AddLazy("/docs", query.ToString(), "GET", null, (status, json) =>
            {
                var result = new Dictionary<string, T?>(StringComparer.OrdinalIgnoreCase);
                var docs = status == 404 ? null : (json as JsonObject)?["Results"] as JsonArray;
                for (int i = 0; i < list.Count; i++)
                    result[list[i]] = docs != null && i < docs.Count && docs[i] is JsonObject d ? session.Materialize<T>(d) : default;
                return result;
            }, notFoundIsAnswer: true);
        }

        public Task ExecuteAllPendingLazyOperationsAsync(CancellationToken cancellationToken = default) => session.ExecuteAllPendingLazyOperationsAsync(cancellationToken);
    }
}
