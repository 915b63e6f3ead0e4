using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Formatting;
using RavenLite.Server.Http;
using RavenLite.Server.Security;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// HiLo id ranges (docs/protocol.md §10.1): <c>GET hilo/next</c> hands out [Low, High] from the document
/// <c>Raven/Hilo/{tag}</c> (collection <c>@hilo</c>, field <c>Max</c>); the range grows while
/// requests come fast and shrinks when they are rare. <c>PUT hilo/return</c> gives back the unused
/// tail when nobody took a range since. Both run through the merger, so ranges never overlap.
/// </summary>
public static class HiLoEndpoints
{
    private const long MinCapacity = 32;
    private const long MaxCapacity = 1024 * 1024;

    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapGet("/databases/{db}/hilo/next", DatabaseRoute.Handle(Next)).Requires(Access.DatabaseReadWrite);
        app.MapPut("/databases/{db}/hilo/return", DatabaseRoute.Handle(Return)).Requires(Access.DatabaseReadWrite);
    }

    private static string DocId(string tag) => Collections.HiLoIdPrefix + tag;

    /// <summary>The stored <c>Max</c> of the tag's HiLo document (0 when there is none), and the document.</summary>
    private static (long Max, StoredDocument? Doc) ReadMax(DocumentsWriteContext ctx, string tag)
    {
        var doc = ctx.Get(DocId(tag));
        if (doc == null)
            return (0, null);
        using var parsed = JsonDocument.Parse(doc.Json);
        return (parsed.RootElement.TryGetProperty("Max", out var m) && m.TryGetInt64(out long v) ? v : 0, doc);
    }

    /// <summary>
    /// Sets <c>Max</c>: a new document in <c>@hilo</c>, or the existing one with only <c>Max</c> changed
    /// (its other fields and client metadata such as <c>Raven-Node-Type</c> stay, as RavenDB does, so a
    /// client that stored its own HiLo document reads it back as its own type).
    /// </summary>
    private static void WriteMax(DocumentsWriteContext ctx, string tag, long max, StoredDocument? existing)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(256);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            bool written = false;
            if (existing != null)
            {
                using var parsed = JsonDocument.Parse(existing.Json);
                foreach (var p in parsed.RootElement.EnumerateObject())
                {
                    if (p.NameEquals("Max"))
                    {
                        w.WriteNumber("Max", max);
                        written = true;
                    }
                    else
                    {
                        p.WriteTo(w);
                    }
                }
            }
            if (!written)
                w.WriteNumber("Max", max);
            if (existing == null)
            {
                w.WriteStartObject("@metadata");
                w.WriteString("@collection", Collections.Hilo);
                w.WriteEndObject();
            }
            w.WriteEndObject();
        }
        ctx.Put(DocId(tag), buffer.WrittenSpan, null);
    }

    private static async Task Next(HttpContext context, Database db)
    {
        var request = context.Request;
        string tag = RequestParsing.Required(request, "tag");
        db.Documents.ValidateId(DocId(tag));
        long lastSize = RequestParsing.QueryLong(request, "lastBatchSize", min: 0) ?? 0;
        long lastMax = RequestParsing.QueryLong(request, "lastMax", min: 0) ?? 0;
        string separator = RequestParsing.Query(request, "identityPartsSeparator") is { Length: > 0 } s ? s : "/";
        DateTime? lastRangeAt = DateTime.TryParse(RequestParsing.Query(request, "lastRangeAt"), CultureInfo.InvariantCulture,
            DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var at) ? at : null;
        long capacity = NextCapacity(lastSize, lastRangeAt, DateTime.UtcNow);
        var command = new DelegateCommand<(long Low, long High)>(ctx =>
        {
            var (max, doc) = ReadMax(ctx, tag);
            long low = Math.Max(max, lastMax) + 1;
            long high = low + capacity - 1;
            WriteMax(ctx, tag, high, doc);
            return (low, high);
        });
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        var (lo, hi) = command.Result;
        await JsonResponse.WriteAsync(context, 201, w =>
        {
            w.WriteStartObject();
            w.WriteString("Prefix", tag + separator);
            w.WriteNumber("Low", lo);
            w.WriteNumber("High", hi);
            w.WriteNumber("LastSize", capacity);
            w.WriteString("ServerTag", db.Documents.NodeTag);
            w.WriteString("LastRangeAt", JsonDates.FormatDate(DateTime.UtcNow));
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    /// <summary>RavenDB's rule: double when the last range was taken under 30 s ago, halve past 60 s; 32..1,048,576.</summary>
    public static long NextCapacity(long lastSize, DateTime? lastRangeAt, DateTime now)
    {
        long size = Math.Max(lastSize, MinCapacity);
        if (lastRangeAt is { } at && at.Year > 1970)
        {
            var age = now - at;
            if (age < TimeSpan.FromSeconds(30))
                size *= 2;
            else if (age > TimeSpan.FromSeconds(60))
                size /= 2;
        }
        return Math.Clamp(size, MinCapacity, MaxCapacity);
    }

    private static async Task Return(HttpContext context, Database db)
    {
        string tag = RequestParsing.Required(context.Request, "tag");
        db.Documents.ValidateId(DocId(tag));
        long end = RequestParsing.QueryLong(context.Request, "end") ?? throw new BadRequestException("Query string parameter 'end' is required.");
        long last = RequestParsing.QueryLong(context.Request, "last") ?? throw new BadRequestException("Query string parameter 'last' is required.");
        var command = new DelegateCommand<bool>(ctx =>
        {
            var (max, doc) = ReadMax(ctx, tag);
            if (doc == null || max != end || last > max)
                return false;
            WriteMax(ctx, tag, last, doc);
            return true;
        });
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        await JsonResponse.EmptyAsync(context, 204).ConfigureAwait(false);
    }
}
