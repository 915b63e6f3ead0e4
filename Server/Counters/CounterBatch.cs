using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Counters;

/// <summary>
/// The counter operations on one document (RavenDB's <c>DocumentCountersOperation</c>:
/// <c>{"DocumentId":..,"Operations":[{"Type":"Increment|Put|Delete|Get","CounterName":..,"Delta":..}]}</c>),
/// checked when parsed and applied in a write transaction. Applying creates, changes and removes
/// counters and keeps the document's <c>@counters</c> in step (a new document change vector only when
/// the set of names changes, as RavenDB). Re-runnable: the merger may run it again after a rollback.
/// </summary>
public sealed class CounterBatch
{
    /// <summary>An operation's kind.</summary>
    public enum OpType { Increment, Put, Delete, Get }

    /// <summary>One operation.</summary>
    public readonly record struct Op(OpType Type, string Name, long Delta);

    private CounterBatch(string documentId, List<Op> operations)
    {
        DocumentId = documentId;
        Operations = operations;
    }

    /// <summary>Operations already checked (a patch script's counter changes).</summary>
    public static CounterBatch Of(string documentId, List<Op> operations) => new(documentId, operations);

    /// <summary>The document whose counters change.</summary>
    public string DocumentId { get; }

    /// <summary>The operations, in order.</summary>
    public List<Op> Operations { get; }

    /// <summary>The details of the counters written or read by the last <see cref="Apply"/> (null for a missing one read).</summary>
    public List<CounterDetail?> Results { get; } = [];

    /// <summary>The document's change vector after the last <see cref="Apply"/>.</summary>
    public string? DocumentChangeVector { get; private set; }

    /// <summary>Parses a <c>DocumentCountersOperation</c>; 400 naming <paramref name="where"/> for anything malformed.</summary>
    public static CounterBatch Parse(JsonElement e, string where, DocumentsStorage documents)
    {
        if (e.ValueKind != JsonValueKind.Object)
            throw new BadRequestException($"{where} must be an object {{\"DocumentId\":..,\"Operations\":[..]}}.");
        string id = e.TryGetProperty(nameof(DocumentId), out var d) && d.ValueKind == JsonValueKind.String ? d.GetString()! : throw new BadRequestException($"{where} has no DocumentId.");
        documents.ValidateId(id);
        if (!e.TryGetProperty(nameof(Operations), out var ops) || ops.ValueKind != JsonValueKind.Array)
            throw new BadRequestException($"{where} (document '{id}') has no Operations array.");
        var list = new List<Op>();
        int i = 0;
        foreach (var o in ops.EnumerateArray())
        {
            string at = $"{where}.Operations[{i++}]";
            if (o.ValueKind != JsonValueKind.Object)
                throw new BadRequestException($"{at} must be an object.");
            string typeName = o.TryGetProperty("Type", out var t) && t.ValueKind == JsonValueKind.String ? t.GetString()! : throw new BadRequestException($"{at} has no Type.");
            if (!Enum.TryParse<OpType>(typeName, ignoreCase: false, out var type) || !Enum.IsDefined(type))
                throw new BadRequestException($"{at} has Type '{typeName}'; a counter operation is Increment, Put, Delete or Get.");
            string? name = o.TryGetProperty("CounterName", out var n) && n.ValueKind == JsonValueKind.String ? n.GetString() : null;
            if (name == null && (!o.TryGetProperty("CounterName", out var given) || given.ValueKind == JsonValueKind.Null))
                continue; // an operation on no counter: skipped, as RavenDB does
            CountersStore.ValidateName(name);
            long delta = 0;
            if (type is OpType.Increment or OpType.Put)
            {
                if (!o.TryGetProperty("Delta", out var dv) || dv.ValueKind == JsonValueKind.Null)
                    delta = type == OpType.Increment ? 1 : throw new BadRequestException($"{at} (Put '{name}') needs a Delta, the value to set.");
                else if (dv.ValueKind != JsonValueKind.Number || !dv.TryGetInt64(out delta))
                    throw new BadRequestException($"{at} ({type} '{name}') has Delta {dv.GetRawText()}; a counter delta is a 64-bit integer.");
            }
            list.Add(new Op(type, name!, delta));
        }
        return new CounterBatch(id, list);
    }

    /// <summary>Applies the operations in <paramref name="ctx"/>'s transaction; 400 (DocumentDoesNotExistException) when the document does not exist and an operation writes.</summary>
    public void Apply(DocumentsWriteContext ctx)
    {
        Results.Clear();
        var found = ctx.Find(DocumentId);
        if (found is not var (storedId, changeVector))
        {
            if (Operations.Any(o => o.Type != OpType.Get))
                throw new BadRequestException($"There is no document '{DocumentId}' (or it has been deleted), cannot operate on its counters.", RavenExceptionTypes.DocumentDoesNotExist);
            foreach (var _ in Operations)
                Results.Add(null);
            DocumentChangeVector = null;
            return;
        }
        var key = ctx.KeyOf(storedId);
        string? collection = ctx.Changes != null ? ctx.CollectionOf(storedId) : null; // for the changes API, when anyone listens
        var added = new List<string>();
        var removed = new List<string>();
        foreach (var op in Operations)
        {
            switch (op.Type)
            {
                case OpType.Increment:
                case OpType.Put:
                    // The total before: an increment's is its result less the delta (no second read on the increment path).
                    long? before = op.Type == OpType.Put ? CountersStore.Get(ctx.Transaction, key, op.Name)?.Value ?? 0 : null;
                    var (counter, created) = op.Type == OpType.Increment
                        ? CountersStore.Increment(ctx.Transaction, key, op.Name, op.Delta)
                        : CountersStore.Put(ctx.Transaction, key, op.Name, op.Delta);
                    CounterShares.Local(ctx, key, counter.Name, before ?? counter.Value - op.Delta, counter.Value, deleted: false);
                    if (created)
                        added.Add(counter.Name);
                    removed.RemoveAll(r => string.Equals(r, counter.Name, StringComparison.OrdinalIgnoreCase));
                    var detail = new CounterDetail(storedId, counter, ctx.Storage.LocalChangeVector(counter.Version));
                    Results.Add(detail);
                    ctx.Changes?.Add(new(Changes.ChangeKind.Counter, created || op.Type == OpType.Put ? "Put" : "Increment", storedId, collection, counter.Name, detail.ChangeVector, counter.Value));
                    break;
                case OpType.Delete:
                    if (CountersStore.Get(ctx.Transaction, key, op.Name) is { } gone && CountersStore.Delete(ctx.Transaction, key, op.Name))
                    {
                        CounterShares.Local(ctx, key, gone.Name, gone.Value, 0, deleted: true);
                        ctx.Changes?.Add(new(Changes.ChangeKind.Counter, "Delete", storedId, collection, op.Name, changeVector));
                        removed.Add(op.Name);
                        added.RemoveAll(a => string.Equals(a, op.Name, StringComparison.OrdinalIgnoreCase));
                    }
                    break;
                case OpType.Get:
                    Results.Add(CountersStore.Get(ctx.Transaction, key, op.Name) is { } c ? new CounterDetail(storedId, c, ctx.Storage.LocalChangeVector(c.Version)) : null);
                    break;
            }
        }
        DocumentChangeVector = changeVector;
        if (added.Count > 0 || removed.Count > 0)
        {
            var write = ctx.UpdateExtras(storedId, extras =>
            {
                bool changed = false;
                foreach (string r in removed)
                    changed |= extras.Counters.Remove(r);
                foreach (string a in added)
                    changed |= extras.Counters.Add(a);
                return changed;
            });
            if (write != null)
                DocumentChangeVector = write.ChangeVector;
        }
    }

    /// <summary>Writes <c>{"Counters":[...]}</c> (RavenDB's <c>CountersDetail</c>).</summary>
    public static void WriteDetails(Utf8JsonWriter w, IEnumerable<CounterDetail?> details, bool full)
    {
        w.WriteStartObject();
        w.WritePropertyName("Counters"u8);
        WriteDetailArray(w, details, full);
        w.WriteEndObject();
    }

    /// <summary>Writes an array of counter details.</summary>
    public static void WriteDetailArray(Utf8JsonWriter w, IEnumerable<CounterDetail?> details, bool full)
    {
        w.WriteStartArray();
        foreach (var d in details)
        {
            if (d == null)
                w.WriteNullValue();
            else
                d.Write(w, full);
        }
        w.WriteEndArray();
    }

    /// <summary>
    /// Details of the counters <paramref name="names"/> (all of them when empty) of document <paramref name="id"/>,
    /// as of <paramref name="tx"/>; a name with no counter gives null. Empty when the document does not exist.
    /// </summary>
    public static List<CounterDetail?> Read(Transaction tx, DocumentsStorage documents, string id, IReadOnlyCollection<string> names)
    {
        var result = new List<CounterDetail?>();
        var doc = documents.Get(tx, id);
        if (doc == null)
            return result;
        var key = documents.KeyOf(doc.Id);
        if (names.Count == 0)
        {
            foreach (var c in CountersStore.GetAll(tx, key))
                result.Add(new CounterDetail(doc.Id, c, documents.LocalChangeVector(c.Version)));
            return result;
        }
        // A counter asked for by name is answered under the name as asked (RavenDB's casing of the answer), any casing matching.
        foreach (string name in names)
            result.Add(string.IsNullOrEmpty(name) ? null : CountersStore.Get(tx, key, name) is { } c ? new CounterDetail(doc.Id, c with { Name = name }, documents.LocalChangeVector(c.Version)) : null);
        return result;
    }
}

/// <summary>One counter as the clients read it (RavenDB's <c>CounterDetail</c>).</summary>
/// <param name="DocumentId">The document's id.</param>
/// <param name="Counter">The counter as stored.</param>
/// <param name="ChangeVector">The counter's change vector: its version on this node.</param>
public sealed record CounterDetail(string DocumentId, CountersStore.Counter Counter, string ChangeVector)
{
    /// <summary>Writes <c>{"DocumentId","CounterName","TotalValue","Etag","CounterValues","ChangeVector"}</c>; <c>CounterValues</c> (per node) only when <paramref name="full"/>.</summary>
    public void Write(Utf8JsonWriter w, bool full)
    {
        w.WriteStartObject();
        w.WriteString("DocumentId"u8, DocumentId);
        w.WriteString("CounterName"u8, Counter.Name);
        w.WriteNumber("TotalValue"u8, Counter.Value);
        w.WriteNumber("Etag"u8, Counter.Version);
        if (full)
        {
            w.WriteStartObject("CounterValues"u8);
            w.WriteNumber(ChangeVector, Counter.Value);
            w.WriteEndObject();
        }
        else
        {
            w.WriteNull("CounterValues"u8);
        }
        w.WriteString("ChangeVector"u8, ChangeVector);
        w.WriteEndObject();
    }
}
