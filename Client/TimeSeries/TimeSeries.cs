using System.Globalization;
using System.Text;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;
using RavenLite.Client.Operations;

namespace RavenLite.Client.TimeSeries;

/// <summary>One time-series entry.</summary>
public sealed record TimeSeriesEntry(DateTime Timestamp, double[] Values, string? Tag)
{
    /// <summary>The first value.</summary>
    public double Value => Values[0];
}

/// <summary>
/// One series of a document in a session (<c>session.TimeSeriesFor(id, name)</c>): appends, increments (for
/// <c>INC:</c> series) and deletes are saved with SaveChangesAsync, in its transaction; reads are one request.
/// </summary>
public interface ISessionDocumentTimeSeries
{
    /// <summary>Adds an entry (replacing one at the same time).</summary>
    void Append(DateTime timestamp, double value, string? tag = null);

    /// <summary>Adds an entry with several values.</summary>
    void Append(DateTime timestamp, IEnumerable<double> values, string? tag = null);

    /// <summary>Adds to the values at a time (incremental series, named <c>INC:...</c>).</summary>
    void Increment(DateTime timestamp, double delta = 1);

    /// <summary>Removes the entries in [first, last] (null: open end).</summary>
    void Delete(DateTime? first = null, DateTime? last = null);

    /// <summary>The entries in [first, last], skipping <paramref name="start"/>; empty when the series does not exist.</summary>
    Task<IReadOnlyList<TimeSeriesEntry>> GetAsync(DateTime? first = null, DateTime? last = null, int start = 0, int pageSize = int.MaxValue, CancellationToken cancellationToken = default);
}

/// <summary><c>GET /databases/{db}/timeseries?docId=&amp;name=&amp;from=&amp;to=</c>: a range of a series (empty when missing).</summary>
public sealed class GetTimeSeriesOperation(string documentId, string name, DateTime? from = null, DateTime? to = null, int start = 0, int pageSize = int.MaxValue)
    : IMaintenanceOperation<IReadOnlyList<TimeSeriesEntry>>
{
    /// <inheritdoc />
    public RavenCommand<IReadOnlyList<TimeSeriesEntry>> GetCommand(DocumentConventions conventions) => new Command(documentId, name, from, to, start, pageSize);

    internal sealed class Command(string documentId, string name, DateTime? from, DateTime? to, int start, int pageSize) : RavenCommand<IReadOnlyList<TimeSeriesEntry>>
    {
        public override bool IsExpectedStatus(int status) => status == 404;

        public override HttpRequestMessage CreateRequest(string? database)
        {
            var url = new StringBuilder(DatabasePath(database)).Append("/timeseries?docId=").Append(Uri.EscapeDataString(documentId))
                .Append("&name=").Append(Uri.EscapeDataString(name));
            if (from is { } f)
                url.Append("&from=").Append(Uri.EscapeDataString(f.ToUniversalTime().ToString("o", CultureInfo.InvariantCulture)));
            if (to is { } t)
                url.Append("&to=").Append(Uri.EscapeDataString(t.ToUniversalTime().ToString("o", CultureInfo.InvariantCulture)));
            url.Append(CultureInfo.InvariantCulture, $"&start={start}");
            if (pageSize != int.MaxValue)
                url.Append(CultureInfo.InvariantCulture, $"&pageSize={pageSize}");
            return new HttpRequestMessage(HttpMethod.Get, url.ToString());
        }

        public override async Task<IReadOnlyList<TimeSeriesEntry>> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            ArgumentNullException.ThrowIfNull(response);
            if ((int)response.StatusCode == 404)
                return [];
            var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
            return (json["Entries"] as JsonArray ?? []).OfType<JsonObject>().Select(e => new TimeSeriesEntry(
                DateTime.Parse((string)e["Timestamp"]!, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal),
                (e["Values"] as JsonArray ?? []).Select(v => (double)v!).ToArray(), (string?)e["Tag"])).ToList();
        }
    }
}

/// <summary>The JSON of a session's pending changes to one series.</summary>
internal sealed class PendingTimeSeries(string name)
{
    private readonly SortedDictionary<DateTime, JsonObject> _appends = [];
    private readonly List<JsonObject> _deletes = [];
    private readonly SortedDictionary<DateTime, double> _increments = [];

    public string Name { get; } = name;

    private static string Time(DateTime t) => t.ToUniversalTime().ToString("o", CultureInfo.InvariantCulture);

    public void Append(DateTime t, IEnumerable<double> values, string? tag) =>
        _appends[t.ToUniversalTime()] = new JsonObject { ["Timestamp"] = Time(t), ["Values"] = new JsonArray(values.Select(v => (JsonNode?)v).ToArray()), ["Tag"] = tag };

    public void Increment(DateTime t, double delta) =>
        _increments[t.ToUniversalTime()] = _increments.GetValueOrDefault(t.ToUniversalTime()) + delta;

    public void Delete(DateTime? from, DateTime? to) =>
        _deletes.Add(new JsonObject { ["From"] = from is { } f ? Time(f) : null, ["To"] = to is { } t ? Time(t) : null });

    public JsonObject ToJson() => new()
    {
        [nameof(Name)] = Name,
        ["Appends"] = new JsonArray(_appends.Values.Select(a => (JsonNode?)a.DeepClone()).ToArray()),
        ["Deletes"] = new JsonArray(_deletes.Select(d => (JsonNode?)d.DeepClone()).ToArray()),
        ["Increments"] = new JsonArray(_increments.Select(i => (JsonNode?)new JsonObject { ["Timestamp"] = Time(i.Key), ["Values"] = new JsonArray(i.Value) }).ToArray()),
    };
}

/// <summary>A rollup policy: entries aggregated per <see cref="Aggregation"/> into <c>{series}@{Name}</c>, kept for <see cref="Retention"/> (null: forever).</summary>
public sealed record TimeSeriesPolicy(string Name, TimeSpan Aggregation, TimeSpan? Retention = null);

/// <summary>
/// <c>POST /databases/{db}/admin/timeseries/config</c>: per collection, rollup policies and how long raw entries are kept
/// (null: forever), and how often the policies run.
/// </summary>
public sealed class ConfigureTimeSeriesOperation(IReadOnlyDictionary<string, (IReadOnlyList<TimeSeriesPolicy> Policies, TimeSpan? RawRetention)> collections, TimeSpan policyCheckFrequency)
    : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) => new Command(collections, policyCheckFrequency);

    private static JsonObject? Time(TimeSpan? t) => t is { } v ? new JsonObject { ["Value"] = (long)v.TotalSeconds, ["Unit"] = "Second" } : null;

    private sealed class Command(IReadOnlyDictionary<string, (IReadOnlyList<TimeSeriesPolicy> Policies, TimeSpan? RawRetention)> collections, TimeSpan frequency) : RavenCommand<long>
    {
        public override HttpRequestMessage CreateRequest(string? database)
        {
            var body = new JsonObject();
            var cs = new JsonObject();
            foreach (var (name, (policies, raw)) in collections)
                cs[name] = new JsonObject
                {
                    ["Disabled"] = false,
                    ["Policies"] = new JsonArray(policies.Select(p => (JsonNode?)new JsonObject { ["Name"] = p.Name, ["AggregationTime"] = Time(p.Aggregation), ["RetentionTime"] = Time(p.Retention) }).ToArray()),
                    ["RawPolicy"] = new JsonObject { ["Name"] = "rawpolicy", ["RetentionTime"] = Time(raw) },
                };
            body["Collections"] = cs;
            body["PolicyCheckFrequency"] = frequency.ToString("c", CultureInfo.InvariantCulture);
            return new HttpRequestMessage(HttpMethod.Post, DatabasePath(database) + "/admin/timeseries/config") { Content = JsonContent(body) };
        }

        public override async Task<long> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
            (long?)(await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false))["RaftCommandIndex"] ?? 0;
    }
}
