using System.Buffers;
using System.Text.Json;
using RavenLite.Server.Counters;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Hosting;
using RavenLite.Server.Http;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// <c>POST /databases/{db}/bulk_docs</c> (PROTOCOL.md §5): a session's SaveChanges. Every command of
/// the batch (PUT, DELETE, PATCH, Counters) is applied in one transaction or none is (a failed
/// change-vector check answers 409, a failing patch script 400, and nothing is written).
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
        var batch = new BatchCommand(commands, body.Length);
        try
        {
            await db.Merger.EnqueueAsync(batch).ConfigureAwait(false);
        }
        finally
        {
            foreach (var c in commands)
                (c as PatchItem)?.Patch.Dispose();
        }
        await JsonResponse.WriteAsync(context, 201, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var c in commands)
            {
                w.WriteStartObject();
                c.WriteResult(w);
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
                    list.Add(new PutItem(id, cv, collection, start, prepared.WrittenCount - start, prefix, prepared));
                    break;
                case "DELETE":
                    documents.ValidateId(id);
                    list.Add(new DeleteItem(id, cv));
                    break;
                case "PATCH":
                    documents.ValidateIdToWrite(id);
                    var patch = Operations.DocumentPatch.Parse(c.TryGetProperty("Patch", out var p) ? p : default,
                        c.TryGetProperty("PatchIfMissing", out var pm) ? pm : default, c.TryGetProperty("CreateIfMissing", out var cm) ? cm : default, $"Commands[{index}] (PATCH {id})",
                        Operations.PatchLimits.Of(options));
                    bool returnDocument = c.TryGetProperty("ReturnDocument", out var rd) && rd.ValueKind == JsonValueKind.True;
                    list.Add(new PatchItem(id, cv, patch, returnDocument));
                    break;
                case "Counters":
                    var counters = CounterBatch.Parse(c.TryGetProperty("Counters", out var co) ? co : default, $"Commands[{index}].Counters", documents);
                    list.Add(new CountersItem(id, counters));
                    break;
                default:
                    throw ApiException.BadRequest($"Commands[{index}] has Type '{type}', which RavenLite does not support (PUT, DELETE, PATCH and Counters are).");
            }
            index++;
        }
        return list;
    }

    /// <summary>One command of a batch: applied in the batch's transaction (re-runnable), then its result written.</summary>
    private abstract class BatchItem(string id, string? changeVector)
    {
        public string Id { get; } = id;

        public string? ChangeVector { get; } = changeVector;

        public abstract void Execute(DocumentsWriteContext context);

        /// <summary>Writes the properties of this command's entry in <c>Results</c>.</summary>
        public abstract void WriteResult(Utf8JsonWriter w);
    }

    /// <summary>A PUT; its prepared document is <c>prepared[start..start+length]</c> with a prefix of <c>prefix</c> bytes.</summary>
    private sealed class PutItem(string id, string? cv, string collection, int start, int length, int prefix, ArrayBufferWriter<byte> prepared) : BatchItem(id, cv)
    {
        private WriteResult? _result;

        public override void Execute(DocumentsWriteContext context) =>
            _result = context.Put(context.ResolveId(Id), collection, prepared.WrittenSpan.Slice(start, length), prefix, ChangeVector);

        public override void WriteResult(Utf8JsonWriter w)
        {
            var r = _result!;
            w.WriteString("Type", "PUT");
            w.WriteString("@id", r.Id);
            if (r.Collection != Collections.Empty)
                w.WriteString("@collection", r.Collection);
            w.WriteString("@change-vector", r.ChangeVector);
            w.WriteString("@last-modified", JsonResponse.FormatDate(r.LastModified));
        }
    }

    private sealed class DeleteItem(string id, string? cv) : BatchItem(id, cv)
    {
        private WriteResult? _result;

        public override void Execute(DocumentsWriteContext context) => _result = context.Delete(Id, ChangeVector);

        public override void WriteResult(Utf8JsonWriter w)
        {
            var r = _result!;
            w.WriteString("Type", "DELETE");
            w.WriteString("Id", r.Id);
            w.WriteBoolean("Deleted", r.Deleted);
            if (r.Deleted)
                w.WriteString("ChangeVector", r.ChangeVector);
            else
                w.WriteNull("ChangeVector");
        }
    }

    /// <summary>A PATCH; <c>returnDocument</c>: answer with the patched document (the session had it loaded).</summary>
    private sealed class PatchItem(string id, string? cv, Operations.DocumentPatch patch, bool returnDocument) : BatchItem(id, cv)
    {
        private Operations.DocumentPatch.Outcome? _outcome;

        public Operations.DocumentPatch Patch { get; } = patch;

        public override void Execute(DocumentsWriteContext context) => _outcome = Patch.Apply(context, Id, ChangeVector, skipOnMismatch: false);

        public override void WriteResult(Utf8JsonWriter w)
        {
            var outcome = _outcome!;
            var patched = outcome.Write;
            w.WriteString("Type", "PATCH");
            w.WriteString("Id", patched?.Id ?? Id);
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
            if (returnDocument && outcome.Modified != null)
            {
                w.WritePropertyName("ModifiedDocument");
                using var modified = JsonDocument.Parse(outcome.Modified);
                modified.RootElement.WriteTo(w);
            }
        }
    }

    /// <summary>A <c>Counters</c> command: a document's counter operations.</summary>
    private sealed class CountersItem(string id, CounterBatch counters) : BatchItem(id, null)
    {
        public override void Execute(DocumentsWriteContext context) => counters.Apply(context);

        public override void WriteResult(Utf8JsonWriter w)
        {
            w.WriteString("Type", "Counters");
            w.WriteString("Id", counters.DocumentId);
            w.WritePropertyName("CountersDetail");
            CounterBatch.WriteDetails(w, counters.Results, full: false);
            if (counters.DocumentChangeVector != null)
                w.WriteString("DocumentChangeVector", counters.DocumentChangeVector);
        }
    }

    private sealed class BatchCommand(List<BatchItem> items, long bytes) : MergedCommand
    {
        public override int Operations => Math.Max(1, items.Count);

        public override long Bytes => bytes;

        // Re-runnable: the merger may run it again alone after a rollback.
        public override void Execute(DocumentsWriteContext context)
        {
            foreach (var item in items)
                item.Execute(context);
        }
    }
}
