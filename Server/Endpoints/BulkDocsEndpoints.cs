using RavenLite.Server.Formatting;
using RavenLite.Server.Configuration;
using RavenLite.Server.Errors;
using System.Buffers;
using System.Text.Json;
using RavenLite.Server.Attachments;
using RavenLite.Server.CompareExchange;
using RavenLite.Server.Counters;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Hosting;
using RavenLite.Server.Http;
using RavenLite.Server.TransactionMerger;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// <c>POST /databases/{db}/bulk_docs</c> (PROTOCOL.md §5): a session's SaveChanges. Every command of
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
        var boundary = Microsoft.Net.Http.Headers.HeaderUtilities.RemoveQuotes(
            Microsoft.Net.Http.Headers.MediaTypeHeaderValue.Parse(contentType).Boundary).Value;
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
        catch (IOException e) when (!context.RequestAborted.IsCancellationRequested)
        {
            throw new BadRequestException("Malformed multipart batch: " + e.Message);
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
        var commands = ParseCommands(json.RootElement, db.Documents, options, prepared, clusterWide, streams);
        bool atomicWrites = clusterWide && !string.Equals(RequestParsing.Query(context.Request, "disableAtomicDocumentWrites"), "true", StringComparison.OrdinalIgnoreCase);
        var batch = new BatchCommand(commands, body.Length, clusterWide, atomicWrites);
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
            if (clusterWide)
                w.WriteNumber("TransactionIndex", batch.TransactionIndex);
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    /// <summary>Checks every command; each PUT's document is validated and prepared into <paramref name="prepared"/> (so a bad one fails the whole batch before anything is written).</summary>
    private static List<BatchItem> ParseCommands(JsonElement root, DocumentsStorage documents, ServerOptions options, ArrayBufferWriter<byte> prepared, bool clusterWide,
        List<StagedContent> streams)
    {
        int nextStream = 0;
        if (root.ValueKind != JsonValueKind.Object || !root.TryGetProperty("Commands", out var arr) || arr.ValueKind != JsonValueKind.Array)
            throw new BadRequestException("Body must be {\"Commands\":[...]}.");
        var list = new List<BatchItem>();
        int index = 0;
        foreach (var c in arr.EnumerateArray())
        {
            if (c.ValueKind != JsonValueKind.Object)
                throw new BadRequestException($"Commands[{index}] must be an object.");
            string type = c.TryGetProperty("Type", out var t) && t.ValueKind == JsonValueKind.String ? t.GetString()! : throw new BadRequestException($"Commands[{index}] has no Type.");
            string id = c.TryGetProperty("Id", out var i) && i.ValueKind == JsonValueKind.String ? i.GetString()! : throw new BadRequestException($"Commands[{index}] ({type}) has no Id.");
            string? cv = null;
            if (c.TryGetProperty("ChangeVector", out var v))
                cv = v.ValueKind switch
                {
                    JsonValueKind.Null => null,
                    JsonValueKind.String => v.GetString(),
                    _ => throw new BadRequestException($"Commands[{index}].ChangeVector must be a string or null."),
                };
            string? originalCv = c.TryGetProperty("OriginalChangeVector", out var ocv) && ocv.ValueKind == JsonValueKind.String ? ocv.GetString() : null;
            if (clusterWide && type is not ("PUT" or "DELETE" or "CompareExchangePUT" or "CompareExchangeDELETE"))
                throw new BadRequestException($"Commands[{index}] has Type '{type}', which a cluster-wide transaction cannot hold (PUT, DELETE, CompareExchangePUT and CompareExchangeDELETE).");
            if (!clusterWide && type is "CompareExchangePUT" or "CompareExchangeDELETE")
                throw new BadRequestException($"Commands[{index}] ({type}) needs a cluster-wide transaction (TransactionMode: ClusterWide).");
            switch (type)
            {
                case "CompareExchangePUT":
                    CompareExchangeStore.ValidateKey(id);
                    if (id.StartsWith(CompareExchangeStore.AtomicGuardPrefix, StringComparison.OrdinalIgnoreCase))
                        throw new BadRequestException($"Commands[{index}]: '{id}' is an atomic guard; it cannot be written directly.");
                    list.Add(new CompareExchangeItem(id, RequiredIndex(c, index),
                        CompareExchangeStore.ValidateValue(c.TryGetProperty("Document", out var value) ? value : default, $"Commands[{index}] (CompareExchangePUT {id})")));
                    break;
                case "CompareExchangeDELETE":
                    CompareExchangeStore.ValidateKey(id);
                    list.Add(new CompareExchangeItem(id, RequiredIndex(c, index), null));
                    break;
                case "PUT":
                    if (!c.TryGetProperty("Document", out var doc) || doc.ValueKind != JsonValueKind.Object)
                        throw new BadRequestException($"Commands[{index}] (PUT {id}) needs a Document object.");
                    var raw = System.Runtime.InteropServices.JsonMarshal.GetRawUtf8Value(doc);
                    if (raw.Length > options.MaxDocumentBytes)
                        throw new TooLargeException($"Document '{id}' is over the limit of {options.MaxDocumentBytes} bytes (MaxDocumentBytes).");
                    documents.ValidateIdToWrite(id);
                    int start = prepared.WrittenCount;
                    int prefix = DocumentPreparer.Current.Prepare(raw, prepared, out string collection);
                    list.Add(new PutItem(id, cv, collection, start, prepared.WrittenCount - start, prefix, prepared) { OriginalChangeVector = originalCv });
                    break;
                case "DELETE":
                    documents.ValidateId(id);
                    list.Add(new DeleteItem(id, cv) { OriginalChangeVector = originalCv ?? cv });
                    break;
                case "PATCH":
                    documents.ValidateIdToWrite(id);
                    var patch = Operations.DocumentPatch.Parse(c.TryGetProperty("Patch", out var p) ? p : default,
                        c.TryGetProperty("PatchIfMissing", out var pm) ? pm : default, c.TryGetProperty("CreateIfMissing", out var cm) ? cm : default, $"Commands[{index}] (PATCH {id})",
                        Operations.PatchLimits.Of(options));
                    bool returnDocument = c.TryGetProperty("ReturnDocument", out var rd) && rd.ValueKind == JsonValueKind.True;
                    list.Add(new PatchItem(id, cv, patch, returnDocument));
                    break;
                case "AttachmentPUT":
                {
                    documents.ValidateId(id);
                    string name = Name(c, "Name", index);
                    if (nextStream >= streams.Count)
                        throw new BadRequestException($"Commands[{index}] (AttachmentPUT {id}/{name}) has no content: send the batch as multipart/form-data with one part per AttachmentPUT after the commands.");
                    string? contentType = c.TryGetProperty("ContentType", out var ct) && ct.ValueKind == JsonValueKind.String ? ct.GetString() : null;
                    list.Add(new AttachmentItem(id, cv, AttachmentItem.Kind.Put, name, null, null, contentType, streams[nextStream++]));
                    break;
                }
                case "AttachmentDELETE":
                    documents.ValidateId(id);
                    list.Add(new AttachmentItem(id, cv, AttachmentItem.Kind.Delete, Name(c, "Name", index), null, null, null, null));
                    break;
                case "AttachmentCOPY":
                case "AttachmentMOVE":
                {
                    documents.ValidateId(id);
                    string destination = c.TryGetProperty("DestinationId", out var d) && d.ValueKind == JsonValueKind.String ? d.GetString()! : throw new BadRequestException($"Commands[{index}] ({type}) has no DestinationId.");
                    documents.ValidateId(destination);
                    list.Add(new AttachmentItem(id, cv, type == "AttachmentCOPY" ? AttachmentItem.Kind.Copy : AttachmentItem.Kind.Move,
                        Name(c, "Name", index), destination, Name(c, "DestinationName", index), null, null));
                    break;
                }
                case "TimeSeries":
                case "TimeSeriesWithIncrements":
                    documents.ValidateId(id);
                    list.Add(new TimeSeriesItem(id, TimeSeries.TimeSeriesOperation.Parse(c.TryGetProperty("TimeSeries", out var ts) ? ts : default, $"Commands[{index}].TimeSeries")));
                    break;
                case "ForceRevisionCreation":
                    documents.ValidateId(id);
                    list.Add(new ForceRevisionItem(id));
                    break;
                case "Counters":
                    var counters = CounterBatch.Parse(c.TryGetProperty("Counters", out var co) ? co : default, $"Commands[{index}].Counters", documents);
                    list.Add(new CountersItem(id, counters));
                    break;
                default:
                    throw new BadRequestException($"Commands[{index}] has Type '{type}', which RavenLite does not support (PUT, DELETE, PATCH, Counters, AttachmentPUT, AttachmentDELETE, AttachmentCOPY, AttachmentMOVE, TimeSeries and ForceRevisionCreation are).");
            }
            index++;
        }
        if (nextStream != streams.Count)
            throw new BadRequestException($"The batch sent {streams.Count} attachment streams for {nextStream} AttachmentPUT commands.");
        return list;
    }

    private static string Name(JsonElement c, string property, int index)
    {
        string? name = c.TryGetProperty(property, out var n) && n.ValueKind == JsonValueKind.String ? n.GetString() : null;
        if (name == null)
            throw new BadRequestException($"Commands[{index}] has no {property}.");
        AttachmentsStore.ValidateName(name);
        return name;
    }

    private static long RequiredIndex(JsonElement c, int index) =>
        c.TryGetProperty("Index", out var i) && i.ValueKind == JsonValueKind.Number && i.TryGetInt64(out long n) && n >= 0 ? n
            : throw new BadRequestException($"Commands[{index}] needs Index, the compare-exchange value's current index (0 for a new key).");

    /// <summary>One command of a batch: applied in the batch's transaction (re-runnable), then its result written.</summary>
    private abstract class BatchItem(string id, string? changeVector)
    {
        public string Id { get; } = id;

        public string? ChangeVector { get; } = changeVector;

        /// <summary>A document command in a cluster-wide transaction: the change vector the session loaded (null: it expects a new document).</summary>
        public string? OriginalChangeVector { get; init; }

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
            w.WriteString("@last-modified", JsonDates.FormatDate(r.LastModified));
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
                w.WriteString("LastModified", JsonDates.FormatDate(patched.LastModified));
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

    /// <summary>An attachment command: PUT (content staged from the multipart batch), DELETE, COPY or MOVE.</summary>
    private sealed class AttachmentItem(string id, string? cv, AttachmentItem.Kind kind, string name, string? destinationId, string? destinationName,
        string? contentType, StagedContent? content) : BatchItem(id, cv)
    {
        public enum Kind { Put, Delete, Copy, Move }

        private AttachmentWrite? _write;
        private string? _deleteChangeVector;

        public override void Execute(DocumentsWriteContext context)
        {
            switch (kind)
            {
                case Kind.Put:
                    _write = AttachmentOperations.Put(context, Id, name, contentType, content!, ChangeVector);
                    break;
                case Kind.Delete:
                    _deleteChangeVector = AttachmentOperations.Delete(context, Id, name, ChangeVector)?.ChangeVector;
                    break;
                case Kind.Copy:
                    _write = AttachmentOperations.Copy(context, Id, name, destinationId!, destinationName!, ChangeVector);
                    break;
                case Kind.Move:
                    _write = AttachmentOperations.Move(context, Id, name, destinationId!, destinationName!, ChangeVector);
                    break;
            }
        }

        public override void WriteResult(Utf8JsonWriter w)
        {
            switch (kind)
            {
                case Kind.Delete:
                    w.WriteString("Type", "AttachmentDELETE");
                    w.WriteString("@id", Id);
                    w.WriteString("Name", name);
                    if (_deleteChangeVector != null)
                        w.WriteString("DocumentChangeVector", _deleteChangeVector);
                    return;
                case Kind.Put:
                    w.WriteString("Type", "AttachmentPUT");
                    w.WriteString("@id", _write!.DocumentId);
                    w.WriteString("Id", _write.DocumentId);
                    break;
                case Kind.Copy:
                    w.WriteString("Type", "AttachmentCOPY");
                    w.WriteString("Id", _write!.DocumentId);
                    break;
                case Kind.Move:
                    w.WriteString("Type", "AttachmentMOVE");
                    w.WriteString("Id", Id);
                    w.WriteString("DestinationId", _write!.DocumentId);
                    w.WriteString("DestinationName", _write.Name);
                    break;
            }
            var write = _write!;
            w.WriteString("Name", kind == Kind.Move ? name : write.Name);
            w.WriteString("ChangeVector", write.DocumentChangeVector);
            w.WriteString("DocumentChangeVector", write.DocumentChangeVector);
            w.WriteString("Hash", write.Info.Hash);
            w.WriteString("ContentType", write.Info.ContentType);
            w.WriteNumber("Size", write.Info.Size);
        }
    }

    /// <summary>A <c>TimeSeries</c> command: appends, deletes and increments of one series of a document.</summary>
    private sealed class TimeSeriesItem(string id, TimeSeries.TimeSeriesOperation operation) : BatchItem(id, null)
    {
        public override void Execute(DocumentsWriteContext context) => operation.Apply(context, Id);

        public override void WriteResult(Utf8JsonWriter w)
        {
            w.WriteString("Type", "TimeSeries");
            w.WriteString("Id", Id);
        }
    }

    /// <summary>A <c>ForceRevisionCreation</c> command: a revision of the document's current version, whatever the configuration.</summary>
    private sealed class ForceRevisionItem(string id) : BatchItem(id, null)
    {
        private bool _created;
        private StoredDocument? _document;

        public override void Execute(DocumentsWriteContext context)
        {
            _created = Revisions.RevisionsExtension.Force(context, Id);
            _document = _created ? context.Get(Id) : null;
        }

        public override void WriteResult(Utf8JsonWriter w)
        {
            w.WriteString("Type", "ForceRevisionCreation");
            w.WriteBoolean("RevisionCreated", _created);
            if (_document is not { } d)
            {
                w.WriteString("Id", Id);
                return;
            }
            // The document's metadata as it is now (with HasRevisions): the session takes it over.
            using var parsed = JsonDocument.Parse(d.Json);
            foreach (var p in parsed.RootElement.GetProperty("@metadata").EnumerateObject())
                p.WriteTo(w);
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

    /// <summary>A CompareExchangePUT (with its value) or CompareExchangeDELETE (<c>json</c> null) of a cluster-wide transaction.</summary>
    private sealed class CompareExchangeItem(string key, long index, byte[]? json) : BatchItem(key, null)
    {
        public long ExpectedIndex { get; } = index;

        private long _index;

        /// <summary>Null when the key's index is <see cref="ExpectedIndex"/>, else what is wrong.</summary>
        public string? Violation(DocumentsWriteContext context)
        {
            long current = CompareExchangeStore.Get(context.Transaction, Id)?.Index ?? 0;
            if (current == ExpectedIndex || (json == null && ExpectedIndex == 0 && current != 0))
                return null;
            return $"compare-exchange '{Id}': expected index {ExpectedIndex}, actual {current}";
        }

        public void Apply(DocumentsWriteContext context, long transactionIndex)
        {
            _index = transactionIndex;
            if (json != null)
                CompareExchangeStore.Put(context.Transaction, Id, ExpectedIndex, json, () => transactionIndex);
            else
                CompareExchangeStore.Delete(context.Transaction, Id, ExpectedIndex);
        }

        public override void Execute(DocumentsWriteContext context) => throw new InvalidOperationException("Compare-exchange commands run only in a cluster-wide batch.");

        public override void WriteResult(Utf8JsonWriter w)
        {
            w.WriteString("Type", json != null ? "CompareExchangePUT" : "CompareExchangeDELETE");
            w.WriteString("Key", Id);
            w.WriteNumber("Index", _index);
        }
    }

    private sealed class BatchCommand(List<BatchItem> items, long bytes, bool clusterWide, bool atomicWrites) : MergedCommand
    {
        public override int Operations => Math.Max(1, items.Count);

        public override long Bytes => bytes;

        /// <summary>A cluster-wide batch's transaction index (the index its compare-exchange values and atomic guards take).</summary>
        public long TransactionIndex { get; private set; }

        // Re-runnable: the merger may run it again alone after a rollback.
        public override void Execute(DocumentsWriteContext context)
        {
            if (clusterWide)
            {
                ExecuteClusterWide(context);
                return;
            }
            foreach (var item in items)
                item.Execute(context);
        }

        /// <summary>
        /// Checks every compare-exchange index and atomic guard first (any mismatch: 409 ClusterTransactionConcurrencyException
        /// naming each, and nothing is written), then applies the batch under one new transaction index.
        /// </summary>
        private void ExecuteClusterWide(DocumentsWriteContext context)
        {
            var violations = new List<string>();
            foreach (var item in items)
            {
                if (item is CompareExchangeItem cx)
                {
                    if (cx.Violation(context) is { } v)
                        violations.Add(v);
                }
                else if (atomicWrites && AtomicGuardViolation(context, item) is { } v)
                {
                    violations.Add(v);
                }
            }
            if (violations.Count > 0)
                throw new ConcurrencyException(
                    "Failed to execute cluster transaction due to the following issues: " + string.Join("; ", violations), RavenExceptionTypes.ClusterTransactionConcurrency);
            TransactionIndex = CompareExchangeStore.NextIndex(context.Transaction);
            foreach (var item in items)
            {
                if (item is CompareExchangeItem cx)
                {
                    cx.Apply(context, TransactionIndex);
                    continue;
                }
                item.Execute(context);
                if (atomicWrites && item is PutItem)
                    CompareExchangeStore.Put(context.Transaction, CompareExchangeStore.AtomicGuardOf(item.Id),
                        CompareExchangeStore.Get(context.Transaction, CompareExchangeStore.AtomicGuardOf(item.Id))?.Index ?? 0, GuardValue, () => TransactionIndex);
            }
        }

        private static readonly byte[] GuardValue = "{\"Object\":null}"u8.ToArray();

        /// <summary>
        /// A document written by a cluster-wide transaction has an atomic guard; a later cluster-wide write of it must
        /// name the change vector it loaded (a session that did not load it, or loaded an older version, loses the race).
        /// </summary>
        private static string? AtomicGuardViolation(DocumentsWriteContext context, BatchItem item)
        {
            if (CompareExchangeStore.Get(context.Transaction, CompareExchangeStore.AtomicGuardOf(item.Id)) == null)
                return null;
            string? current = context.Storage.ChangeVectorOf(context.Transaction, item.Id);
            if (current != null && string.Equals(current, item.OriginalChangeVector, StringComparison.Ordinal))
                return null;
            return item.OriginalChangeVector == null
                ? $"document '{item.Id}' was written by another cluster-wide transaction, but this one expected it to be new"
                : $"document '{item.Id}' has change vector {current ?? "(deleted)"}, but this cluster-wide transaction loaded {item.OriginalChangeVector}";
        }
    }
}
