using System.Text.Json;
using System.Text.Json.Nodes;
using RavenLite.Client.CompareExchange;

namespace RavenLite.Client.Session;

/// <summary>Cluster-wide transactions: the compare-exchange values saved with the session.</summary>
internal sealed partial class AsyncDocumentSession
{
    public IClusterTransactionOperations ClusterTransaction => TransactionMode == TransactionMode.ClusterWide
        ? _cluster ??= new ClusterTransactionOperations(this)
        : throw new InvalidOperationException("Compare-exchange values in a session need a cluster-wide session: OpenAsyncSession(new SessionOptions { TransactionMode = TransactionMode.ClusterWide }).");

    private ClusterTransactionOperations? _cluster;

    /// <summary>The compare-exchange values a cluster-wide session tracks: created, read (and maybe changed) and deleted.</summary>
    private sealed class ClusterTransactionOperations(AsyncDocumentSession session) : IClusterTransactionOperations
    {
        private sealed class Tracked(string key, long index, object? value, Type type, string? original)
        {
            public string Key { get; } = key;
            public long Index { get; set; } = index;
            public object? Value { get; } = value; // the CompareExchangeValue<T>
            public Type Type { get; } = type;
            public string? Original { get; set; } = original; // serialized value as read; null for a new one
            public bool Deleted { get; set; }
        }

        private readonly Dictionary<string, Tracked> _values = new(StringComparer.OrdinalIgnoreCase);

        private DocumentConventions Conventions => session.Conventions;

        public CompareExchangeValue<T> CreateCompareExchangeValue<T>(string key, T value)
        {
            ArgumentException.ThrowIfNullOrEmpty(key);
            if (_values.ContainsKey(key))
                throw new InvalidOperationException($"The session already tracks compare-exchange value '{key}'.");
            var v = new CompareExchangeValue<T>(key, 0, value);
            _values[key] = new Tracked(key, 0, v, typeof(T), null);
            return v;
        }

        public async Task<CompareExchangeValue<T>?> GetCompareExchangeValueAsync<T>(string key, CancellationToken cancellationToken = default)
        {
            ArgumentException.ThrowIfNullOrEmpty(key);
            if (_values.TryGetValue(key, out var tracked))
                return tracked.Deleted ? null : (CompareExchangeValue<T>?)tracked.Value;
            session.ThrowIfDisposed();
            session.CountRequest();
            var value = await session.Store.Executor.ExecuteAsync(new GetCompareExchangeValueOperation<T>(key).GetCommand(Conventions), session.Database, cancellationToken).ConfigureAwait(false);
            if (value != null)
                _values[key] = new Tracked(value.Key, value.Index, value, typeof(T), Serialize(value.Value, typeof(T)));
            return value;
        }

        public void DeleteCompareExchangeValue(string key, long index)
        {
            ArgumentException.ThrowIfNullOrEmpty(key);
            if (!_values.TryGetValue(key, out var tracked))
                _values[key] = tracked = new Tracked(key, index, null, typeof(object), null);
            tracked.Index = index;
            tracked.Deleted = true;
        }

        private string Serialize(object? value, Type type) => JsonSerializer.Serialize(value, type, Conventions.JsonSerializerOptions);

        private static object? ValueOf(Tracked t) => t.Value?.GetType().GetProperty("Value")!.GetValue(t.Value);

        public bool HasChanges => _values.Values.Any(t => t.Deleted || t.Original == null || Serialize(ValueOf(t), t.Type) != t.Original);

        /// <summary>The batch commands for every new, changed and deleted value.</summary>
        public List<JsonObject> Commands()
        {
            var list = new List<JsonObject>();
            foreach (var t in _values.Values)
            {
                if (t.Deleted)
                {
                    list.Add(new JsonObject { ["Id"] = t.Key, ["Index"] = t.Index, ["Type"] = "CompareExchangeDELETE" });
                    continue;
                }
                string now = Serialize(ValueOf(t), t.Type);
                if (t.Original != null && now == t.Original)
                    continue;
                list.Add(new JsonObject
                {
                    ["Id"] = t.Key,
                    ["Index"] = t.Index,
                    ["Document"] = new JsonObject { ["Object"] = JsonNode.Parse(now) },
                    ["Type"] = "CompareExchangePUT",
                });
            }
            return list;
        }

        /// <summary>After a successful save: values take their new index, deleted ones are forgotten.</summary>
        public void Saved(JsonArray results)
        {
            foreach (var r in results.OfType<JsonObject>())
            {
                string? type = (string?)r["Type"];
                if (type is not ("CompareExchangePUT" or "CompareExchangeDELETE") || (string?)r["Key"] is not { } key || !_values.TryGetValue(key, out var t))
                    continue;
                if (t.Deleted)
                {
                    _values.Remove(key);
                    continue;
                }
                t.Index = (long?)r["Index"] ?? t.Index;
                t.Value?.GetType().GetProperty("Index")!.SetValue(t.Value, t.Index);
                t.Original = Serialize(ValueOf(t), t.Type);
            }
        }
    }
}
