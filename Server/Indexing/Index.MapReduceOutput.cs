using Lucene.Net.Documents;
using Lucene.Net.Index;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Indexing;

/// <summary>Map-reduce output: reducing changed keys, their entries, and the artificial documents of OutputReduceToCollection.</summary>
public sealed partial class Index
{
    /// <summary>
    /// Map-reduce: the new reduce results of each changed key (hash hex), stored in <paramref name="tx"/>: from the key's
    /// stored reduce results and its added map results when it only gained some, else from all its map results.
    /// </summary>
    private List<(string Hash, List<byte[]> Outputs)> ReduceKeys(WriteTransaction tx, Dictionary<string, MapReduceStore.KeyChange> changes)
    {
        var reduced = new List<(string, List<byte[]>)>(changes.Count);
        foreach (var (hash, change) in changes)
        {
            List<byte[]> outputs;
            try
            {
                var previous = change.Full ? null : _mapReduce!.Reduced(tx, hash);
                outputs = previous != null ? Compiled.Reduce([previous, .. change.Added]) : Compiled.Reduce(_mapReduce!.Results(tx, hash));
            }
            catch (IndexMapException e)
            {
                RecordError(null, e.Message);
                outputs = [];
            }
            _mapReduce!.SetReduced(tx, hash, outputs.Count == 0 ? null : CompiledIndex.JsonArray(outputs));
            reduced.Add((hash, outputs));
        }
        return reduced;
    }

    private void WriteArtificialDocuments(string collection, List<(string Hash, List<byte[]> Outputs)> reduced)
    {
        var byKey = new List<(string Id, List<(string Id, byte[]? Json)> Outputs)>();
        foreach (var (hash, outputs) in reduced)
        {
            string id = collection + "/" + hash.ToLowerInvariant();
            var puts = new List<(string Id, byte[]? Json)>();
            byKey.Add((id, puts));
            if (outputs.Count == 0)
                puts.Add((id, null));
            for (int i = 0; i < outputs.Count; i++)
            {
                var buffer = new System.Buffers.ArrayBufferWriter<byte>(outputs[i].Length + 96);
                using (var w = new Utf8JsonWriter(buffer))
                using (var parsed = JsonDocument.Parse(outputs[i]))
                {
                    w.WriteStartObject();
                    foreach (var p in parsed.RootElement.EnumerateObject())
                        if (p.Name != "@metadata")
                            p.WriteTo(w);
                    w.WriteStartObject("@metadata");
                    w.WriteString("@collection", collection);
                    w.WriteEndObject();
                    w.WriteEndObject();
                }
                puts.Add((i == 0 ? id : id + "/" + i.ToString(CultureInfo.InvariantCulture), buffer.WrittenSpan.ToArray()));
            }
        }
        var pattern = Compiled.OutputReferences;
        string referencesCollection = Definition.PatternReferencesCollectionName ?? collection + "/References";
        var command = new TransactionMerger.DelegateCommand<int>(ctx =>
        {
            // Reference documents (PatternForOutputReduceToCollectionReferences): the outputs each lists, as changed here.
            var listed = new Dictionary<string, (HashSet<string> Add, HashSet<string> Remove)>(StringComparer.OrdinalIgnoreCase);
            void Reference(string? referenceId, string outputId, bool add)
            {
                if (referenceId == null)
                    return;
                if (!listed.TryGetValue(referenceId, out var change))
                    listed[referenceId] = change = (new(StringComparer.OrdinalIgnoreCase), new(StringComparer.OrdinalIgnoreCase));
                (add ? change.Add : change.Remove).Add(outputId);
                (add ? change.Remove : change.Add).Remove(outputId);
            }
            string? ReferenceOf(byte[] json)
            {
                using var parsed = JsonDocument.Parse(json);
                return pattern!.IdOf(parsed.RootElement);
            }
            void Remove(string id)
            {
                if (pattern != null && ctx.Get(id) is { } old)
                    Reference(ReferenceOf(old.Json), id, add: false);
                ctx.Delete(id, null);
            }
            foreach (var (key, outputs) in byKey)
            {
                for (int i = 0; i < outputs.Count; i++)
                {
                    var (id, json) = outputs[i];
                    if (json == null)
                    {
                        Remove(id);
                        continue;
                    }
                    if (pattern != null)
                    {
                        if (ctx.Get(id) is { } old && ReferenceOf(old.Json) is { } before)
                            Reference(before, id, add: false);
                        Reference(ReferenceOf(json), id, add: true);
                    }
                    ctx.PutFlagged(id, json, ArtificialFlags);
                }
                // A key with fewer outputs than before: the extra ones go.
                for (int i = Math.Max(outputs.Count, 1); ctx.Get(key + "/" + i.ToString(CultureInfo.InvariantCulture)) != null; i++)
                    Remove(key + "/" + i.ToString(CultureInfo.InvariantCulture));
            }
            foreach (var (referenceId, (add, remove)) in listed)
                WriteReference(ctx, referenceId, referencesCollection, add, remove);
            return byKey.Count;
        }, byKey.Sum(k => k.Outputs.Sum(p => (long)(p.Json?.Length ?? 0))));
        _db.Merger.EnqueueAsync(command).GetAwaiter().GetResult();
    }

    /// <summary>
    /// Deletes the documents the index wrote to its output collection (those flagged Artificial) and its reference
    /// documents: the index is deleted or reset (a rebuild writes the outputs again).
    /// </summary>
    internal void DeleteOutputDocuments()
    {
        if (Definition.OutputReduceToCollection is not { } collection)
            return;
        var ids = new List<string>();
        using (var tx = _db.Environment.ReadTransaction())
        {
            foreach (var doc in _db.Documents.Scan(tx, collection))
            {
                using var parsed = JsonDocument.Parse(doc.Json);
                if (parsed.RootElement.TryGetProperty("@metadata", out var meta) && meta.TryGetProperty("@flags", out var flags)
                    && flags.ValueKind == JsonValueKind.String && flags.GetString()!.Contains("Artificial", StringComparison.Ordinal))
                    ids.Add(doc.Id);
            }
            if (Definition.PatternForOutputReduceToCollectionReferences != null)
                ids.AddRange(_db.Documents.Scan(tx, Definition.PatternReferencesCollectionName ?? collection + "/References").Select(d => d.Id));
        }
        foreach (var chunk in ids.Chunk(1024))
            _db.Merger.EnqueueAsync(new TransactionMerger.DelegateCommand<int>(ctx =>
            {
                foreach (string id in chunk)
                    ctx.Delete(id, null);
                return chunk.Length;
            })).GetAwaiter().GetResult();
    }

    /// <summary>A reference document listing reduce outputs (<c>ReduceOutputs</c>): updated by the changes, deleted when it lists none.</summary>
    private static void WriteReference(Documents.DocumentsWriteContext ctx, string id, string collection, HashSet<string> add, HashSet<string> remove)
    {
        var outputs = new List<string>();
        if (ctx.Get(id) is { } existing)
        {
            using var parsed = JsonDocument.Parse(existing.Json);
            if (parsed.RootElement.TryGetProperty("ReduceOutputs", out var list) && list.ValueKind == JsonValueKind.Array)
                outputs.AddRange(list.EnumerateArray().Where(v => v.ValueKind == JsonValueKind.String).Select(v => v.GetString()!));
        }
        int before = outputs.Count;
        outputs.RemoveAll(remove.Contains);
        foreach (string o in add.Order(StringComparer.Ordinal))
            if (!outputs.Contains(o, StringComparer.OrdinalIgnoreCase))
                outputs.Add(o);
        if (outputs.Count == 0)
        {
            if (before > 0)
                ctx.Delete(id, null);
            return;
        }
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(64 + outputs.Sum(o => o.Length + 3));
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WriteStartArray("ReduceOutputs");
            foreach (string o in outputs)
                w.WriteStringValue(o);
            w.WriteEndArray();
            w.WriteStartObject("@metadata");
            w.WriteString("@collection", collection);
            w.WriteEndObject();
            w.WriteEndObject();
        }
        ctx.Put(id, buffer.WrittenSpan, null);
    }

    /// <summary>Map-reduce: replaces each key's entries with its reduce results (none: the key is gone).</summary>
    private void WriteReduced(List<(string Hash, List<byte[]> Outputs)> reduced, HashSet<(string Field, string Term)> terms)
    {
        foreach (var (hash, outputs) in reduced)
        {
            string key = "mr/" + hash.ToLowerInvariant();
            var id = new Term(IdField, key);
            _reducedSinceCommit.Add(hash);
            if (outputs.Count == 0)
            {
                _writer.DeleteDocuments(id);
                continue;
            }
            var documents = new List<Document>();
            foreach (var output in outputs)
            {
                using var entry = Compiled.EntryOfResult(output, _fieldValues);
                var doc = Entry(key, 0, entry.Json, _fieldValues, terms, null);
                doc.Add(new StoredField(ReduceResultField, output));
                documents.Add(doc);
            }
            _writer.UpdateDocuments(id, documents);
        }
    }

    /// <summary>Deletes the index's stored map and reduce results and references (the index is new, rebuilt or deleted).</summary>
    internal void DropMapResults()
    {
        if (_mapReduce == null && _references == null)
            return;
        using var tx = _db.Environment.WriteTransaction();
        _mapReduce?.Drop(tx);
        _references?.Drop(tx);
        tx.Commit();
    }
}
