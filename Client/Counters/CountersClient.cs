using System.Text;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Counters;

/// <summary>The counters of one document in a session (<c>session.CountersFor(..)</c>): changes are sent with SaveChangesAsync, in its transaction.</summary>
public interface ISessionDocumentCounters
{
    /// <summary>Adds <paramref name="delta"/> (negative to subtract) to the counter, creating it at 0 first.</summary>
    void Increment(string counter, long delta = 1);

    /// <summary>Removes the counter.</summary>
    void Delete(string counter);

    /// <summary>The counter's value now (null when it does not exist); one request.</summary>
    Task<long?> GetAsync(string counter, CancellationToken cancellationToken = default);

    /// <summary>Every counter of the document and its value; one request.</summary>
    Task<IReadOnlyDictionary<string, long>> GetAllAsync(CancellationToken cancellationToken = default);
}

/// <summary>One counter as the server reports it.</summary>
public sealed record CounterDetail(string DocumentId, string CounterName, long TotalValue, string? ChangeVector);

/// <summary>An operation in a <see cref="CounterBatchOperation"/>.</summary>
public enum CounterOperationType
{
    /// <summary>Add the delta (creating the counter).</summary>
    Increment,

    /// <summary>Remove the counter.</summary>
    Delete,

    /// <summary>Read the counter.</summary>
    Get,

    /// <summary>Set the counter's value to the delta.</summary>
    Put,
}

/// <summary>One counter operation on one document.</summary>
public sealed record CounterOperation(string DocumentId, CounterOperationType Type, string CounterName, long Delta = 1);

/// <summary>
/// <c>POST /databases/{db}/counters</c>: counter operations on any number of documents, in one server
/// transaction. Answers the details of the counters incremented, set or read (null for one read that does not exist).
/// </summary>
public sealed class CounterBatchOperation(IEnumerable<CounterOperation> operations) : IMaintenanceOperation<IReadOnlyList<CounterDetail?>>
{
    /// <inheritdoc />
    public RavenCommand<IReadOnlyList<CounterDetail?>> GetCommand(DocumentConventions conventions) => new Command(operations.ToList());

    private sealed class Command(List<CounterOperation> operations) : RavenCommand<IReadOnlyList<CounterDetail?>>
    {
        public override HttpRequestMessage CreateRequest(string? database)
        {
            var documents = new JsonArray();
            foreach (var group in operations.GroupBy(o => o.DocumentId, StringComparer.OrdinalIgnoreCase))
                documents.Add(CountersJson.Document(group.Key, group.Select(o => CountersJson.Operation(o.Type, o.CounterName, o.Delta))));
            return new HttpRequestMessage(HttpMethod.Post, DatabasePath(database) + "/counters")
            {
                Content = JsonContent(new JsonObject { ["Documents"] = documents, ["ReplyWithAllNodesValues"] = false }),
            };
        }

        public override async Task<IReadOnlyList<CounterDetail?>> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
            CountersJson.Details(await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false));
    }
}

/// <summary><c>GET /databases/{db}/counters?docId=&amp;counter=..</c>: the named counters of a document (all of them when none is named).</summary>
public sealed class GetCountersOperation(string documentId, params string[] counters) : IMaintenanceOperation<IReadOnlyList<CounterDetail?>>
{
    /// <inheritdoc />
    public RavenCommand<IReadOnlyList<CounterDetail?>> GetCommand(DocumentConventions conventions) => new CountersJson.GetCommand(documentId, counters);
}

/// <summary>The JSON shapes of counter requests and answers.</summary>
internal static class CountersJson
{
    public static JsonObject Operation(CounterOperationType type, string name, long delta) =>
        new() { ["Type"] = type.ToString(), ["CounterName"] = name, ["Delta"] = delta };

    public static JsonObject Document(string id, IEnumerable<JsonObject> operations) =>
        new() { ["DocumentId"] = id, ["Operations"] = new JsonArray(operations.Select(o => (JsonNode?)o).ToArray()) };

    public static List<CounterDetail?> Details(JsonObject json)
    {
        var result = new List<CounterDetail?>();
        foreach (var n in json["Counters"] as JsonArray ?? [])
            result.Add(n is JsonObject o
                ? new CounterDetail((string?)o["DocumentId"] ?? "", (string?)o["CounterName"] ?? "", (long?)o["TotalValue"] ?? 0, (string?)o["ChangeVector"])
                : null);
        return result;
    }

    internal sealed class GetCommand(string documentId, IReadOnlyList<string> counters) : RavenCommand<IReadOnlyList<CounterDetail?>>
    {
        public override HttpRequestMessage CreateRequest(string? database)
        {
            var url = new StringBuilder(DatabasePath(database)).Append("/counters?docId=").Append(Uri.EscapeDataString(documentId));
            foreach (string c in counters)
                url.Append("&counter=").Append(Uri.EscapeDataString(c));
            return new HttpRequestMessage(HttpMethod.Get, url.ToString());
        }

        public override async Task<IReadOnlyList<CounterDetail?>> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
            Details(await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false));
    }
}
