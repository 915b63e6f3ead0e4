using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.TimeSeries;

/// <summary>
/// The changes to one series of one document (RavenDB's <c>TimeSeriesOperation</c>:
/// <c>{"Name":..,"Appends":[{"Timestamp","Values","Tag"}],"Deletes":[{"From","To"}],"Increments":[{"Timestamp","Values"}]}</c>),
/// checked when parsed and applied in a write transaction: deletes first, then appends (an entry at an existing time
/// replaces it), then increments (added to the values at that time, or a new entry). Series named <c>INC:...</c> are
/// incremental: they take increments, not appends; others the reverse. The document's <c>@timeseries</c> follows
/// series that appear or become empty. Re-runnable (the merger may run it again after a rollback).
/// </summary>
public sealed class TimeSeriesOperation
{
    /// <summary>The prefix of incremental series.</summary>
    public const string IncrementalPrefix = "INC:";

    /// <summary>Longest series name, in UTF-8 bytes.</summary>
    public const int MaxNameBytes = 256;

    private TimeSeriesOperation(string name, List<TimeSeriesPoint> appends, List<(long From, long To)> deletes, List<(long Ms, double[] Deltas)> increments)
    {
        Name = name;
        Appends = appends;
        Deletes = deletes;
        Increments = increments;
    }

    /// <summary>The series.</summary>
    public string Name { get; }

    /// <summary>Entries to add or replace, in time order.</summary>
    public List<TimeSeriesPoint> Appends { get; }

    /// <summary>Ranges to remove (ms, inclusive).</summary>
    public List<(long From, long To)> Deletes { get; }

    /// <summary>Values to add at times (incremental series).</summary>
    public List<(long Ms, double[] Deltas)> Increments { get; }

    /// <summary>Entries this operation writes (for batching bounds).</summary>
    public int Size => Appends.Count + Increments.Count + Deletes.Count;

    /// <summary>400 for a name that is empty, too long, or holds control characters or the rollup separator.</summary>
    public static void ValidateName(string? name)
    {
        ExtensionKeys.ValidateName(name, "time-series", MaxNameBytes);
        if (name!.Contains('@', StringComparison.Ordinal))
            throw new BadRequestException($"Time-series name '{name}' contains '@', which separates a rollup's series from its policy.");
    }

    /// <summary>True for an incremental series name.</summary>
    public static bool IsIncremental(string name) => name.StartsWith(IncrementalPrefix, StringComparison.OrdinalIgnoreCase);

    /// <summary>A time in a request (ISO 8601; UTC when no offset is given), as ms; 400 naming <paramref name="where"/>.</summary>
    public static long ParseTime(JsonElement e, string where)
    {
        if (e.ValueKind == JsonValueKind.String && DateTime.TryParse(e.GetString(), CultureInfo.InvariantCulture,
                DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var t))
            return TimeSeriesPoint.ToMilliseconds(t);
        throw new BadRequestException($"{where} must be a date (ISO 8601), got {e.GetRawText()}.");
    }

    private static double[] ParseValues(JsonElement e, string where)
    {
        if (e.ValueKind != JsonValueKind.Array || e.GetArrayLength() is 0 or > TimeSeriesSegment.MaxValues)
            throw new BadRequestException($"{where} must be an array of 1 to {TimeSeriesSegment.MaxValues} numbers.");
        var values = new double[e.GetArrayLength()];
        int i = 0;
        foreach (var v in e.EnumerateArray())
            values[i++] = v.ValueKind == JsonValueKind.Number && v.TryGetDouble(out double d) && double.IsFinite(d) ? d
                : throw new BadRequestException($"{where}[{i - 1}] must be a number, got {v.GetRawText()}.");
        return values;
    }

    /// <summary>Parses one operation; 400 naming <paramref name="where"/> for anything malformed (appends out of time order included).</summary>
    public static TimeSeriesOperation Parse(JsonElement e, string where)
    {
        if (e.ValueKind != JsonValueKind.Object)
            throw new BadRequestException($"{where} must be a time-series operation {{\"Name\":..,\"Appends\":[..],\"Deletes\":[..]}}.");
        string? name = e.TryGetProperty(nameof(Name), out var n) && n.ValueKind == JsonValueKind.String ? n.GetString() : null;
        ValidateName(name);
        bool incremental = IsIncremental(name!);
        var appends = new List<TimeSeriesPoint>();
        if (e.TryGetProperty(nameof(Appends), out var a) && a.ValueKind == JsonValueKind.Array)
        {
            if (incremental && a.GetArrayLength() > 0)
                throw new BadRequestException($"{where}: '{name}' is an incremental time series (INC:); it takes increments, not appends.");
            bool unixMs = e.TryGetProperty("TimeFormat", out var tf) && tf.ValueKind == JsonValueKind.String && tf.GetString() == "UnixTimeInMs";
            int i = 0;
            foreach (var item in a.EnumerateArray())
            {
                string at = $"{where}.Appends[{i++}]";
                if (item.ValueKind == JsonValueKind.Array && unixMs)
                {
                    // Bulk insert's compact form: [unix ms, value count, values..., tag?].
                    var point = ParseCompact(item, at);
                    if (appends.Count > 0 && point.Milliseconds < appends[^1].Milliseconds)
                        throw new BadRequestException($"{at}: appends must be in time order ({point.Timestamp:o} comes after {appends[^1].Timestamp:o}).");
                    if (appends.Count > 0 && point.Milliseconds == appends[^1].Milliseconds)
                        appends[^1] = point;
                    else
                        appends.Add(point);
                    continue;
                }
                if (item.ValueKind != JsonValueKind.Object)
                    throw new BadRequestException($"{at} must be an object {{\"Timestamp\",\"Values\",\"Tag\"}}.");
                long ms = ParseTime(item.TryGetProperty("Timestamp", out var ts) ? ts : default, at + ".Timestamp");
                var values = ParseValues(item.TryGetProperty("Values", out var vs) ? vs : default, at + ".Values");
                string? tag = item.TryGetProperty("Tag", out var tg) && tg.ValueKind == JsonValueKind.String ? tg.GetString() : null;
                if (tag != null && Encoding.UTF8.GetByteCount(tag) > 1024)
                    throw new BadRequestException($"{at}.Tag is longer than 1024 UTF-8 bytes.");
                if (appends.Count > 0 && ms < appends[^1].Milliseconds)
                    throw new BadRequestException($"{at}: appends must be in time order ({new TimeSeriesPoint(ms, values, tag).Timestamp:o} comes after {appends[^1].Timestamp:o}).");
                if (appends.Count > 0 && ms == appends[^1].Milliseconds)
                    appends[^1] = new TimeSeriesPoint(ms, values, tag); // the same time twice: the last one wins
                else
                    appends.Add(new TimeSeriesPoint(ms, values, tag));
            }
        }
        var deletes = new List<(long, long)>();
        if (e.TryGetProperty(nameof(Deletes), out var d) && d.ValueKind == JsonValueKind.Array)
        {
            int i = 0;
            foreach (var item in d.EnumerateArray())
            {
                string at = $"{where}.Deletes[{i++}]";
                long from = item.TryGetProperty("From", out var f) && f.ValueKind != JsonValueKind.Null ? ParseTime(f, at + ".From") : long.MinValue;
                long to = item.TryGetProperty("To", out var t) && t.ValueKind != JsonValueKind.Null ? ParseTime(t, at + ".To") : long.MaxValue;
                if (from > to)
                    throw new BadRequestException($"{at}: From is after To.");
                deletes.Add((from, to));
            }
        }
        var increments = new List<(long, double[])>();
        if (e.TryGetProperty(nameof(Increments), out var inc) && inc.ValueKind == JsonValueKind.Array)
        {
            if (!incremental && inc.GetArrayLength() > 0)
                throw new BadRequestException($"{where}: increments need an incremental time series, named '{IncrementalPrefix}...'; '{name}' is not one.");
            int i = 0;
            foreach (var item in inc.EnumerateArray())
            {
                string at = $"{where}.Increments[{i++}]";
                long ms = ParseTime(item.TryGetProperty("Timestamp", out var ts) ? ts : default, at + ".Timestamp");
                increments.Add((ms, ParseValues(item.TryGetProperty("Values", out var vs) ? vs : default, at + ".Values")));
            }
            increments.Sort((x, y) => x.Item1.CompareTo(y.Item1));
        }
        return new TimeSeriesOperation(name!, appends, deletes, increments);
    }

    /// <summary>Milliseconds from 0001-01-01 to the Unix epoch.</summary>
    private const long UnixEpochMs = 62_135_596_800_000;

    /// <summary>Milliseconds from 0001-01-01 to the last millisecond <see cref="DateTime"/> holds.</summary>
    private const long MaxMs = 315_537_897_599_999;

    private static TimeSeriesPoint ParseCompact(JsonElement item, string at)
    {
        int length = item.GetArrayLength();
        if (length < 3 || item[0].ValueKind != JsonValueKind.Number || !item[0].TryGetInt64(out long unix)
            || item[1].ValueKind != JsonValueKind.Number || !item[1].TryGetInt32(out int count) || count is < 1 or > TimeSeriesSegment.MaxValues || length < 2 + count)
            throw new BadRequestException($"{at} must be [unix time in ms, value count, values..., tag?].");
        var values = new double[count];
        for (int k = 0; k < count; k++)
            values[k] = item[2 + k].ValueKind == JsonValueKind.Number && item[2 + k].TryGetDouble(out double d) ? d
                : throw new BadRequestException($"{at}: value {k} must be a number.");
        string? tag = length > 2 + count && item[2 + count].ValueKind == JsonValueKind.String ? item[2 + count].GetString() : null;
        if (unix < -UnixEpochMs || unix > MaxMs - UnixEpochMs)
            throw new BadRequestException($"{at}: unix time {unix} ms is outside the dates a time series holds (0001-01-01 to 9999-12-31).");
        return new TimeSeriesPoint(unix + UnixEpochMs, values, tag);
    }

    /// <summary>Applies it to document <paramref name="documentId"/>; 400 (DocumentDoesNotExistException) when the document does not exist.</summary>
    public void Apply(DocumentsWriteContext ctx, string documentId)
    {
        var doc = ctx.Get(documentId) ?? throw new BadRequestException($"There is no document '{documentId}' (or it has been deleted), cannot operate on its time series.", RavenExceptionTypes.DocumentDoesNotExist);
        var key = ctx.KeyOf(doc.Id);
        var tx = ctx.Transaction;
        bool existed = TimeSeriesStore.Exists(tx, key, Name);
        foreach (var (from, to) in Deletes)
        {
            TimeSeriesStore.Change(tx, key, Name, from, to, points => points.Where(p => p.Milliseconds < from || p.Milliseconds > to).ToList());
            IncrementalShares.Delete(tx, key, Name, from, to);
            TimeSeriesReplication.Record(ctx, key, Name, from, to, deleted: true);
        }
        if (Appends.Count > 0)
        {
            TimeSeriesStore.Change(tx, key, Name, Appends[0].Milliseconds, Appends[^1].Milliseconds, points => Merge(points, Appends));
            TimeSeriesReplication.Record(ctx, key, Name, Appends[0].Milliseconds, Appends[^1].Milliseconds, deleted: false);
        }
        if (Increments.Count > 0)
        {
            string owner = IncrementalOwner(ctx.Storage);
            TimeSeriesStore.Change(tx, key, Name, Increments[0].Ms, Increments[^1].Ms, points => Increment(tx, key, owner, points));
            TimeSeriesReplication.Record(ctx, key, Name, Increments[0].Ms, Increments[^1].Ms, deleted: false);
        }
        bool exists = TimeSeriesStore.Exists(tx, key, Name);
        if (exists != existed)
            ctx.UpdateExtras(doc.Id, extras => exists ? extras.TimeSeries.Add(Name) : extras.TimeSeries.Remove(Name));
        if (ctx.Changes != null && (Appends.Count > 0 || Increments.Count > 0 || Deletes.Count > 0))
        {
            // The changes API: the span touched, Put (appends, increments), Delete, or Mixed.
            long from = long.MaxValue, to = long.MinValue;
            foreach (var (f, t) in Deletes)
                (from, to) = (Math.Min(from, f), Math.Max(to, t));
            if (Appends.Count > 0)
                (from, to) = (Math.Min(from, Appends[0].Milliseconds), Math.Max(to, Appends[^1].Milliseconds));
            if (Increments.Count > 0)
                (from, to) = (Math.Min(from, Increments[0].Ms), Math.Max(to, Increments[^1].Ms));
            bool puts = Appends.Count > 0 || Increments.Count > 0;
            string type = puts && Deletes.Count > 0 ? "Mixed" : puts ? "Put" : "Delete";
            ctx.Changes.Add(new(Changes.ChangeKind.TimeSeries, type, doc.Id, doc.Collection, Name, ctx.Find(doc.Id)?.ChangeVector ?? doc.ChangeVector, 0,
                TimeOf(from), TimeOf(to)));
        }
        // A change to a series whose collection has rollup policies: its periods from the earliest changed time are rolled up again.
        if (ctx.Storage.Extension<TimeSeriesExtension>().Configuration?.Collections.TryGetValue(doc.Collection, out var settings) == true && settings.Policies.Count > 0)
        {
            long earliest = Math.Min(Appends.Count > 0 ? Appends[0].Milliseconds : long.MaxValue, Increments.Count > 0 ? Increments[0].Ms : long.MaxValue);
            foreach (var (from, _) in Deletes)
                earliest = Math.Min(earliest, from);
            if (earliest != long.MaxValue)
                TimeSeriesStore.MarkChanged(tx, key, Name, earliest);
        }
    }

    /// <summary>The union of two sorted runs; at the same time the new entry wins.</summary>
    private static List<TimeSeriesPoint> Merge(List<TimeSeriesPoint> existing, List<TimeSeriesPoint> added)
    {
        var result = new List<TimeSeriesPoint>(existing.Count + added.Count);
        int i = 0, j = 0;
        while (i < existing.Count || j < added.Count)
        {
            if (j == added.Count || (i < existing.Count && existing[i].Milliseconds < added[j].Milliseconds))
                result.Add(existing[i++]);
            else
            {
                if (i < existing.Count && existing[i].Milliseconds == added[j].Milliseconds)
                    i++;
                result.Add(added[j++]);
            }
        }
        return result;
    }

    /// <summary>This instance's name as the owner of its parts of incremental entries (<see cref="IncrementalShares"/>).</summary>
    public static string IncrementalOwner(DocumentsStorage storage)
    {
        ArgumentNullException.ThrowIfNull(storage);
        return $"{storage.NodeTag}-{storage.DatabaseId}";
    }

    /// <summary>The entries with this operation's increments added to this instance's parts (an entry's values are its parts' sums).</summary>
    private List<TimeSeriesPoint> Increment(WriteTransaction tx, byte[] key, string owner, List<TimeSeriesPoint> existing)
    {
        var byTime = new SortedDictionary<long, TimeSeriesPoint>();
        foreach (var p in existing)
            byTime[p.Milliseconds] = p;
        foreach (var (ms, deltas) in Increments)
        {
            bool held = byTime.TryGetValue(ms, out var p);
            byTime[ms] = IncrementalShares.Add(tx, key, Name, owner, ms, deltas, held ? p.Values : null);
        }
        return [.. byTime.Values];
    }

    /// <summary>A time of the store's milliseconds as a UTC date, clamped to what a DateTime holds (deletes may say 0 or the end of time).</summary>
    private static DateTime TimeOf(long ms) =>
        new(Math.Clamp(ms, 0, DateTime.MaxValue.Ticks / TimeSpan.TicksPerMillisecond) * TimeSpan.TicksPerMillisecond, DateTimeKind.Utc);
}
