using Microsoft.Extensions.Primitives;
using RavenLite.Server.CompareExchange;
using RavenLite.Server.Documents;
using RavenLite.Server.TimeSeries;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Queries;

/// <summary>
/// The time series (<c>&amp;timeseries=name&amp;from=&amp;to=</c>, repeated; or the last n units / entries:
/// <c>timeseriestime</c>, <c>timeseriescount</c>) and compare-exchange values (<c>&amp;cmpxchg=path</c>: the keys a path of the loaded documents holds)
/// a load includes: written as <c>"TimeSeriesIncludes":{"id":{"name":[{"From","To","Entries","TotalResults"}]}}</c> and
/// <c>"CompareExchangeValueIncludes":{"key":{"Key","Index","Value","ChangeVector"}}</c>, and folded into the answer's ETag
/// (they change without the documents' change vectors moving).
/// </summary>
public sealed class ExtraIncludes
{
    private readonly List<(string Name, long From, long To, int? Last)> _ranges = []; // Last: the last n entries instead of a time range
    private readonly List<string> _keys = [];
    private readonly List<string> _paths = []; // a load's cmpxchg=: document paths holding the keys
    private readonly Dictionary<string, List<(string Name, long From, long To, List<TimeSeriesPoint> Entries)>> _series = new(StringComparer.OrdinalIgnoreCase);
    private readonly Dictionary<string, CompareExchangeStore.Entry?> _values = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>Includes of time-series ranges (a query's <c>include timeseries(..)</c>; <c>Last</c>: the last n entries).</summary>
    public static ExtraIncludes ForRanges(IEnumerable<(string Name, long From, long To, int? Last)> ranges)
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

    /// <summary>The includes a load's query-string parameters (<paramref name="query"/> by name) name, or null when it names none.</summary>
    public static ExtraIncludes? Parse(Func<string, StringValues> query)
    {
        var names = query("timeseries");
        var byTime = query("timeseriestime");
        var byCount = query("timeseriescount");
        var keys = query("cmpxchg");
        if (names.Count == 0 && byTime.Count == 0 && byCount.Count == 0 && keys.Count == 0)
            return null;
        var froms = query("from");
        var tos = query("to");
        if (froms.Count != names.Count || tos.Count != names.Count)
            throw new BadRequestException("Each included time series needs its from and to (either may be empty).");
        var result = new ExtraIncludes();
        for (int i = 0; i < names.Count; i++)
            result._ranges.Add((names[i] ?? throw new BadRequestException("An included time series needs a name."), Time(froms[i], 0), Time(tos[i], long.MaxValue), null));
        // last(n, unit) and last(n): timeseriestime=&timeType=Last&timeValue=&timeUnit=, timeseriescount=&countType=Last&countValue=.
        var timeValues = query("timeValue");
        var timeUnits = query("timeUnit");
        if (timeValues.Count != byTime.Count || timeUnits.Count != byTime.Count)
            throw new BadRequestException("Each timeseriestime include needs its timeValue and timeUnit.");
        for (int i = 0; i < byTime.Count; i++)
            result._ranges.Add((byTime[i] ?? "", LastSince(timeValues[i], timeUnits[i]), long.MaxValue, null));
        var counts = query("countValue");
        if (counts.Count != byCount.Count)
            throw new BadRequestException("Each timeseriescount include needs its countValue.");
        for (int i = 0; i < byCount.Count; i++)
            result._ranges.Add((byCount[i] ?? "", 0, long.MaxValue,
                int.TryParse(counts[i], NumberStyles.None, CultureInfo.InvariantCulture, out int n) && n > 0 ? n : throw new BadRequestException($"countValue '{counts[i]}' is not a positive count.")));
        // RavenDB's includeCompareExchangeValue(path): the value names a path of the loaded documents, whose values are the keys.
        result._paths.AddRange(keys.Where(k => !string.IsNullOrEmpty(k)).Select(k => k!));
        return result;
    }

    /// <summary>The start of the last <paramref name="value"/> <paramref name="unit"/>s (Second, Minute, Hour, Day, Month) before now, as ms.</summary>
    public static long LastSince(string? value, string? unit)
    {
        if (!long.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out long n) || n <= 0)
            throw new BadRequestException($"'{value}' is not a positive time value.");
        var now = DateTime.UtcNow;
        var since = unit switch
        {
            "Second" => now.AddSeconds(-n),
            "Minute" => now.AddMinutes(-n),
            "Hour" => now.AddHours(-n),
            "Day" => now.AddDays(-n),
            "Month" => now.AddMonths((int)-Math.Min(n, 12_000)),
            _ => throw new BadRequestException($"'{unit}' is not a time unit (Second, Minute, Hour, Day or Month)."),
        };
        return TimeSeriesPoint.ToMilliseconds(since);
    }

    private static long Time(string? s, long fallback) => string.IsNullOrEmpty(s) ? fallback
        : DateTime.TryParse(s, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var t) ? TimeSeriesPoint.ToMilliseconds(t)
        : throw new BadRequestException($"'{s}' is not a date (ISO 8601).");

    /// <summary>Reads what is included for one loaded document, and (once) the compare-exchange values.</summary>
    public void Add(Transaction tx, DocumentsStorage documents, StoredDocument doc)
    {
        if (_ranges.Count > 0 && !_series.ContainsKey(doc.Id))
        {
            var key = documents.KeyOf(doc.Id);
            _series[doc.Id] = _ranges.Select(r =>
            {
                var entries = TimeSeriesStore.Read(tx, key, r.Name, r.From, r.To).ToList();
                if (r.Last is { } last && entries.Count > last)
                    entries = entries[^last..];
                long from = r.Last != null && entries.Count > 0 ? entries[0].Milliseconds : r.From;
                return (r.Name, from, r.To, entries);
            }).ToList();
        }
        if (_paths.Count > 0)
        {
            using var parsed = JsonDocument.Parse(doc.Json);
            var found = new List<string>();
            foreach (string path in _paths)
                IncludePaths.Collect(parsed.RootElement, path, found);
            foreach (string key in found)
                AddCompareExchange(tx, key);
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
                        TimeSeriesEntryJson.WriteRange(w, from, to, entries, entries.Count, TimeSeriesEntryJson.IsRollup(group.Key));
                    w.WriteEndArray();
                }
                w.WriteEndObject();
            }
            w.WriteEndObject();
        }
        if (_keys.Count > 0 || _paths.Count > 0)
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
