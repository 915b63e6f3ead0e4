using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Formatting;
using RavenLite.Server.Http;
using RavenLite.Server.Queries;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Streaming (RavenDB's <c>session.advanced.stream</c>): <c>GET /databases/{db}/streams/docs</c> and
/// <c>POST|GET /databases/{db}/streams/queries</c>. Results are written while the storage cursor (and the
/// index snapshot) advance, through <see cref="StreamedResponse"/>: memory stays flat for any count.
/// <c>format=jsonl</c> (what the clients ask for) writes one JSON value per line: documents as they are for
/// <c>/streams/docs</c>; <c>{"Stats": ...}</c> then <c>{"Item": ...}</c> lines for queries, and an
/// <c>{"Error": ...}</c> line when the query fails after results went out. Without it the answer is one
/// object, <c>{"Results": [...]}</c> (queries: the statistics first, as RavenDB).
/// </summary>
public static class StreamEndpoints
{
    private const string JsonLines = "application/jsonl; charset=utf-8";
    private const string Json = "application/json; charset=utf-8";

    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapGet("/databases/{db}/streams/docs", DatabaseRoute.Handle(StreamDocs)).Requires(Access.DatabaseRead);
        app.MapPost("/databases/{db}/streams/queries", DatabaseRoute.Handle(PostQuery)).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/streams/queries", DatabaseRoute.Handle(GetQuery)).Requires(Access.DatabaseRead);
    }

    private static bool IsJsonLines(HttpRequest request) =>
        string.Equals(RequestParsing.Query(request, "format"), "jsonl", StringComparison.OrdinalIgnoreCase);

    /// <summary>
    /// Documents by id prefix (<c>startsWith</c>, <c>matches</c>, <c>exclude</c>, <c>startAfter</c>; id order), by
    /// collection (<c>collection</c>; etag order), after an etag (<c>etag</c>; etag order), or else every document,
    /// the most recently written first (as RavenDB); <c>start</c> and <c>pageSize</c> page any of them.
    /// </summary>
    private static Task StreamDocs(HttpContext context, Database db)
    {
        var request = context.Request;
        int start = RequestParsing.QueryInt(request, "start", 0);
        int pageSize = RequestParsing.QueryInt(request, "pageSize", int.MaxValue, 0);
        string? prefix = RequestParsing.Query(request, "startsWith");
        string? collection = RequestParsing.Query(request, "collection") is { Length: > 0 } c ? c : null;
        long? etag = RequestParsing.QueryLong(request, "etag", min: 0);
        var matches = IdPattern.Parse(RequestParsing.Query(request, "matches"));
        var exclude = IdPattern.Parse(RequestParsing.Query(request, "exclude"));
        string? startAfter = RequestParsing.Query(request, "startAfter") is { Length: > 0 } a ? a : null;
        if (prefix == null && (matches != null || exclude != null || startAfter != null))
            throw new BadRequestException("matches, exclude and startAfter filter an id prefix: give startsWith too.");
        if (prefix != null && (collection != null || etag != null))
            throw new BadRequestException("Stream by one of startsWith, collection or etag, not several.");
        bool lines = IsJsonLines(request);
        return StreamedResponse.RunAsync(context, lines ? JsonLines : Json, stream =>
        {
            using var tx = db.Environment.ReadTransaction();
            var docs = prefix != null
                ? db.Documents.ScanStartingWith(tx, prefix, tail => (matches == null || matches.IsMatch(tail)) && (exclude == null || !exclude.IsMatch(tail)), startAfter)
                : collection != null || etag != null ? db.Documents.Scan(tx, collection, etag ?? 0)
                : db.Documents.ScanLatest(tx);
            if (!lines)
                stream.Append("{\"Results\":["u8);
            bool first = true;
            foreach (var doc in docs.Skip(start).Take(pageSize))
            {
                stream.Cancellation.ThrowIfCancellationRequested();
                if (!lines && !first)
                    stream.Append(","u8);
                stream.Append(doc.Json);
                if (lines)
                    stream.Append("\n"u8);
                first = false;
            }
            if (!lines)
                stream.Append("]}"u8);
        });
    }

    private static async Task PostQuery(HttpContext context, Database db)
    {
        using var doc = await RequestBody.ReadJsonAsync(context, "query").ConfigureAwait(false);
        var (rql, parameters, options) = QueryEndpoints.ReadIndexQuery(doc.RootElement);
        await StreamQuery(context, db, rql, parameters, options).ConfigureAwait(false);
    }

    private static Task GetQuery(HttpContext context, Database db) =>
        StreamQuery(context, db, RequestParsing.Required(context.Request, "query"), default, new QueryOptions(null, null, false, QueryRunner.AutoIndexWait));

    private static Task StreamQuery(HttpContext context, Database db, string rql, JsonElement parameters, QueryOptions options)
    {
        if (options.WaitForNonStale)
            throw new BadRequestException("A streamed query does not wait for indexing: WaitForNonStaleResults is not supported (as RavenDB).");
        var query = RqlParser.Parse(rql);
        bool lines = IsJsonLines(context.Request);
        return StreamedResponse.RunAsync(context, lines ? JsonLines : Json, stream =>
        {
            bool first = true;
            QueryRunner.Stream(db, query, parameters, options, stats =>
            {
                stream.AppendJson(w => WriteStats(w, stats, lines));
                if (lines)
                    stream.Append("\n"u8);
            }, result =>
            {
                if (lines)
                {
                    stream.Append("{\"Item\":"u8);
                    stream.Append(result);
                    stream.Append("}\n"u8);
                }
                else
                {
                    if (!first)
                        stream.Append(","u8);
                    stream.Append(result);
                }
                first = false;
            }, stream.Cancellation);
            if (!lines)
                stream.Append("]}"u8);
        }, lines ? WriteError : null);
    }

    /// <summary>The jsonl marker of a query that failed after results went out (RavenDB's <c>{"Error": ...}</c> line).</summary>
    private static void WriteError(StreamedResponse stream, Exception e)
    {
        stream.AppendJson(w =>
        {
            w.WriteStartObject();
            w.WriteString("Error", e is DomainException ? e.Message : e.ToString());
            w.WriteEndObject();
        });
        stream.Append("\n"u8);
    }

    /// <summary>jsonl: the <c>{"Stats": ...}</c> line; JSON: the answer's opening up to <c>"Results":[</c> (left open, the results follow raw).</summary>
    private static void WriteStats(Utf8JsonWriter w, QueryStreamStats stats, bool lines)
    {
        w.WriteStartObject();
        if (lines)
            w.WriteStartObject("Stats");
        w.WriteNumber("ResultEtag", stats.ResultEtag);
        w.WriteBoolean("IsStale", stats.IsStale);
        w.WriteString("IndexName", stats.IndexName);
        w.WriteNumber("TotalResults", stats.TotalResults);
        w.WriteString("IndexTimestamp", JsonDates.FormatDate(stats.IndexTimestamp));
        if (lines)
        {
            w.WriteEndObject();
            w.WriteEndObject();
        }
        else
        {
            w.WriteStartArray("Results");
        }
    }
}
