namespace RavenLite.Server.Queries;

/// <summary>
/// <c>include timings()</c>: where a query's time went, as RavenDB's <c>Timings</c> tree
/// <c>{DurationInMs, Timings: {Query: {DurationInMs, Timings: {Staleness, Lucene}}, Sort, Projection, Includes, ..}}</c>
/// (milliseconds, fractional). Query covers finding and checking the matches; Lucene (inside it) the index
/// lookups of the where clause; Staleness comparing the index's position with the database. One instance per
/// query; not thread-safe.
/// </summary>
internal sealed class QueryTimings
{
    private static readonly string[] Inner = ["Staleness", "Lucene"];

    private readonly long _start = Stopwatch.GetTimestamp();
    private readonly Dictionary<string, long> _ticks = new(StringComparer.Ordinal);

    /// <summary>Adds the time since <paramref name="since"/> (a <see cref="Stopwatch.GetTimestamp"/>) to a phase.</summary>
    public void Add(string phase, long since) => _ticks[phase] = _ticks.GetValueOrDefault(phase) + (Stopwatch.GetTimestamp() - since);

    /// <summary>Writes the <c>Timings</c> property (the total is measured now).</summary>
    public void Write(Utf8JsonWriter w)
    {
        static double Ms(long ticks) => Math.Round(ticks * 1000.0 / Stopwatch.Frequency, 3);
        w.WriteStartObject("Timings");
        w.WriteNumber("DurationInMs", Ms(Stopwatch.GetTimestamp() - _start));
        w.WriteStartObject("Timings");
        foreach (var (phase, ticks) in _ticks)
        {
            if (Inner.Contains(phase))
                continue;
            w.WriteStartObject(phase);
            w.WriteNumber("DurationInMs", Ms(ticks));
            if (phase == "Query")
            {
                w.WriteStartObject("Timings");
                foreach (string inner in Inner)
                {
                    if (!_ticks.TryGetValue(inner, out long t))
                        continue;
                    w.WriteStartObject(inner);
                    w.WriteNumber("DurationInMs", Ms(t));
                    w.WriteEndObject();
                }
                w.WriteEndObject();
            }
            w.WriteEndObject();
        }
        w.WriteEndObject();
        w.WriteEndObject();
    }
}
