using RavenLite.Server.Attachments;
using RavenLite.Server.Batches;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// <c>POST /databases/{db}/bulk_docs</c> (docs/protocol.md §5): a session's SaveChanges. Every command of
/// the batch (PUT, DELETE, PATCH, Counters) is applied in one transaction or none is (a failed
/// change-vector check answers 409, a failing patch script 400, and nothing is written). A cluster-wide batch
/// (<c>TransactionMode: ClusterWide</c>, what RavenDB runs on a one-node cluster too) holds PUT, DELETE,
/// CompareExchangePUT and CompareExchangeDELETE, checks every compare-exchange index and document atomic guard
/// before writing anything (409 ClusterTransactionConcurrencyException), and answers its TransactionIndex.
/// </summary>
public static class BulkDocsEndpoints
{
    /// <summary>Maps the route.</summary>
    public static void Map(IEndpointRouteBuilder app) => app.MapPost("/databases/{db}/bulk_docs", DatabaseRoute.Handle(Post)).Requires(Access.DatabaseReadWrite);

    private static async Task Post(HttpContext context, Database db)
    {
        var options = db.Options;
        var streams = new List<StagedContent>();
        try
        {
            await PostCore(context, db, options, streams).ConfigureAwait(false);
        }
        catch
        {
            foreach (var staged in streams.Where(c => c.Staged))
                await AttachmentUpload.DiscardAsync(db.Merger, staged.ContentId, staged.Size).ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>
    /// The batch as JSON, or (multipart/form-data, a session storing attachments) its first part as JSON and each
    /// further part an attachment's content, staged in order into <paramref name="streams"/> for the AttachmentPUT commands.
    /// </summary>
    private static async Task<ReadOnlyMemory<byte>> ReadBatchAsync(HttpContext context, Database db, ServerOptions options, List<StagedContent> streams)
    {
        var contentType = context.Request.ContentType;
        if (contentType == null || !contentType.StartsWith("multipart/", StringComparison.OrdinalIgnoreCase))
            return await RequestBody.ReadAsync(context, options.MaxRequestBodyBytes).ConfigureAwait(false);
        if (!Microsoft.Net.Http.Headers.MediaTypeHeaderValue.TryParse(contentType, out var media))
            throw new BadRequestException($"The Content-Type '{contentType}' is not a media type.");
        var boundary = Microsoft.Net.Http.Headers.HeaderUtilities.RemoveQuotes(media.Boundary).Value;
        if (string.IsNullOrEmpty(boundary))
            throw new BadRequestException("A multipart batch needs a boundary in its Content-Type.");
        var reader = new Microsoft.AspNetCore.WebUtilities.MultipartReader(boundary, context.Request.Body) { BodyLengthLimit = null };
        ReadOnlyMemory<byte>? main = null;
        try
        {
            for (var section = await reader.ReadNextSectionAsync(context.RequestAborted).ConfigureAwait(false); section != null;
                 section = await reader.ReadNextSectionAsync(context.RequestAborted).ConfigureAwait(false))
            {
                if (main == null)
                {
                    using var buffer = new MemoryStream();
                    await section.Body.CopyToAsync(buffer, context.RequestAborted).ConfigureAwait(false);
                    if (buffer.Length > options.MaxRequestBodyBytes)
                        throw new TooLargeException($"The batch is over the limit of {options.MaxRequestBodyBytes} bytes (MaxRequestBodyBytes).");
                    main = buffer.ToArray();
                    continue;
                }
                streams.Add(await AttachmentUpload.StageAsync(section.Body, db.Merger, options.MaxAttachmentBytes, context.RequestAborted).ConfigureAwait(false));
            }
        }
        catch (Exception e) when (e is IOException or InvalidDataException && !context.RequestAborted.IsCancellationRequested)
        {
            throw new BadRequestException("Malformed multipart batch: " + e.Message); // a section's headers or framing
        }
        return main ?? throw new BadRequestException("A multipart batch needs its commands (JSON) as the first part.");
    }

    private static async Task PostCore(HttpContext context, Database db, ServerOptions options, List<StagedContent> streams)
    {
        var body = await ReadBatchAsync(context, db, options, streams).ConfigureAwait(false);
        using var json = DocumentJson.Parse(body, 3); // {"Commands":[{"Document":{...}}]}
        var prepared = new ArrayBufferWriter<byte>(body.Length + 256);
        bool clusterWide = json.RootElement.ValueKind == JsonValueKind.Object && json.RootElement.TryGetProperty("TransactionMode", out var mode)
            && mode.ValueKind == JsonValueKind.String && mode.GetString() == "ClusterWide";
        var commands = BatchParser.Parse(json.RootElement, db.Documents, options, prepared, clusterWide, streams);
        foreach (var put in commands.OfType<PutItem>())
            put.Id = await GroupIdentities.ResolveAsync(context, db, put.Id).ConfigureAwait(false);
        bool atomicWrites = clusterWide && !string.Equals(RequestParsing.Query(context.Request, "disableAtomicDocumentWrites"), "true", StringComparison.OrdinalIgnoreCase);
        if (clusterWide && context.RequestServices.GetRequiredService<Cluster.ClusterNode>().Groups.ContainsKey(db.Name))
        {
            await PostToClusterAsync(context, db, json.RootElement.GetProperty("Commands"), commands, atomicWrites).ConfigureAwait(false);
            return;
        }
        // The waits' parameters are checked before anything is written: a 400 means nothing was.
        var assurance = WriteAssurance.Parse(context.Request);
        var indexes = IndexAssurance.Parse(context.Request)?.Affected(db, commands);
        using var batch = new MergedBatchCommand(commands, body.Length, clusterWide, atomicWrites);
        await db.Merger.EnqueueAsync(batch).ConfigureAwait(false);
        if (assurance != null)
            await assurance.WaitAsync(db, batch.LastEtag, context.RequestAborted).ConfigureAwait(false);
        if (indexes != null)
            await indexes.Value.Wait.WaitAsync(indexes.Value.Indexes, context.RequestAborted).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 201, w =>
        {
            w.WriteStartObject();
            batch.WriteResults(w);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    /// <summary>A cluster-wide batch of a group's database: decided through Raft and written by every member (docs/cluster.md "Cluster-wide transactions").</summary>
    private static async Task PostToClusterAsync(HttpContext context, Database db, JsonElement commands, List<BatchItem> items, bool atomicWrites)
    {
        var (index, documentResults) = await context.RequestServices.GetRequiredService<Cluster.ClusterTransactions>()
            .RunAsync(RaftRequestId.Of(context.Request), db, commands, items, atomicWrites, context.RequestAborted).ConfigureAwait(false);
        await JsonResponse.WriteAsync(context, 201, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            int next = 0;
            foreach (var item in items)
            {
                if (item is CompareExchangeItem cx)
                {
                    w.WriteStartObject();
                    w.WriteString("Type", cx.Value != null ? "CompareExchangePUT" : "CompareExchangeDELETE");
                    w.WriteString("Key", cx.Id);
                    w.WriteNumber("Index", index);
                    w.WriteEndObject();
                }
                else
                {
                    w.WriteRawValue(documentResults[next++], skipInputValidation: true);
                }
            }
            w.WriteEndArray();
            w.WriteNumber("TransactionIndex", index);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }
}
