using System.Globalization;
using System.Text.Json;
using RavenLite.Server.CompareExchange;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.TimeSeries;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// The time series (<c>&amp;timeseries=name&amp;from=&amp;to=</c>, repeated) and compare-exchange values (<c>&amp;cmpxchg=key</c>)
/// a load includes: written as <c>"TimeSeriesIncludes":{"id":{"name":[{"From","To","Entries","TotalResults"}]}}</c> and
/// <c>"CompareExchangeValueIncludes":{"key":{"Key","Index","Value","ChangeVector"}}</c>, and folded into the answer's ETag
/// (they change without the documents' change vectors moving).
/// </summary>
internal sealed class ExtraIncludes
{
    private readonly List<(string Name, long From, long To)> _ranges = [];
    private readonly List<string> _keys = [];
    private readonly Dictionary<string, List<(string Name, long From, long To, List<TimeSeriesPoint> Entries)>> _series = new(StringComparer.OrdinalIgnoreCase);
    private readonly Dictionary<string, CompareExchangeStore.Entry?> _values = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>Includes of time-series ranges (a query's <c>include timeseries(..)</c>).</summary>
    public static ExtraIncludes ForRanges(IEnumerable<(string Name, long From, long To)> ranges)
    {
        var result = new ExtraIncludes();
        result._ranges.AddRange(ranges);
        return result;
    }

    /// <summary>Includes the compare-exchange value under <paramref name="key"/> (a query's <c>include cmpxchg(..)</c>).</summary>
    public void AddCompareExchange(Transaction tx, string key)
    {
        if (_keys.Count == 0 || !_keys.Contains(key, StringComparer.OrdinalIgnoreCase))
            _keys.Add(key);
        if (!_values.ContainsKey(key))
            _values[key] = CompareExchangeStore.Get(tx, key);
    }

    /// <summary>The includes a request names, or null when it names none.</summary>
    public static ExtraIncludes? Parse(HttpRequest request)
    {
        var names = request.Query["timeseries"];
        var keys = request.Query["cmpxchg"];
        if (names.Count == 0 && keys.Count == 0)
            return null;
        var froms = request.Query["from"];
        var tos = request.Query["to"];
        if (froms.Count != names.Count || tos.Count != names.Count)
            throw ApiException.BadRequest("Each included time series needs its from and to (either may be empty).");
        var result = new ExtraIncludes();
        for (int i = 0; i < names.Count; i++)
            result._ranges.Add((names[i] ?? throw ApiException.BadRequest("An included time series needs a name."), Time(froms[i], 0), Time(tos[i], long.MaxValue)));
        result._keys.AddRange(keys.Where(k => !string.IsNullOrEmpty(k)).Select(k => k!));
        return result;
    }

    private static long Time(string? s, long fallback) => string.IsNullOrEmpty(s) ? fallback
        : DateTime.TryParse(s, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var t) ? TimeSeriesPoint.ToMilliseconds(t)
        : throw ApiException.BadRequest($"'{s}' is not a date (ISO 8601).");

    /// <summary>Reads what is included for one loaded document, and (once) the compare-exchange values.</summary>
    public void Add(Transaction tx, DocumentsStorage documents, StoredDocument doc)
    {
        if (_ranges.Count > 0 && !_series.ContainsKey(doc.Id))
        {
            var key = documents.KeyOf(doc.Id);
            _series[doc.Id] = _ranges.Select(r => (r.Name, r.From, r.To, TimeSeriesStore.Read(tx, key, r.Name, r.From, r.To).ToList())).ToList();
        }
        foreach (string k in _keys)
            if (!_values.ContainsKey(k))
                _values[k] = CompareExchangeStore.Get(tx, k);
    }

    /// <summary>Adds what the answer's ETag must change with.</summary>
    public void AddTagParts(List<string?> parts)
    {
        foreach (var (id, ranges) in _series)
            foreach (var (name, _, _, entries) in ranges)
            {
                long digest = 0;
                foreach (var e in entries)
                    foreach (double v in e.Values)
                        digest = unchecked(digest * 31 + BitConverter.DoubleToInt64Bits(v) + e.Milliseconds);
                parts.Add(string.Create(CultureInfo.InvariantCulture, $"{id}\nts:{name}:{entries.Count}:{digest}"));
            }
        foreach (var (k, v) in _values)
            parts.Add(string.Create(CultureInfo.InvariantCulture, $"cmpxchg:{k}:{v?.Index}"));
    }

    /// <summary>Writes the two include sections (only those asked for).</summary>
    public void Write(Utf8JsonWriter w)
    {
        if (_ranges.Count > 0)
        {
            w.WriteStartObject("TimeSeriesIncludes"u8);
            foreach (var (id, ranges) in _series)
            {
                w.WriteStartObject(id);
                foreach (var group in ranges.GroupBy(r => r.Name, StringComparer.OrdinalIgnoreCase))
                {
                    w.WriteStartArray(group.Key);
                    foreach (var (_, from, to, entries) in group)
                        TimeSeriesEndpoints.WriteRange(w, from, to, entries, entries.Count, TimeSeriesEndpoints.IsRollup(group.Key));
                    w.WriteEndArray();
                }
                w.WriteEndObject();
            }
            w.WriteEndObject();
        }
        if (_keys.Count > 0)
        {
            w.WriteStartObject("CompareExchangeValueIncludes"u8);
            foreach (var (k, v) in _values)
            {
                if (v == null)
                    continue;
                w.WritePropertyName(k);
                CompareExchangeStore.WriteEntry(w, v);
            }
            w.WriteEndObject();
        }
    }
}
