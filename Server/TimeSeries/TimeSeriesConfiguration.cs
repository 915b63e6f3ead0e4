namespace RavenLite.Server.TimeSeries;

/// <summary>A span in RavenDB's <c>TimeValue</c> form: seconds, months, or none (unbounded).</summary>
public readonly record struct TimeValue(long Value, string Unit)
{
    /// <summary>Unbounded (RavenDB's <c>MAX_VALUE</c>: unit None).</summary>
    public bool IsUnbounded => Unit == "None";

    /// <summary><paramref name="from"/> moved back by this span.</summary>
    public DateTime Before(DateTime from) => Unit switch
    {
        "Second" => from.AddSeconds(-Value),
        "Month" => from.AddMonths((int)-Math.Min(Value, 12 * 9000)),
        _ => DateTime.MinValue,
    };

    /// <summary>
    /// Orders two bounded time values as RavenDB does: months against seconds compare when every month length (28 to 31
    /// days) gives the same answer; otherwise a 400 ("Unable to compare ..").
    /// </summary>
    public static int Compare(TimeValue a, TimeValue b)
    {
        if (a.Unit == b.Unit)
            return a.Value.CompareTo(b.Value);
        bool aMonths = a.Unit == "Month";
        var (months, seconds) = aMonths ? (a.Value, b.Value) : (b.Value, a.Value);
        int monthsFirst = seconds < months * 28 * 86_400L ? 1 : seconds > months * 31 * 86_400L ? -1
            : throw new BadRequestException($"Unable to compare {a} with {b}, since a month might have different number of days.");
        return aMonths ? monthsFirst : -monthsFirst;
    }

    /// <summary>As RavenDB writes a time value in messages: <c>3 days</c>, <c>1 month</c>, <c>90 seconds</c>.</summary>
    public override string ToString()
    {
        if (IsUnbounded)
            return "unlimited";
        if (Unit == "Month")
            return Value == 1 ? "1 month" : $"{Value} months";
        foreach (var (seconds, unit) in new[] { (86_400L, "day"), (3_600L, "hour"), (60L, "minute") })
            if (Value % seconds == 0)
                return Value == seconds ? $"1 {unit}" : $"{Value / seconds} {unit}s";
        return Value == 1 ? "1 second" : $"{Value} seconds";
    }

    /// <summary>The span in ms (months as 30 days), for bucketing.</summary>
    public long Milliseconds => Unit == "Month" ? Value * 30L * 86_400_000 : Value * 1000;

    /// <summary>Parses <c>{"Value":n,"Unit":"Second|Month|None"}</c> (null: unbounded).</summary>
    public static TimeValue Parse(JsonElement e, string where)
    {
        if (e.ValueKind is JsonValueKind.Undefined or JsonValueKind.Null)
            return new TimeValue(int.MaxValue, "None");
        if (e.ValueKind != JsonValueKind.Object || !e.TryGetProperty(nameof(Value), out var v) || !v.TryGetInt64(out long value)
            || !e.TryGetProperty(nameof(Unit), out var u) || u.GetString() is not ("Second" or "Month" or "None") || (value <= 0 && u.GetString() != "None"))
            throw new BadRequestException($"{where} must be a time value {{\"Value\": n > 0, \"Unit\": \"Second\" | \"Month\"}}.");
        return new TimeValue(value, u.GetString()!);
    }

    /// <summary>Writes it back.</summary>
    public void Write(Utf8JsonWriter w)
    {
        w.WriteStartObject();
        w.WriteNumber(nameof(Value), Value);
        w.WriteString(nameof(Unit), Unit);
        w.WriteEndObject();
    }
}

/// <summary>A rollup policy: entries aggregated per <see cref="AggregationTime"/> into series <c>{name}@{Name}</c>, kept for <see cref="RetentionTime"/>.</summary>
public sealed record TimeSeriesPolicy(string Name, TimeValue AggregationTime, TimeValue RetentionTime);

/// <summary>One collection's time-series configuration: its rollup policies and how long raw entries are kept.</summary>
public sealed record TimeSeriesCollectionConfiguration(bool Disabled, List<TimeSeriesPolicy> Policies, TimeValue RawRetention);

/// <summary>
/// A database's time-series configuration (<c>POST /admin/timeseries/config</c>, RavenDB's shape): per collection, rollup
/// policies and the raw policy's retention; how often the policies run; and value names per collection and series
/// (for typed clients). Stored as its JSON in <c>State/TimeSeriesConfiguration</c>.
/// </summary>
public sealed class TimeSeriesConfiguration
{
    /// <summary>The raw policy's name.</summary>
    public const string RawPolicyName = "rawpolicy";

    /// <summary>Per collection (names ignore case).</summary>
    public Dictionary<string, TimeSeriesCollectionConfiguration> Collections { get; } = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>How often rollups and retention run (default 10 minutes).</summary>
    public TimeSpan PolicyCheckFrequency { get; set; } = TimeSpan.FromMinutes(10);

    /// <summary>Value names: collection → series → names.</summary>
    public Dictionary<string, Dictionary<string, string[]>> NamedValues { get; } = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>Parses a configuration; 400 naming what is wrong.</summary>
    public static TimeSeriesConfiguration Parse(JsonElement root)
    {
        if (root.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("A time-series configuration is an object {\"Collections\":{..},\"PolicyCheckFrequency\":..,\"NamedValues\":{..}}.");
        var c = new TimeSeriesConfiguration();
        if (root.TryGetProperty(nameof(Collections), out var cs) && cs.ValueKind == JsonValueKind.Object)
            foreach (var p in cs.EnumerateObject())
                c.Collections[p.Name] = ParseCollection(p.Value, $"Collections.{p.Name}");
        if (root.TryGetProperty(nameof(PolicyCheckFrequency), out var f) && f.ValueKind == JsonValueKind.String)
            c.PolicyCheckFrequency = TimeSpan.TryParse(f.GetString(), CultureInfo.InvariantCulture, out var t) && t > TimeSpan.Zero ? t
                : throw new BadRequestException("PolicyCheckFrequency must be a positive time span such as \"00:10:00\".");
        if (root.TryGetProperty(nameof(NamedValues), out var nv) && nv.ValueKind == JsonValueKind.Object)
            foreach (var collection in nv.EnumerateObject())
            {
                var series = new Dictionary<string, string[]>(StringComparer.OrdinalIgnoreCase);
                foreach (var s in collection.Value.EnumerateObject())
                    series[s.Name] = s.Value.ValueKind == JsonValueKind.Array ? s.Value.EnumerateArray().Select(n => n.GetString() ?? "").ToArray()
                        : throw new BadRequestException($"NamedValues.{collection.Name}.{s.Name} must be an array of names.");
                c.NamedValues[collection.Name] = series;
            }
        return c;
    }

    private static TimeSeriesCollectionConfiguration ParseCollection(JsonElement e, string where)
    {
        if (e.ValueKind != JsonValueKind.Object)
            throw new BadRequestException($"{where} must be an object {{\"Disabled\",\"Policies\",\"RawPolicy\"}}.");
        var policies = new List<TimeSeriesPolicy>();
        if (e.TryGetProperty("Policies", out var ps) && ps.ValueKind == JsonValueKind.Array)
            foreach (var p in ps.EnumerateArray())
                policies.Add(ParsePolicy(p, $"{where}.Policies"));
        var raw = e.TryGetProperty("RawPolicy", out var r) && r.ValueKind == JsonValueKind.Object
            ? TimeValue.Parse(r.TryGetProperty("RetentionTime", out var rt) ? rt : default, $"{where}.RawPolicy.RetentionTime")
            : new TimeValue(int.MaxValue, "None");
        // Policies apply from the finest period up (each rolls up the one before it), whatever order they were given in.
        policies.Sort((a, b) => a.AggregationTime.Milliseconds.CompareTo(b.AggregationTime.Milliseconds));
        return new TimeSeriesCollectionConfiguration(e.TryGetProperty("Disabled", out var d) && d.ValueKind == JsonValueKind.True, policies, raw);
    }

    /// <summary>Parses one policy <c>{"Name","AggregationTime","RetentionTime"}</c>.</summary>
    public static TimeSeriesPolicy ParsePolicy(JsonElement p, string where)
    {
        string name = p.TryGetProperty("Name", out var n) && n.ValueKind == JsonValueKind.String && n.GetString() is { Length: > 0 } s ? s
            : throw new BadRequestException($"{where}: a policy needs a Name.");
        if (name.Contains('@', StringComparison.Ordinal) || name.Any(char.IsControl))
            throw new BadRequestException($"{where}: policy name '{name}' may not contain '@' or control characters.");
        var aggregation = TimeValue.Parse(p.TryGetProperty("AggregationTime", out var a) ? a : default, $"{where}.{name}.AggregationTime");
        if (!name.Equals(RawPolicyName, StringComparison.OrdinalIgnoreCase) && aggregation.IsUnbounded)
            throw new BadRequestException($"{where}: policy '{name}' needs an AggregationTime.");
        var retention = TimeValue.Parse(p.TryGetProperty("RetentionTime", out var t) ? t : default, $"{where}.{name}.RetentionTime");
        // As RavenDB's TimeValue comparison: months and seconds do not compare (a month has no fixed length), and a rollup
        // kept for less than one of its periods would be deleted before it is complete.
        if (!aggregation.IsUnbounded && !retention.IsUnbounded && TimeValue.Compare(retention, aggregation) < 0)
            throw new BadRequestException($"Retention time of policy '{name}' ({retention}) must be greater than its aggregation time ({aggregation}).");
        return new TimeSeriesPolicy(name, aggregation, retention);
    }

    /// <summary>Writes it as RavenDB's JSON.</summary>
    public void Write(Utf8JsonWriter w)
    {
        w.WriteStartObject();
        w.WriteStartObject(nameof(Collections));
        foreach (var (name, c) in Collections)
        {
            w.WriteStartObject(name);
            w.WriteBoolean("Disabled", c.Disabled);
            w.WriteStartArray("Policies");
            foreach (var p in c.Policies)
                WritePolicy(w, p);
            w.WriteEndArray();
            w.WritePropertyName("RawPolicy");
            WritePolicy(w, new TimeSeriesPolicy(RawPolicyName, new TimeValue(int.MaxValue, "None"), c.RawRetention));
            w.WriteEndObject();
        }
        w.WriteEndObject();
        w.WriteString(nameof(PolicyCheckFrequency), PolicyCheckFrequency.ToString("c", CultureInfo.InvariantCulture));
        w.WriteStartObject(nameof(NamedValues));
        foreach (var (collection, series) in NamedValues)
        {
            w.WriteStartObject(collection);
            foreach (var (name, values) in series)
            {
                w.WriteStartArray(name);
                foreach (string v in values)
                    w.WriteStringValue(v);
                w.WriteEndArray();
            }
            w.WriteEndObject();
        }
        w.WriteEndObject();
        w.WriteEndObject();
    }

    private static void WritePolicy(Utf8JsonWriter w, TimeSeriesPolicy p)
    {
        w.WriteStartObject();
        w.WriteString("Name", p.Name);
        w.WritePropertyName("AggregationTime");
        p.AggregationTime.Write(w);
        w.WritePropertyName("RetentionTime");
        p.RetentionTime.Write(w);
        w.WriteEndObject();
    }
}
