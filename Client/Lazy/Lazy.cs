using System.Net;
using System.Text;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Lazy;

/// <summary>Loads deferred until a value is asked for (or <see cref="IAsyncEagerSessionOperations.ExecuteAllPendingLazyOperationsAsync"/>): every pending lazy operation then goes in one <c>multi_get</c>.</summary>
public interface IAsyncLazySessionOperations
{
    /// <summary>A document by id, tracked once loaded (null when missing).</summary>
    Lazy<Task<T?>> LoadAsync<T>(string id);

    /// <summary>Documents by id (null where missing), tracked once loaded.</summary>
    Lazy<Task<Dictionary<string, T?>>> LoadAsync<T>(IEnumerable<string> ids);
}

/// <summary>Runs what was deferred (<c>session.Advanced.Eagerly</c>).</summary>
public interface IAsyncEagerSessionOperations
{
    /// <summary>Sends every pending lazy operation of the session in one <c>POST /multi_get</c> (one request).</summary>
    Task ExecuteAllPendingLazyOperationsAsync(CancellationToken cancellationToken = default);
}

/// <summary>One deferred request: what multi_get sends for it, and its answer once there (status, JSON).</summary>
internal sealed class PendingLazy(string url, string query, string method, JsonObject? content, bool notFoundIsAnswer)
{
    /// <summary>A 404 is an answer (a missing document), not an error (a missing index).</summary>
    public bool NotFoundIsAnswer => notFoundIsAnswer;

    public TaskCompletionSource<(int Status, JsonNode? Result)> Done { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public JsonObject Request(string database) => new()
    {
        ["Url"] = "/databases/" + database + url,
        ["Query"] = query,
        ["Method"] = method,
        ["Headers"] = new JsonObject(),
        ["Content"] = content?.ToJsonString(),
    };
}

/// <summary><c>POST /databases/{db}/multi_get</c> <c>{Requests}</c>: the <c>Results</c> array, one per request, in order.</summary>
internal sealed class MultiGetCommand(IReadOnlyList<PendingLazy> pending) : RavenCommand<JsonArray>
{
    public override HttpRequestMessage CreateRequest(string? database)
    {
        string db = database ?? throw new InvalidOperationException("Lazy operations need a database: set DocumentStore.Database.");
        var requests = new JsonArray(pending.Select(p => (JsonNode?)p.Request(db)).ToArray());
        return new HttpRequestMessage(HttpMethod.Post, DatabasePath(database) + "/multi_get") { Content = JsonContent(new JsonObject { ["Requests"] = requests }) };
    }

    public override async Task<JsonArray> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
        (await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false))["Results"] as JsonArray
            ?? throw new Exceptions.RavenException("multi_get answered without Results.");

    /// <summary>Hands each answer to its pending operation; an error answer becomes the exception a single request would throw.</summary>
    public static async Task DispatchAsync(IReadOnlyList<PendingLazy> pending, JsonArray results, CancellationToken cancellationToken)
    {
        for (int i = 0; i < pending.Count; i++)
        {
            var r = i < results.Count ? results[i] as JsonObject : null;
            int status = (int?)r?["StatusCode"] ?? 500;
            var result = r?["Result"];
            if (status is >= 200 and < 300 or 304 || (status == 404 && pending[i].NotFoundIsAnswer))
            {
                pending[i].Done.TrySetResult((status, result));
                continue;
            }
            using var synthetic = new HttpResponseMessage((HttpStatusCode)status) { Content = new StringContent(result?.ToJsonString() ?? "", Encoding.UTF8, "application/json") };
            pending[i].Done.TrySetException(await RequestExecutor.ToExceptionAsync(synthetic, cancellationToken).ConfigureAwait(false));
        }
    }
}
