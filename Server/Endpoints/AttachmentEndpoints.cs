using RavenLite.Server.Attachments;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;
using RavenLite.Server.Security;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Attachments (docs/http-api.md "Attachments"): <c>PUT /databases/{db}/attachments?id=&amp;name=&amp;contentType=</c>
/// streams the body to storage (<see cref="AttachmentUpload"/>) and attaches it; <c>GET</c> streams it back (one
/// <c>Range</c> of bytes supported: 206), <c>HEAD</c> tells whether it exists, <c>DELETE</c> removes it. <c>If-Match</c>
/// names the document's expected change vector.
/// </summary>
public static class AttachmentEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPut("/databases/{db}/attachments", DatabaseRoute.Handle(Put)).Requires(Access.DatabaseReadWrite);
        app.MapGet("/databases/{db}/attachments", DatabaseRoute.Handle(Get)).Requires(Access.DatabaseRead);
        app.MapPost("/databases/{db}/attachments", DatabaseRoute.Handle(Get)).Requires(Access.DatabaseRead);
        app.MapMethods("/databases/{db}/attachments", ["HEAD"], DatabaseRoute.Handle(Head)).Requires(Access.DatabaseRead);
        app.MapDelete("/databases/{db}/attachments", DatabaseRoute.Handle(Delete)).Requires(Access.DatabaseReadWrite);
    }

    private static (string Id, string Name) IdAndName(HttpContext context, Database db)
    {
        string id = RequestParsing.Required(context.Request, "id");
        db.Documents.ValidateId(id);
        string name = RequestParsing.Required(context.Request, "name");
        AttachmentsStore.ValidateName(name);
        return (id, name);
    }

    private static async Task Put(HttpContext context, Database db)
    {
        var (id, name) = IdAndName(context, db);
        string? contentType = RequestParsing.Query(context.Request, "contentType");
        string? expected = RequestParsing.Header(context.Request, "If-Match");
        var options = context.RequestServices.GetRequiredService<ServerOptions>();
        if (context.Request.ContentLength > options.MaxAttachmentBytes)
            throw new TooLargeException($"Attachment is over the limit of {options.MaxAttachmentBytes} bytes (MaxAttachmentBytes).");
        var content = await AttachmentUpload.StageAsync(context.Request.Body, db.Merger, options.MaxAttachmentBytes, context.RequestAborted).ConfigureAwait(false);
        var command = new DelegateCommand<AttachmentWrite>(ctx => AttachmentOperations.Put(ctx, id, name, contentType, content, expected), content.Staged ? 0 : content.Size);
        try
        {
            await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        }
        catch when (content.Staged)
        {
            await AttachmentUpload.DiscardAsync(db.Merger, content.ContentId, content.Size).ConfigureAwait(false);
            throw;
        }
        var r = command.Result!;
        await JsonResponse.WriteAsync(context, 201, w => WriteDetails(w, r)).ConfigureAwait(false);
    }

    /// <summary>Writes RavenDB's <c>AttachmentDetails</c>: <c>{"ChangeVector","Name","DocumentId","ContentType","Hash","Size"}</c>.</summary>
    internal static void WriteDetails(Utf8JsonWriter w, AttachmentWrite r)
    {
        w.WriteStartObject();
        w.WriteString("ChangeVector", r.ChangeVector);
        w.WriteString("Name", r.Name);
        w.WriteString("DocumentId", r.DocumentId);
        w.WriteString("ContentType", r.Info.ContentType);
        w.WriteString("Hash", r.Info.Hash);
        w.WriteNumber("Size", r.Info.Size);
        w.WriteEndObject();
    }

    /// <summary>The attachment and its document's change vector as of <paramref name="tx"/>, or null.</summary>
    private static (AttachmentInfo Info, string ChangeVector)? Find(Storage.Transactions.Transaction tx, Database db, string id, string name)
    {
        var doc = db.Documents.Get(tx, id);
        if (doc == null || DocumentExtras.Read(doc.Json) is not { } extras || !extras.Attachments.TryGetValue(name, out var info))
            return null;
        return (info, doc.ChangeVector);
    }

    /// <summary>The attachment as the revision with this change vector lists it, or null.</summary>
    private static (AttachmentInfo Info, string ChangeVector)? FindInRevision(Storage.Transactions.Transaction tx, Database db, string id, string name, string changeVector)
    {
        var revision = Revisions.RevisionsStore.GetByChangeVector(tx, changeVector, db.Documents);
        if (revision == null || !string.Equals(revision.Id, id, StringComparison.OrdinalIgnoreCase)
            || DocumentExtras.Read(revision.Json) is not { } extras || !extras.Attachments.TryGetValue(name, out var info))
            return null;
        return (info, revision.ChangeVector);
    }

    private static async Task Get(HttpContext context, Database db)
    {
        var (id, name) = IdAndName(context, db);
        string? revision = null;
        if (HttpMethods.IsPost(context.Request.Method))
        {
            // RavenDB's clients POST {"Type":"Revision","ChangeVector":..} for an attachment of a revision; a document's is a GET.
            using var body = await RequestBody.ReadJsonAsync(context, "attachment request").ConfigureAwait(false);
            string type = body.RootElement.TryGetProperty("Type", out var t) && t.ValueKind == JsonValueKind.String ? t.GetString()! : "Document";
            if (type == "Revision")
                revision = body.RootElement.TryGetProperty("ChangeVector", out var c) && c.ValueKind == JsonValueKind.String ? c.GetString()
                    : throw new BadRequestException("An attachment of a revision is named by the revision's ChangeVector.");
            else if (type != "Document")
                throw new BadRequestException($"Attachment type '{type}' is not known (Document and Revision are).");
        }
        using var tx = db.Environment.ReadTransaction();
        if ((revision != null ? FindInRevision(tx, db, id, name, revision) : Find(tx, db, id, name)) is not var (info, cv))
        {
            await JsonResponse.EmptyAsync(context, 404).ConfigureAwait(false);
            return;
        }
        var stored = AttachmentsStore.Find(tx, info.Hash) ?? throw new InvalidOperationException($"Attachment '{name}' of '{id}' names content {info.Hash}, which is not stored.");
        var response = context.Response;
        response.Headers.ETag = "\"" + info.Hash + "\"";
        response.Headers["Attachment-Hash"] = info.Hash;
        response.Headers["Attachment-Size"] = info.Size.ToString(CultureInfo.InvariantCulture);
        response.Headers["Document-Change-Vector"] = cv;
        response.Headers.AcceptRanges = "bytes";
        response.ContentType = string.IsNullOrEmpty(info.ContentType) ? "application/octet-stream" : info.ContentType;
        long from = 0, length = info.Size;
        if (RequestParsing.Header(context.Request, "Range") is { } range)
        {
            if (!TryParseRange(range, info.Size, out from, out length))
            {
                response.StatusCode = 416;
                response.Headers.ContentRange = $"bytes */{info.Size}";
                response.ContentLength = 0;
                return;
            }
            response.StatusCode = 206;
            response.Headers.ContentRange = string.Create(CultureInfo.InvariantCulture, $"bytes {from}-{from + length - 1}/{info.Size}");
        }
        else
        {
            response.StatusCode = 200;
        }
        response.ContentLength = length;
        await AttachmentsStore.CopyToAsync(tx, stored.ContentId, from, length, response.Body, context.RequestAborted).ConfigureAwait(false);
    }

    /// <summary>One range of <c>bytes=a-b</c>, <c>bytes=a-</c> or <c>bytes=-n</c> within <paramref name="size"/>; false when unsatisfiable.</summary>
    internal static bool TryParseRange(string header, long size, out long from, out long length)
    {
        from = 0;
        length = size;
        if (!header.StartsWith("bytes=", StringComparison.OrdinalIgnoreCase) || header.Contains(',', StringComparison.Ordinal))
            return false;
        string spec = header[6..].Trim();
        int dash = spec.IndexOf('-', StringComparison.Ordinal);
        if (dash < 0)
            return false;
        string a = spec[..dash], b = spec[(dash + 1)..];
        if (a.Length == 0)
        {
            if (!long.TryParse(b, NumberStyles.None, CultureInfo.InvariantCulture, out long suffix) || suffix == 0 || size == 0)
                return false;
            length = Math.Min(suffix, size);
            from = size - length;
            return true;
        }
        if (!long.TryParse(a, NumberStyles.None, CultureInfo.InvariantCulture, out from) || from >= size)
            return false;
        long last = size - 1;
        if (b.Length > 0 && (!long.TryParse(b, NumberStyles.None, CultureInfo.InvariantCulture, out last) || last < from))
            return false;
        length = Math.Min(last, size - 1) - from + 1;
        return true;
    }

    private static Task Head(HttpContext context, Database db)
    {
        var (id, name) = IdAndName(context, db);
        using var tx = db.Environment.ReadTransaction();
        if (Find(tx, db, id, name) is not var (info, _))
            return JsonResponse.EmptyAsync(context, 404);
        context.Response.Headers.ETag = "\"" + info.Hash + "\"";
        return JsonResponse.EmptyAsync(context, RequestParsing.Header(context.Request, "If-None-Match") == info.Hash ? 304 : 200);
    }

    private static async Task Delete(HttpContext context, Database db)
    {
        var (id, name) = IdAndName(context, db);
        string? expected = RequestParsing.Header(context.Request, "If-Match");
        await db.Merger.EnqueueAsync(new DelegateCommand<DocumentVersion?>(ctx => AttachmentOperations.Delete(ctx, id, name, expected))).ConfigureAwait(false);
        await JsonResponse.EmptyAsync(context, 204).ConfigureAwait(false);
    }
}
