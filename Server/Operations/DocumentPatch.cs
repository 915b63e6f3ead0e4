using RavenLite.Server.Documents;

namespace RavenLite.Server.Operations;

/// <summary>
/// One document patched inside a merged transaction (RavenDB's PATCH command in <c>bulk_docs</c> and
/// <c>PATCH /docs</c>): the script (<see cref="PatchScript"/>) runs on the document as the transaction sees it and
/// the result is written only when it changed; a missing document runs <c>PatchIfMissing</c> on an empty one, or
/// stores <c>CreateIfMissing</c>, or reports <c>DocumentDoesNotExist</c>. A change vector that does not match is a 409
/// (or, when asked, the patch is skipped). Deterministic, so the merger may run it again after a rollback.
/// </summary>
internal sealed class DocumentPatch : IDisposable
{
    private readonly PatchScript _patch;
    private readonly PatchScript? _ifMissing;
    private readonly byte[]? _createIfMissing;

    private DocumentPatch(PatchScript patch, PatchScript? ifMissing, byte[]? createIfMissing) => (_patch, _ifMissing, _createIfMissing) = (patch, ifMissing, createIfMissing);

    /// <summary>The patch's status as RavenDB names it.</summary>
    public enum Status { DocumentDoesNotExist, Created, Patched, Skipped, NotModified }

    /// <summary>The outcome: status, the write (null when nothing was written), the document before and after, the script's output(...).</summary>
    public sealed record Outcome(Status Status, WriteResult? Write, byte[]? Original, byte[]? Modified)
    {
        public IReadOnlyList<string> Output { get; init; } = [];
    }

    /// <summary>Parses a <c>{Script, Values}</c> patch request and the optional ones (400 for a script that does not parse, naming its line).</summary>
    public static DocumentPatch Parse(JsonElement patch, JsonElement patchIfMissing, JsonElement createIfMissing, string where, PatchLimits limits)
    {
        PatchScript Script(JsonElement request, string where)
        {
            if (request.ValueKind != JsonValueKind.Object || !request.TryGetProperty("Script", out var script) || script.ValueKind != JsonValueKind.String)
                throw new BadRequestException($"{where} needs {{\"Script\":\"...\", \"Values\":{{...}}}}.");
            var values = request.TryGetProperty("Values", out var v) && v.ValueKind == JsonValueKind.Object ? v.Clone() : default;
            return PatchScript.Create(script.GetString()!, values, script.GetString()!, 0, limits);
        }
        var main = Script(patch, where);
        var ifMissing = patchIfMissing.ValueKind == JsonValueKind.Object ? Script(patchIfMissing, where + ".PatchIfMissing") : null;
        byte[]? create = createIfMissing.ValueKind == JsonValueKind.Object ? JsonSerializer.SerializeToUtf8Bytes(createIfMissing) : null;
        return new DocumentPatch(main, ifMissing, create);
    }

    /// <summary>Applies the patch to document <paramref name="id"/> in <paramref name="ctx"/>'s transaction (a failing script: 400 JavaScriptException, nothing written).</summary>
    public Outcome Apply(DocumentsWriteContext ctx, string id, string? expectedChangeVector, bool skipOnMismatch)
    {
        try
        {
            return ApplyCore(ctx, id, expectedChangeVector, skipOnMismatch);
        }
        catch (PatchException e)
        {
            throw new BadRequestException(e.Message, RavenExceptionTypes.JavaScript, e);
        }
    }

    private Outcome ApplyCore(DocumentsWriteContext ctx, string id, string? expectedChangeVector, bool skipOnMismatch)
    {
        var current = ctx.Get(id);
        if (current == null)
        {
            byte[]? created = _ifMissing != null ? _ifMissing.Run(new StoredDocument(id, Collections.Empty, 0, "", DateTime.UtcNow, "{}"u8.ToArray()), ctx.Get, (d, n) => CounterOf(ctx, d, n)) ?? "{}"u8.ToArray()
                : _createIfMissing;
            if (created == null)
                return new Outcome(Status.DocumentDoesNotExist, null, null, null);
            var write = ctx.Put(id, created, null);
            if (_ifMissing != null)
                ApplyEffects(ctx, _ifMissing);
            return new Outcome(Status.Created, write, null, ctx.Get(id)?.Json) { Output = _ifMissing?.Output.ToList() ?? [] };
        }
        if (expectedChangeVector != null && current.ChangeVector != expectedChangeVector)
        {
            if (skipOnMismatch)
                return new Outcome(Status.Skipped, null, current.Json, null);
            throw new ConcurrencyException($"Document {id} has change vector {current.ChangeVector}, not {expectedChangeVector}: the patch was not applied.");
        }
        var json = _patch.Run(current, ctx.Get, (d, n) => CounterOf(ctx, d, n));
        var result = json == null ? null : ctx.Put(id, json, null);
        ApplyEffects(ctx, _patch);
        var output = _patch.Output.ToList();
        return json == null
            ? new Outcome(Status.NotModified, null, current.Json, current.Json) { Output = output }
            : new Outcome(Status.Patched, result, current.Json, ctx.Get(id)?.Json) { Output = output };
    }

    /// <summary>Writes what the script's put(id, doc) and del(id) asked, in order, in the same transaction.</summary>
    internal static void ApplyEffects(DocumentsWriteContext ctx, PatchScript script) => ApplyEffects(ctx, script.Effects);

    /// <summary>Writes recorded effects (put, del, counter changes), in order; a counter of a missing document is a 400.</summary>
    internal static void ApplyEffects(DocumentsWriteContext ctx, IEnumerable<PatchEffect> effects)
    {
        foreach (var effect in effects)
        {
            if (effect.Counter != null)
                Counters.CounterBatch.Of(effect.Id, [new(effect.DeleteCounter ? Counters.CounterBatch.OpType.Delete : Counters.CounterBatch.OpType.Increment, effect.Counter, effect.Delta)]).Apply(ctx);
            else if (effect.Json == null)
                ctx.Delete(effect.Id, null);
            else
                ctx.Put(ctx.ResolveId(effect.Id), effect.Json, null);
        }
    }

    /// <summary>A counter of a document as the transaction has it (a script's <c>counter(doc, name)</c>).</summary>
    private static long? CounterOf(DocumentsWriteContext ctx, string id, string name) =>
        ctx.Find(id) is var (storedId, _) ? Counters.CountersStore.Get(ctx.Transaction, ctx.KeyOf(storedId), name)?.Value : null;

    public void Dispose()
    {
        _patch.Dispose();
        _ifMissing?.Dispose();
    }
}
