using System.Text.RegularExpressions;
using RavenLite.Server.Formatting;

namespace RavenLite.Server.TimeSeries;

/// <summary>
/// A time-series query of RQL's <c>select timeseries(...)</c>: <c>from Name [between A and B | last N unit]
/// [where Tag = 'x' | Tag in (..) | Value op n | Values[i] op n, joined by and/or] [group by period]
/// [select min(), max(), avg(), sum(), count(), first(), last()]</c>. Without group by or select it answers the raw
/// entries (<c>{"Count","Results":[{"Timestamp","Tag","Values","IsRollup"}]}</c>); otherwise one aggregation per period
/// (or one over everything): <c>{"Count","Results":[{"From","To","Count":[..],"Min":[..],...}]}</c>, an aggregate per value position.
/// Dates and numbers may be <c>$parameters</c>. Periods: <c>'1 hour'</c>, <c>1h</c>, <c>'30 minutes'</c>, seconds, days, weeks
/// (milliseconds too), aligned on whole periods since 0001-01-01; <c>'1 month'</c>, quarters and <c>'1 year'</c> follow the
/// calendar (UTC months, aligned on whole numbers of them since 0001-01).
/// </summary>
public sealed partial class TimeSeriesQuery
{
    private readonly List<string> _tokens;
    private int _pos;
    private readonly JsonElement _parameters;

    private TimeSeriesQuery(string text, JsonElement parameters)
    {
        _tokens = Tokens().Matches(text).Select(m => m.Value).ToList();
        _parameters = parameters;
    }

    /// <summary>The series read.</summary>
    public string Name { get; private set; } = "";

    /// <summary>Range start (ms, inclusive).</summary>
    public long From { get; private set; }

    /// <summary>Range end (ms, inclusive).</summary>
    public long To { get; private set; } = long.MaxValue;

    /// <summary>Group period in ms (0: none, or a calendar period: <see cref="Months"/>).</summary>
    public long Period { get; private set; }

    /// <summary>A calendar group period in months (<c>'1 month'</c>, <c>'1 year'</c> is 12), else 0.</summary>
    public int Months { get; private set; }

    private bool Grouped => Period > 0 || Months > 0;

    /// <summary>The aggregations selected (empty: raw entries, unless grouped, which then takes them all).</summary>
    public List<string> Aggregations { get; } = [];

    private Func<TimeSeriesPoint, bool>? _filter;

    [GeneratedRegex(@"'(?:[^'\\]|\\.)*'|""(?:[^""\\]|\\.)*""|\$\w+|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|[A-Za-z_@][\w@:.\-]*|<=|>=|!=|==|[<>=(),\[\]]")]
    private static partial Regex Tokens();

    /// <summary>Parses <paramref name="text"/> (what is inside <c>timeseries(...)</c>); 400 InvalidQuery naming the problem.</summary>
    public static TimeSeriesQuery Parse(string text, JsonElement parameters)
    {
        var q = new TimeSeriesQuery(text, parameters);
        q.ParseQuery();
        return q;
    }

    private string Peek => _pos < _tokens.Count ? _tokens[_pos] : "";

    private string Next() => _pos < _tokens.Count ? _tokens[_pos++] : throw Error("the time-series query ends too early");

    private bool Accept(string word)
    {
        if (!string.Equals(Peek, word, StringComparison.OrdinalIgnoreCase))
            return false;
        _pos++;
        return true;
    }

    private void Expect(string word)
    {
        if (!Accept(word))
            throw Error($"expected '{word}' but found '{Peek}'");
    }

    private static InvalidQueryException Error(string message) => new InvalidQueryException("Invalid time-series query: " + message + ".");

    private void ParseQuery()
    {
        Expect("from");
        Name = Unquote(Next());
        if (Name.Contains('.', StringComparison.Ordinal) && !Name.StartsWith(TimeSeriesOperation.IncrementalPrefix, StringComparison.OrdinalIgnoreCase))
            Name = Name[(Name.IndexOf('.', StringComparison.Ordinal) + 1)..]; // from p.HeartRate: the alias is the document
        while (_pos < _tokens.Count)
        {
            if (Accept("between"))
            {
                From = Time(Next());
                Expect("and");
                To = Time(Next());
            }
            else if (Accept("last") || Accept("first"))
            {
                bool last = string.Equals(_tokens[_pos - 1], "last", StringComparison.OrdinalIgnoreCase);
                long span = PeriodOf(Next() + " " + Next());
                long now = TimeSeriesPoint.ToMilliseconds(DateTime.UtcNow);
                if (!last)
                    throw Error("'first' needs the series' first time; use between");
                From = now - span;
                To = now;
            }
            else if (Accept("where"))
            {
                _filter = Or();
            }
            else if (Accept("group"))
            {
                Expect("by");
                string period = Next();
                if (_pos < _tokens.Count && char.IsDigit(period[0]) && !char.IsLetter(period[^1]) && (IsUnit(Peek) || CalendarMonths(Peek) > 0))
                    period += " " + Next();
                (Period, Months) = GroupPeriodOf(Unquote(period));
            }
            else if (Accept("select"))
            {
                do
                {
                    string fn = Next().ToLowerInvariant();
                    Expect("(");
                    Expect(")");
                    Aggregations.Add(fn switch
                    {
                        "min" => "Min",
                        "max" => "Max",
                        "avg" or "average" or "mean" => "Average",
                        "sum" => "Sum",
                        "count" => "Count",
                        "first" => "First",
                        "last" => "Last",
                        _ => throw Error($"unknown aggregation '{fn}()' (min, max, avg, sum, count, first and last are)"),
                    });
                }
                while (Accept(","));
            }
            else
            {
                throw Error($"unexpected '{Peek}'; expected between, last, where, group by or select");
            }
        }
        if (Grouped && Aggregations.Count == 0)
            Aggregations.AddRange(["First", "Last", "Min", "Max", "Sum", "Count", "Average"]);
    }

    /// <summary>Months in a calendar unit (month: 1, quarter: 3, year: 12), else 0.</summary>
    private static int CalendarMonths(string unit) => unit.ToLowerInvariant().TrimEnd('s') switch
    {
        "mo" or "mon" or "month" => 1,
        "quarter" => 3,
        "y" or "yr" or "year" => 12,
        _ => 0,
    };

    /// <summary>A group-by period: fixed milliseconds, or calendar months (months and years are not fixed lengths).</summary>
    private static (long Ms, int Months) GroupPeriodOf(string text)
    {
        var m = Regex.Match(text.Trim(), @"^(\d+)\s*([A-Za-z]+)$");
        if (m.Success && CalendarMonths(m.Groups[2].Value) is > 0 and var months && int.TryParse(m.Groups[1].Value, NumberStyles.None, CultureInfo.InvariantCulture, out int n) && n > 0)
            return (0, n * months);
        return (PeriodOf(text), 0);
    }

    /// <summary>The period an entry falls in: fixed periods aligned on 0001-01-01, calendar ones on whole months (UTC).</summary>
    private (long Start, long End) PeriodOf(long ms)
    {
        if (Months == 0)
        {
            long start = ms / Period * Period;
            return (start, start + Period);
        }
        var t = new DateTime(ms * TimeSpan.TicksPerMillisecond, DateTimeKind.Utc);
        int index = ((t.Year - 1) * 12 + t.Month - 1) / Months * Months;
        var from = new DateTime(index / 12 + 1, index % 12 + 1, 1, 0, 0, 0, DateTimeKind.Utc);
        return (TimeSeriesPoint.ToMilliseconds(from), TimeSeriesPoint.ToMilliseconds(from.AddMonths(Months)));
    }

    private static bool IsUnit(string s) => UnitMs(s) > 0;

    private static long UnitMs(string unit) => unit.ToLowerInvariant().TrimEnd('s') switch
    {
        "ms" or "millisecond" or "milli" => 1,
        "s" or "sec" or "second" => 1000,
        "m" or "min" or "minute" => 60_000,
        "h" or "hour" => 3_600_000,
        "d" or "day" => 86_400_000,
        "w" or "week" => 604_800_000,
        _ => 0,
    };

    private static long PeriodOf(string text)
    {
        var m = Regex.Match(text.Trim(), @"^(\d+)\s*([A-Za-z]+)$");
        long unit = m.Success ? UnitMs(m.Groups[2].Value) : 0;
        if (unit == 0 || !long.TryParse(m.Groups[1].Value, NumberStyles.None, CultureInfo.InvariantCulture, out long n) || n <= 0)
            throw Error($"'{text}' is not a period (such as '1 hour', 30m, '1 day'; ms, seconds, minutes, hours, days and weeks)");
        return n * unit;
    }

    private static string Unquote(string token) =>
        token.Length >= 2 && (token[0] == '\'' || token[0] == '"') ? token[1..^1].Replace("\\'", "'", StringComparison.Ordinal) : token;

    private JsonElement Value(string token)
    {
        if (token.StartsWith('$'))
            return _parameters.ValueKind == JsonValueKind.Object && _parameters.TryGetProperty(token[1..], out var p) ? p
                : throw Error($"parameter {token} has no value in QueryParameters");
        if (token[0] is '\'' or '"')
            return JsonSerializer.SerializeToElement(Unquote(token));
        return double.TryParse(token, NumberStyles.Float, CultureInfo.InvariantCulture, out double d) ? JsonSerializer.SerializeToElement(d)
            : throw Error($"'{token}' is not a value");
    }

    private long Time(string token)
    {
        var v = Value(token);
        if (v.ValueKind == JsonValueKind.String && DateTime.TryParse(v.GetString(), CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var t))
            return TimeSeriesPoint.ToMilliseconds(t);
        throw Error($"'{token}' is not a date");
    }

    private Func<TimeSeriesPoint, bool> Or()
    {
        var left = And();
        while (Accept("or"))
        {
            var l = left;
            var r = And();
            left = p => l(p) || r(p);
        }
        return left;
    }

    private Func<TimeSeriesPoint, bool> And()
    {
        var left = Condition();
        while (Accept("and"))
        {
            var l = left;
            var r = Condition();
            left = p => l(p) && r(p);
        }
        return left;
    }

    private Func<TimeSeriesPoint, bool> Condition()
    {
        if (Accept("("))
        {
            var inner = Or();
            Expect(")");
            return inner;
        }
        string field = Next();
        if (field.Equals("tag", StringComparison.OrdinalIgnoreCase))
        {
            if (Accept("in"))
            {
                Expect("(");
                var tags = new HashSet<string>(StringComparer.Ordinal);
                do
                    tags.Add(Value(Next()).GetString() ?? "");
                while (Accept(","));
                Expect(")");
                return p => p.Tag != null && tags.Contains(p.Tag);
            }
            string op = Next();
            string tag = Value(Next()).GetString() ?? throw Error("a tag is compared with a string");
            return op switch
            {
                "=" or "==" => p => p.Tag == tag,
                "!=" => p => p.Tag != tag,
                _ => throw Error($"a tag is compared with = or !=, not '{op}'"),
            };
        }
        int index = 0;
        if (field.Equals("values", StringComparison.OrdinalIgnoreCase))
        {
            Expect("[");
            index = int.TryParse(Next(), NumberStyles.None, CultureInfo.InvariantCulture, out int i) ? i : throw Error("Values[..] takes a position");
            Expect("]");
        }
        else if (!field.Equals("value", StringComparison.OrdinalIgnoreCase))
        {
            throw Error($"'{field}' cannot be filtered on (Tag, Value and Values[n] can)");
        }
        string comparison = Next();
        var target = Value(Next());
        double x = target.ValueKind == JsonValueKind.Number ? target.GetDouble() : throw Error("a value is compared with a number");
        Func<double, bool> test = comparison switch
        {
            "=" or "==" => v => v == x,
            "!=" => v => v != x,
            ">" => v => v > x,
            ">=" => v => v >= x,
            "<" => v => v < x,
            "<=" => v => v <= x,
            _ => throw Error($"unknown comparison '{comparison}'"),
        };
        return p => index < p.Values.Length && test(p.Values[index]);
    }

    /// <summary>True when the entry passes the where clause.</summary>
    public bool Matches(TimeSeriesPoint p) => _filter == null || _filter(p);

    /// <summary>
    /// Writes the answer for the entries of one document's series (already within From..To); <paramref name="more"/>
    /// writes further properties into the answer's object (the result's <c>@metadata</c> when it is the result itself).
    /// </summary>
    public void Write(Utf8JsonWriter w, IEnumerable<TimeSeriesPoint> entries, Action<Utf8JsonWriter>? more = null)
    {
        var matched = entries.Where(Matches).ToList();
        w.WriteStartObject();
        w.WriteNumber("Count", matched.Count);
        w.WriteStartArray("Results");
        if (Aggregations.Count == 0)
        {
            foreach (var p in matched)
                TimeSeriesEntryJson.Write(w, p);
        }
        else
        {
            foreach (var group in Grouped ? matched.GroupBy(p => PeriodOf(p.Milliseconds)) : matched.GroupBy(_ => (Start: long.MinValue, End: long.MinValue)))
            {
                var points = group.ToList();
                long start = Grouped ? group.Key.Start : points[0].Milliseconds;
                long end = Grouped ? group.Key.End : points[^1].Milliseconds;
                w.WriteStartObject();
                w.WriteString(nameof(From), JsonDates.FormatDate(new DateTime(start * TimeSpan.TicksPerMillisecond, DateTimeKind.Utc)));
                w.WriteString(nameof(To), JsonDates.FormatDate(new DateTime(end * TimeSpan.TicksPerMillisecond, DateTimeKind.Utc)));
                int width = points.Max(p => p.Values.Length);
                foreach (string agg in Aggregations)
                {
                    w.WriteStartArray(agg);
                    for (int i = 0; i < width; i++)
                    {
                        var column = points.Where(p => i < p.Values.Length).Select(p => p.Values[i]).ToList();
                        double value = agg switch
                        {
                            "Min" => column.Min(),
                            "Max" => column.Max(),
                            "Sum" => column.Sum(),
                            "Count" => column.Count,
                            "First" => column[0],
                            "Last" => column[^1],
                            _ => column.Average(),
                        };
                        w.WriteNumberValue(value);
                    }
                    w.WriteEndArray();
                }
                w.WriteEndObject();
            }
        }
        w.WriteEndArray();
        more?.Invoke(w);
        w.WriteEndObject();
    }
}
