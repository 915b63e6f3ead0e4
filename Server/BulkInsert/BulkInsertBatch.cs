using System.Text.Json;
using RavenLite.Server.Documents;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.BulkInsert;

/// <summary>
/// Documents parsed from a bulk-insert stream, written by the merger as one command (one
/// transaction unless merged with others; never split). Each item is a plain overwrite (PROTOCOL.md §7).
/// Owns the parsed documents: dispose after completion.
/// </summary>
public sealed class BulkInsertBatch : MergedCommand, IDisposable
{
    private readonly List<(string Id, JsonDocument Document)> _items = [];
    private long _bytes;

    /// <summary>The memory the batch's items were copied into; freed with the batch.</summary>
    public ItemArena Arena { get; } = new();

    /// <summary>Documents in the batch.</summary>
    public int Count => _items.Count;

    /// <inheritdoc />
    public override int Operations => Math.Max(1, _items.Count);

    /// <inheritdoc />
    public override long Bytes => _bytes;

    /// <summary>Adds a parsed document (takes ownership of <paramref name="document"/>).</summary>
    public void Add(string id, JsonDocument document, int bytes)
    {
        _items.Add((id, document));
        _bytes += bytes;
    }

    /// <inheritdoc />
    public override void Execute(DocumentsWriteContext context)
    {
        foreach (var (id, doc) in _items)
            context.Put(context.ResolveId(id), doc.RootElement.GetProperty("Document"), null);
    }

    /// <summary>Returns the parsed documents' pooled memory.</summary>
    public void Dispose()
    {
        foreach (var (_, doc) in _items)
            doc.Dispose();
        _items.Clear();
        Arena.Dispose();
    }
}
