using RavenLite.Server.Databases;
using RavenLite.Server.Formatting;
using RavenLite.Server.Http;
using RavenLite.Server.Queries;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// <c>POST/GET /databases/{db}/queries</c> (docs/protocol.md §6): RQL answered by <see cref="QueryRunner"/>
/// from an index (static, or the auto index a dynamic query creates) or a collection scan.
/// Index management is in <see cref="IndexEndpoints"/>.
/// </summary>
public static class QueryEndpoints
{
    /// <summary>Longest WaitForNonStaleResults wait a request may ask for.</summary>
    public static readonly TimeSpan MaxWait = TimeSpan.FromMinutes(5);

    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPost("/databases/{db}/queries", DatabaseRoute.Handle(Post)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/queries", DatabaseRoute.Handle(Get)).Requires(Access.DatabaseRead);
    }

    private static async Task Post(HttpContext context, Database db)
    {
        using (var doc = await RequestBody.ReadJsonAsync(context, "query").ConfigureAwait(false))
        {
            var (rql, parameters, options) = ReadIndexQuery(doc.RootElement);
            await Answer(context, db, rql, parameters, options).ConfigureAwait(false);
        }
    }

    /// <summary>The RQL, parameters and options of an IndexQuery body (<c>Query</c>, <c>QueryParameters</c>, <c>Start</c>, <c>PageSize</c>, waits, <c>ProjectionBehavior</c>); 400 when malformed.</summary>
    internal static (string Rql, JsonElement Parameters, QueryOptions Options) ReadIndexQuery(JsonElement root)
    {
        if (root.ValueKind != JsonValueKind.Object || !root.TryGetProperty("Query", out var q) || q.ValueKind != JsonValueKind.String)
            throw new BadRequestException("The query request needs a string 'Query' (RQL).");
        var parameters = root.TryGetProperty("QueryParameters", out var p) ? p : default;
        if (parameters.ValueKind is not (JsonValueKind.Undefined or JsonValueKind.Null or JsonValueKind.Object))
            throw new BadRequestException("QueryParameters must be an object or null.");
        int? start = Paging(root, "Start");
        int? pageSize = Paging(root, "PageSize");
        bool wait = root.TryGetProperty("WaitForNonStaleResults", out var w) && w.ValueKind == JsonValueKind.True;
        var timeout = root.TryGetProperty("WaitForNonStaleResultsTimeout", out var t) ? ParseTimeout(t) : null;
        string behavior = root.TryGetProperty("ProjectionBehavior", out var pb) && pb.ValueKind == JsonValueKind.String ? pb.GetString()! : "Default";
        if (!QueryOptions.ProjectionBehaviors.Contains(behavior, StringComparer.Ordinal))
            throw new BadRequestException($"ProjectionBehavior '{behavior}' is not one of {string.Join(", ", QueryOptions.ProjectionBehaviors)}.");
        return (q.GetString()!, parameters, new QueryOptions(start, pageSize, wait, timeout ?? QueryRunner.AutoIndexWait, behavior));
    }

    /// <summary>Start or PageSize of a query body: a whole number (above int.MaxValue clamped to it, as clients ask for "all"); 400 naming it otherwise.</summary>
    private static int? Paging(JsonElement root, string name)
    {
        if (!root.TryGetProperty(name, out var v) || v.ValueKind == JsonValueKind.Null)
            return null;
        if (v.ValueKind != JsonValueKind.Number || !v.TryGetInt64(out long n))
            throw new BadRequestException($"{name} must be a whole number, not {(v.GetRawText() is var t && t.Length > 40 ? t[..40] + "..." : v.GetRawText())}.");
        if (n < 0)
            throw new BadRequestException($"{name} is {n}; it must not be negative.");
        return (int)Math.Min(n, int.MaxValue);
    }

    private static Task Get(HttpContext context, Database db)
    {
        bool wait = string.Equals(RequestParsing.Query(context.Request, "waitForNonStaleResults"), "true", StringComparison.OrdinalIgnoreCase);
        var timeout = RequestParsing.Query(context.Request, "waitForNonStaleResultsTimeout") is { } t ? ParseTimeout(JsonSerializer.SerializeToElement(t)) : null;
        return Answer(context, db, RequestParsing.Required(context.Request, "query"), default, new QueryOptions(null, null, wait, timeout ?? QueryRunner.AutoIndexWait));
    }

    /// <summary>A wait as milliseconds (number) or a TimeSpan string ("00:00:15"); 400 otherwise; capped at <see cref="MaxWait"/>.</summary>
    internal static TimeSpan? ParseTimeout(JsonElement value)
    {
        TimeSpan result;
        if (value.ValueKind == JsonValueKind.Null)
            return null;
        if (value.ValueKind == JsonValueKind.Number && value.TryGetDouble(out double ms) && ms >= 0)
            result = TimeSpan.FromMilliseconds(Math.Min(ms, MaxWait.TotalMilliseconds));
        else if (value.ValueKind == JsonValueKind.String && TimeSpan.TryParse(value.GetString(), System.Globalization.CultureInfo.InvariantCulture, out result) && result >= TimeSpan.Zero)
            result = result > MaxWait ? MaxWait : result;
        else if (value.ValueKind == JsonValueKind.String && double.TryParse(value.GetString(), System.Globalization.CultureInfo.InvariantCulture, out double ms2) && ms2 >= 0)
            result = TimeSpan.FromMilliseconds(Math.Min(ms2, MaxWait.TotalMilliseconds));
        else
            throw new BadRequestException("WaitForNonStaleResultsTimeout must be milliseconds or a TimeSpan like \"00:00:15\".");
        return result;
    }

    private static async Task Answer(HttpContext context, Database db, string rql, JsonElement parameters, QueryOptions options)
    {
        long t0 = Stopwatch.GetTimestamp();
        var query = RqlParser.Parse(rql);
        if (query.UpdateScript != null)
            throw new InvalidQueryException("A query with 'update { ... }' is a patch by query: send it with PATCH /databases/{db}/queries.");
        if (string.Equals(RequestParsing.Query(context.Request, "debug"), "explain", StringComparison.OrdinalIgnoreCase))
        {
            var (index, reason) = QueryRunner.Explain(db, query, parameters);
            await JsonResponse.WriteAsync(context, 200, w =>
            {
                w.WriteStartObject();
                w.WriteStartArray("Results");
                w.WriteStartObject();
                w.WriteString("Index", index);
                w.WriteString("Reason", reason);
                w.WriteEndObject();
                w.WriteEndArray();
                w.WriteEndObject();
            }).ConfigureAwait(false);
            return;
        }
        var answer = await QueryRunner.RunAsync(db, query, parameters, options with { Memory = RequestMemory.For(context) }, context.RequestAborted).ConfigureAwait(false);
        // A fresh answer is fixed by the query, the database's last etag (every write and delete moves it, and a
        // non-stale index has caught up with it) and the versions of what it includes: it can be cached. Stale or random answers are not.
        if (!answer.IsStale && query.TimeSeries.Count == 0 && !query.OrderBy.Any(o => o.Type == RqlOrderType.Random))
        {
            string tag = HttpCaching.Tag([rql, parameters.ValueKind == JsonValueKind.Undefined ? null : parameters.GetRawText(),
                options.Start?.ToString(CultureInfo.InvariantCulture), options.PageSize?.ToString(CultureInfo.InvariantCulture),
                db.Documents.DatabaseId, answer.ResultEtag.ToString(CultureInfo.InvariantCulture), answer.IndexName,
                answer.IndexTimestamp?.Ticks.ToString(CultureInfo.InvariantCulture), .. answer.IncludeTagParts]);
            if (HttpCaching.Matches(context, tag))
            {
                await HttpCaching.NotModifiedAsync(context).ConfigureAwait(false);
                return;
            }
        }
        string now = JsonDates.FormatDate(DateTime.UtcNow);
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var r in answer.Results)
                r.WriteTo(w);
            w.WriteEndArray();
            w.WriteNumber("TotalResults", answer.TotalResults);
            w.WriteNumber("LongTotalResults", answer.TotalResults);
            w.WriteNumber("SkippedResults", 0);
            w.WriteBoolean("IsStale", answer.IsStale);
            w.WriteString("IndexName", answer.IndexName);
            w.WriteString("IndexTimestamp", answer.IndexTimestamp is { } ts ? JsonDates.FormatDate(ts) : now);
            w.WriteString("LastQueryTime", now);
            w.WriteNumber("ResultEtag", answer.ResultEtag);
            w.WriteStartObject("Includes");
            foreach (var (id, d) in answer.Includes)
            {
                if (d == null)
                    continue;
                w.WritePropertyName(d.Id);
                w.WriteRawValue(d.Json, skipInputValidation: true);
            }
            w.WriteEndObject();
            answer.WriteExtras?.Invoke(w);
            w.WriteNumber("DurationInMs", (long)Stopwatch.GetElapsedTime(t0).TotalMilliseconds);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }
}
