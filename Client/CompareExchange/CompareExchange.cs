using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;
using RavenLite.Client.Operations;

namespace RavenLite.Client.CompareExchange;

/// <summary>A compare-exchange value: its key, the index it was last written at, and the value (mutable in a cluster-wide session: changes are saved).</summary>
public sealed class CompareExchangeValue<T>(string key, long index, T? value)
{
    /// <summary>The key.</summary>
    public string Key { get; } = key;

    /// <summary>The index of its last write: what a put or delete must name.</summary>
    public long Index { get; internal set; } = index;

    /// <summary>The value.</summary>
    public T? Value { get; set; } = value;
}

/// <summary>The outcome of a put or delete: whether it happened, the index after it (or the current one when it did not) and the value.</summary>
public sealed record CompareExchangeResult<T>(bool Successful, long Index, T? Value);

/// <summary><c>PUT /databases/{db}/cmpxchg?key=&amp;index=</c>: stores a value when the key's index is <paramref name="index"/> (0: only when the key is new).</summary>
public sealed class PutCompareExchangeValueOperation<T>(string key, T value, long index) : IMaintenanceOperation<CompareExchangeResult<T>>
{
    /// <inheritdoc />
    public RavenCommand<CompareExchangeResult<T>> GetCommand(DocumentConventions conventions) =>
        new CompareExchangeJson.ResultCommand<T>(HttpMethod.Put, key, index, CompareExchangeJson.Wrap(value, conventions), conventions);
}

/// <summary><c>DELETE /databases/{db}/cmpxchg?key=&amp;index=</c>: removes a value when the key's index is <paramref name="index"/>.</summary>
public sealed class DeleteCompareExchangeValueOperation<T>(string key, long index) : IMaintenanceOperation<CompareExchangeResult<T>>
{
    /// <inheritdoc />
    public RavenCommand<CompareExchangeResult<T>> GetCommand(DocumentConventions conventions) =>
        new CompareExchangeJson.ResultCommand<T>(HttpMethod.Delete, key, index, null, conventions);
}

/// <summary><c>GET /databases/{db}/cmpxchg?key=</c>: one value, or null when the key does not exist.</summary>
public sealed class GetCompareExchangeValueOperation<T>(string key) : IMaintenanceOperation<CompareExchangeValue<T>?>
{
    /// <inheritdoc />
    public RavenCommand<CompareExchangeValue<T>?> GetCommand(DocumentConventions conventions) => new Command(key, conventions);

    private sealed class Command(string key, DocumentConventions conventions) : RavenCommand<CompareExchangeValue<T>?>
    {
        public override HttpRequestMessage CreateRequest(string? database) => new(HttpMethod.Get, $"{DatabasePath(database)}/cmpxchg?key={Uri.EscapeDataString(key)}");

        /// <summary>A 404 is the answer for a key with no value (as RavenDB answers one asked key).</summary>
        public override bool IsExpectedStatus(int status) => status == 404;

        public override async Task<CompareExchangeValue<T>?> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
            (int)response.StatusCode == 404 ? null
                : CompareExchangeJson.Values<T>(await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false), conventions).Values.FirstOrDefault();
    }
}

/// <summary><c>GET /databases/{db}/cmpxchg?startsWith=&amp;start=&amp;pageSize=</c>: the values whose key starts with a prefix, by key.</summary>
public sealed class GetCompareExchangeValuesOperation<T>(string startsWith, int start = 0, int pageSize = int.MaxValue) : IMaintenanceOperation<IReadOnlyDictionary<string, CompareExchangeValue<T>>>
{
    /// <inheritdoc />
    public RavenCommand<IReadOnlyDictionary<string, CompareExchangeValue<T>>> GetCommand(DocumentConventions conventions) => new Command(startsWith, start, pageSize, conventions);

    private sealed class Command(string startsWith, int start, int pageSize, DocumentConventions conventions) : RavenCommand<IReadOnlyDictionary<string, CompareExchangeValue<T>>>
    {
        public override HttpRequestMessage CreateRequest(string? database) => new(HttpMethod.Get,
            string.Create(CultureInfo.InvariantCulture, $"{DatabasePath(database)}/cmpxchg?startsWith={Uri.EscapeDataString(startsWith)}&start={start}&pageSize={pageSize}"));

        public override async Task<IReadOnlyDictionary<string, CompareExchangeValue<T>>> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
            CompareExchangeJson.Values<T>(await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false), conventions);
    }
}

/// <summary>The JSON shapes of compare-exchange values: <c>{"Object": value}</c>.</summary>
internal static class CompareExchangeJson
{
    public static JsonObject Wrap<T>(T value, DocumentConventions conventions) =>
        new() { ["Object"] = JsonSerializer.SerializeToNode(value, conventions.JsonSerializerOptions) };

    public static T? Unwrap<T>(JsonNode? wrapped, DocumentConventions conventions) =>
        wrapped is JsonObject o && o["Object"] is { } inner ? inner.Deserialize<T>(conventions.JsonSerializerOptions) : default;

    public static Dictionary<string, CompareExchangeValue<T>> Values<T>(JsonObject json, DocumentConventions conventions)
    {
        var result = new Dictionary<string, CompareExchangeValue<T>>(StringComparer.OrdinalIgnoreCase);
        foreach (var n in json["Results"] as JsonArray ?? [])
            if (n is JsonObject o && (string?)o["Key"] is { } key)
                result[key] = new CompareExchangeValue<T>(key, (long?)o["Index"] ?? 0, Unwrap<T>(o["Value"], conventions));
        return result;
    }

    internal sealed class ResultCommand<T>(HttpMethod method, string key, long index, JsonObject? body, DocumentConventions conventions) : RavenCommand<CompareExchangeResult<T>>
    {
        public override HttpRequestMessage CreateRequest(string? database)
        {
            var request = new HttpRequestMessage(method, string.Create(CultureInfo.InvariantCulture, $"{DatabasePath(database)}/cmpxchg?key={Uri.EscapeDataString(key)}&index={index}"));
            if (body != null)
                request.Content = JsonContent(body);
            return request;
        }

        public override async Task<CompareExchangeResult<T>> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
            return new CompareExchangeResult<T>((bool?)json["Successful"] ?? false, (long?)json["Index"] ?? 0, Unwrap<T>(json["Value"], conventions));
        }
    }
}
