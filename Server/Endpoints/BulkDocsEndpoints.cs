using System.Buffers;
using System.Text.Json;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Hosting;
using RavenLite.Server.Http;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// <c>POST /databases/{db}/bulk_docs</c> (PROTOCOL.md §5): a session's SaveChanges. Every command of
/// the batch (PUT, DELETE, PATCH) is applied in one transaction or none is (a failed change-vector check
/// answers 409, a failing patch script 400, and nothing is written).
/// </summary>
public static class BulkDocsEndpoints
{
    /// <summary>Maps the route.</summary>
    public static void Map(IEndpointRouteBuilder app) => app.MapPost("/databases/{db}/bulk_docs", DatabaseRoute.Handle(Post));

    private static async Task Post(HttpContext context, Database db)
    {
        var options = context.RequestServices.GetRequiredService<ServerOptions>();
        var body = await RequestBody.ReadAsync(context, options.MaxRequestBodyBytes).ConfigureAwait(false);
        using var json = DocumentJson.Parse(body, 3); // {"Commands":[{"Document":{...}}]}
        var prepared = new ArrayBufferWriter<byte>(body.Length + 256);
        var commands = ParseCommands(json.RootElement, db.Documents, options, prepared);
        var batch = new BatchCommand(commands, prepared, body.Length);
        try
        {
            await db.Merger.EnqueueAsync(batch).ConfigureAwait(false);
        }
        finally
        {
            foreach (var c in commands)
                c.Patch?.Dispose();
        }
        await JsonResponse.WriteAsync(context, 201, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            for (int i = 0; i < commands.Count; i++)
            {
                var r = batch.Results[i];
                w.WriteStartObject();
                if (commands[i].Patch != null)
                {
                    var outcome = batch.Patches[i]!;
                    var patched = outcome.Write;
                    w.WriteString("Type", "PATCH");
                    w.WriteString("Id", patched?.Id ?? commands[i].Id);
                    if (patched != null)
                    {
                        w.WriteString("ChangeVector", patched.ChangeVector);
                        w.WriteString("LastModified", JsonResponse.FormatDate(patched.LastModified));
                    }
                    else
                    {
                        w.WriteNull("ChangeVector");
                        w.WriteNull("LastModified");
                    }
                    w.WriteString("PatchStatus", outcome.Status.ToString());
                    w.WriteNull("Debug");
                    if (commands[i].ReturnDocument && outcome.Modified != null)
                    {
                        w.WritePropertyName("ModifiedDocument");
                        using var modified = JsonDocument.Parse(outcome.Modified);
                        modified.RootElement.WriteTo(w);
                    }
                }
                else if (commands[i].IsPut)
                {
                    w.WriteString("Type", "PUT");
                    w.WriteString("@id", r.Id);
                    if (r.Collection != Collections.Empty)
                        w.WriteString("@collection", r.Collection);
                    w.WriteString("@change-vector", r.ChangeVector);
                    w.WriteString("@last-modified", JsonResponse.FormatDate(r.LastModified));
                }
                else
                {
                    w.WriteString("Type", "DELETE");
                    w.WriteString("Id", r.Id);
                    w.WriteBoolean("Deleted", r.Deleted);
                    if (r.Deleted)
                        w.WriteString("ChangeVector", r.ChangeVector);
                    else
                        w.WriteNull("ChangeVector");
                }
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    /// <summary>Checks every command; each PUT's document is validated and prepared into <paramref name="prepared"/> (so a bad one fails the whole batch before anything is written).</summary>
    private static List<BatchItem> ParseCommands(JsonElement root, DocumentsStorage documents, ServerOptions options, ArrayBufferWriter<byte> prepared)
    {
        if (root.ValueKind != JsonValueKind.Object || !root.TryGetProperty("Commands", out var arr) || arr.ValueKind != JsonValueKind.Array)
            throw ApiException.BadRequest("Body must be {\"Commands\":[...]}.");
        if (root.TryGetProperty("TransactionMode", out var mode) && mode.ValueKind == JsonValueKind.String && mode.GetString() == "ClusterWide")
            throw ApiException.BadRequest("Cluster-wide transactions are not supported: RavenLite is a single node. Use the default (single node) transaction mode.");
        var list = new List<BatchItem>();
        int index = 0;
        foreach (var c in arr.EnumerateArray())
        {
            if (c.ValueKind != JsonValueKind.Object)
                throw ApiException.BadRequest($"Commands[{index}] must be an object.");
            string type = c.TryGetProperty("Type", out var t) && t.ValueKind == JsonValueKind.String ? t.GetString()! : throw ApiException.BadRequest($"Commands[{index}] has no Type.");
            string id = c.TryGetProperty("Id", out var i) && i.ValueKind == JsonValueKind.String ? i.GetString()! : throw ApiException.BadRequest($"Commands[{index}] ({type}) has no Id.");
            string? cv = null;
            if (c.TryGetProperty("ChangeVector", out var v))
                cv = v.ValueKind switch
                {
                    JsonValueKind.Null => null,
                    JsonValueKind.String => v.GetString(),
                    _ => throw ApiException.BadRequest($"Commands[{index}].ChangeVector must be a string or null."),
                };
            switch (type)
            {
                case "PUT":
                    if (!c.TryGetProperty("Document", out var doc) || doc.ValueKind != JsonValueKind.Object)
                        throw ApiException.BadRequest($"Commands[{index}] (PUT {id}) needs a Document object.");
                    var raw = System.Runtime.InteropServices.JsonMarshal.GetRawUtf8Value(doc);
                    if (raw.Length > options.MaxDocumentBytes)
                        throw ApiException.TooLarge($"Document '{id}' is over the limit of {options.MaxDocumentBytes} bytes (MaxDocumentBytes).");
                    documents.ValidateIdToWrite(id);
                    int start = prepared.WrittenCount;
                    int prefix = DocumentPreparer.Current.Prepare(raw, prepared, out string collection);
                    list.Add(new BatchItem(true, id, collection, start, prepared.WrittenCount - start, prefix, cv));
                    break;
                case "DELETE":
                    documents.ValidateId(id);
                    list.Add(new BatchItem(false, id, "", 0, 0, 0, cv));
                    break;
                case "PATCH":
                    documents.ValidateIdToWrite(id);
                    var patch = Operations.DocumentPatch.Parse(c.TryGetProperty("Patch", out var p) ? p : default,
                        c.TryGetProperty("PatchIfMissing", out var pm) ? pm : default, c.TryGetProperty("CreateIfMissing", out var cm) ? cm : default, $"Commands[{index}] (PATCH {id})",
                        Operations.PatchLimits.Of(options));
                    bool returnDocument = c.TryGetProperty("ReturnDocument", out var rd) && rd.ValueKind == JsonValueKind.True;
                    list.Add(new BatchItem(false, id, "", 0, 0, 0, cv) { Patch = patch, ReturnDocument = returnDocument });
                    break;
                default:
                    throw ApiException.BadRequest($"Commands[{index}] has Type '{type}', which RavenLite does not support (PUT, DELETE and PATCH are).");
            }
            index++;
        }
        return list;
    }

    /// <summary>A command; a PUT's prepared document is <c>prepared[Start..Start+Length]</c> with a prefix of <c>Prefix</c> bytes.</summary>
    private sealed record BatchItem(bool IsPut, string Id, string Collection, int Start, int Length, int Prefix, string? ChangeVector)
    {
        /// <summary>A PATCH command's patch, else null.</summary>
        public Operations.DocumentPatch? Patch { get; init; }

        /// <summary>PATCH: answer with the patched document (the session had it loaded).</summary>
        public bool ReturnDocument { get; init; }
    }

    private sealed class BatchCommand(List<BatchItem> items, ArrayBufferWriter<byte> prepared, long bytes) : MergedCommand
    {
        public WriteResult[] Results { get; } = new WriteResult[items.Count];

        public Operations.DocumentPatch.Outcome?[] Patches { get; } = new Operations.DocumentPatch.Outcome?[items.Count];

        public override int Operations => Math.Max(1, items.Count);

        public override long Bytes => bytes;

        public override void Execute(DocumentsWriteContext context)
        {
            // Re-runnable: the merger may run it again alone after a rollback.
            for (int i = 0; i < items.Count; i++)
            {
                var item = items[i];
                if (item.Patch != null)
                {
                    Patches[i] = item.Patch.Apply(context, item.Id, item.ChangeVector, skipOnMismatch: false);
                    continue;
                }
                Results[i] = item.IsPut
                    ? context.Put(context.ResolveId(item.Id), item.Collection, prepared.WrittenSpan.Slice(item.Start, item.Length), item.Prefix, item.ChangeVector)
                    : context.Delete(item.Id, item.ChangeVector);
            }
        }
    }
}
