using System.Globalization;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Subscriptions;

/// <summary>How a new subscription is defined.</summary>
public sealed class SubscriptionCreationOptions
{
    /// <summary>Its name (generated when null).</summary>
    public string? Name { get; set; }

    /// <summary>The RQL: <c>from Orders where Freight &gt; 10 [include Company] [select {...}]</c>.</summary>
    public required string Query { get; set; }

    /// <summary>Where it starts: null (the first document), <c>"LastDocument"</c>, or a change vector.</summary>
    public string? ChangeVector { get; set; }

    /// <summary>Created disabled.</summary>
    public bool Disabled { get; set; }
}

/// <summary>A subscription as the server keeps it.</summary>
/// <param name="SubscriptionName">Its name.</param>
/// <param name="SubscriptionId">Its id.</param>
/// <param name="Query">The RQL.</param>
/// <param name="ChangeVectorForNextBatchStartingPoint">The last acknowledged document's change vector (null before the first acknowledgement).</param>
/// <param name="Disabled">True when disabled.</param>
/// <param name="LastBatchAckTime">When a batch was last acknowledged.</param>
/// <param name="Connected">True while a worker is connected.</param>
public sealed record SubscriptionState(string SubscriptionName, long SubscriptionId, string Query, string? ChangeVectorForNextBatchStartingPoint, bool Disabled,
    DateTime? LastBatchAckTime, bool Connected);

/// <summary>Data subscriptions of a store's database (<c>store.Subscriptions</c>): definitions over HTTP, workers over the server's TCP port.</summary>
public sealed class DocumentSubscriptions(DocumentStore store)
{
    private string Database(string? database) => database ?? store.Database ?? throw new InvalidOperationException("Set DocumentStore.Database or pass a database.");

    private Task<JsonObject?> Send(HttpMethod method, string path, JsonObject? body, string? database, CancellationToken cancellationToken) =>
        store.Executor.ExecuteAsync(new JsonCommand(method, path, body), Database(database), cancellationToken);

    /// <summary>Creates a subscription; returns its name.</summary>
    public async Task<string> CreateAsync(SubscriptionCreationOptions options, string? database = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        var body = new JsonObject { ["Name"] = options.Name, ["Query"] = options.Query, ["ChangeVector"] = options.ChangeVector, ["Disabled"] = options.Disabled };
        var result = await Send(HttpMethod.Put, "/subscriptions", body, database, cancellationToken).ConfigureAwait(false);
        return (string)result!["Name"]!;
    }

    /// <summary>Changes a subscription's query (and, with <paramref name="changeVector"/>, where it continues from).</summary>
    public Task UpdateAsync(string name, string? query = null, string? changeVector = null, string? database = null, CancellationToken cancellationToken = default) =>
        Send(HttpMethod.Post, "/subscriptions/update", new JsonObject { ["Name"] = name, ["Query"] = query, ["ChangeVector"] = changeVector }, database, cancellationToken);

    /// <summary>Deletes a subscription (its worker is disconnected).</summary>
    public Task DeleteAsync(string name, string? database = null, CancellationToken cancellationToken = default) =>
        Send(HttpMethod.Delete, "/subscriptions?taskName=" + Uri.EscapeDataString(name), null, database, cancellationToken);

    /// <summary>Disconnects the subscription's worker (it does not reconnect).</summary>
    public Task DropConnectionAsync(string name, string? database = null, CancellationToken cancellationToken = default) =>
        Send(HttpMethod.Post, "/subscriptions/drop?name=" + Uri.EscapeDataString(name), null, database, cancellationToken);

    /// <summary>Enables a subscription.</summary>
    public Task EnableAsync(string name, string? database = null, CancellationToken cancellationToken = default) => Toggle(name, false, database, cancellationToken);

    /// <summary>Disables a subscription (its worker is disconnected; none is accepted until enabled).</summary>
    public Task DisableAsync(string name, string? database = null, CancellationToken cancellationToken = default) => Toggle(name, true, database, cancellationToken);

    private Task<JsonObject?> Toggle(string name, bool disable, string? database, CancellationToken cancellationToken) =>
        Send(HttpMethod.Post, "/admin/tasks/state?key=0&type=Subscription&disable=" + (disable ? "true" : "false") + "&taskName=" + Uri.EscapeDataString(name), null, database, cancellationToken);

    /// <summary>One subscription's state.</summary>
    public async Task<SubscriptionState> GetSubscriptionStateAsync(string name, string? database = null, CancellationToken cancellationToken = default) =>
        State((await Send(HttpMethod.Get, "/subscriptions/state?name=" + Uri.EscapeDataString(name), null, database, cancellationToken).ConfigureAwait(false))!);

    /// <summary>The subscriptions, by id.</summary>
    public async Task<List<SubscriptionState>> GetSubscriptionsAsync(int start = 0, int take = 1024, string? database = null, CancellationToken cancellationToken = default)
    {
        var result = await Send(HttpMethod.Get, $"/subscriptions?start={start.ToString(CultureInfo.InvariantCulture)}&pageSize={take.ToString(CultureInfo.InvariantCulture)}", null, database, cancellationToken).ConfigureAwait(false);
        return (result!["Results"] as JsonArray ?? []).OfType<JsonObject>().Select(State).ToList();
    }

    private static SubscriptionState State(JsonObject s) => new((string)s["SubscriptionName"]!, (long?)s["SubscriptionId"] ?? 0, (string?)s["Query"] ?? "",
        (string?)s["ChangeVectorForNextBatchStartingPoint"], (bool?)s["Disabled"] ?? false,
        s["LastBatchAckTime"] is JsonValue v && v.TryGetValue(out string? t) ? DateTime.Parse(t, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal) : null,
        (bool?)s["Connected"] ?? false);

    /// <summary>A worker for subscription <paramref name="options"/>.SubscriptionName; start it with <c>Run</c>.</summary>
    public SubscriptionWorker<T> GetSubscriptionWorker<T>(SubscriptionWorkerOptions options, string? database = null)
    {
        ArgumentNullException.ThrowIfNull(options);
        return new SubscriptionWorker<T>(store, Database(database), options);
    }

    private sealed class JsonCommand(HttpMethod method, string path, JsonObject? body) : RavenCommand<JsonObject?>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(method, DatabasePath(database) + path) { Content = body == null ? null : JsonContent(body) };

        public override async Task<JsonObject?> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
            response.StatusCode == System.Net.HttpStatusCode.NoContent || response.Content.Headers.ContentLength == 0 ? null
                : await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
    }
}
