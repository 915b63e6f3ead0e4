using RavenLite.Server.Attachments;
using RavenLite.Server.CompareExchange;
using RavenLite.Server.Configuration;
using RavenLite.Server.Counters;
using RavenLite.Server.Documents;

namespace RavenLite.Server.Batches;

/// <summary>
/// Reads the commands of a <c>bulk_docs</c> batch (docs/protocol.md §5) into <see cref="BatchItem"/>s, checking every
/// one first: a bad command fails the whole batch before anything is written.
/// </summary>
internal static class BatchParser
{
    // Kept whole: one case per command type of a batch, each checking its own fields.
    /// <summary>Checks every command; each PUT's document is validated and prepared into <paramref name="prepared"/> (so a bad one fails the whole batch before anything is written).</summary>
    public static List<BatchItem> Parse(JsonElement root, DocumentsStorage documents, ServerOptions options, ArrayBufferWriter<byte> prepared, bool clusterWide,
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
            // A PUT without an id (null, or empty) is given one by the server, as PUT /docs?id= is (a GUID).
            string id = c.TryGetProperty("Id", out var i) && i.ValueKind == JsonValueKind.String ? i.GetString()!
                : type == "PUT" && i.ValueKind is JsonValueKind.Null or JsonValueKind.Undefined ? ""
                : type == "BatchPATCH" ? "" // its documents are its Ids
                : throw new BadRequestException($"Commands[{index}] ({type}) has no Id.");
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
                case "DELETE" when c.TryGetProperty("IdPrefixed", out var prefixed) && prefixed.ValueKind == JsonValueKind.True:
                    documents.ValidateId(id);
                    list.Add(new DeletePrefixedItem(id));
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
                case "BatchPATCH":
                {
                    if (!c.TryGetProperty("Ids", out var ids) || ids.ValueKind != JsonValueKind.Array || ids.GetArrayLength() == 0)
                        throw new BadRequestException($"Commands[{index}] (BatchPATCH) needs Ids: [{{\"Id\": .., \"ChangeVector\": ..}}, ..].");
                    var targets = new List<(string, string?)>();
                    foreach (var entry in ids.EnumerateArray())
                    {
                        string? target = entry.ValueKind == JsonValueKind.Object && entry.TryGetProperty("Id", out var ti) && ti.ValueKind == JsonValueKind.String ? ti.GetString() : null;
                        if (string.IsNullOrWhiteSpace(target))
                            throw new BadRequestException($"Commands[{index}] (BatchPATCH): each of Ids needs an Id.");
                        documents.ValidateIdToWrite(target);
                        targets.Add((target, entry.TryGetProperty("ChangeVector", out var tcv) && tcv.ValueKind == JsonValueKind.String ? tcv.GetString() : null));
                    }
                    var batchPatch = Operations.DocumentPatch.Parse(c.TryGetProperty("Patch", out var bp) ? bp : default,
                        c.TryGetProperty("PatchIfMissing", out var bpm) ? bpm : default, default, $"Commands[{index}] (BatchPATCH)", Operations.PatchLimits.Of(options));
                    list.Add(new BatchPatchItem(targets, batchPatch));
                    break;
                }
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
                    throw new BadRequestException($"Commands[{index}] has Type '{type}', which RavenLite does not support (PUT, DELETE, PATCH, BatchPATCH, Counters, AttachmentPUT, AttachmentDELETE, AttachmentCOPY, AttachmentMOVE, TimeSeries and ForceRevisionCreation are).");
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
}
