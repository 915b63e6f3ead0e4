using RavenLite.Server.Documents;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.BulkInsert;

/// <summary>
/// Documents read from a bulk-insert stream, written by the merger as one command (one transaction
/// unless merged with others; never split). Each item is a plain overwrite (docs/protocol.md §7). The items
/// are already validated and prepared (<see cref="DocumentPreparer"/>) in the batch's
/// <see cref="Arena"/>: the merger only assigns etags and writes. Dispose after completion.
/// </summary>
public sealed class BulkInsertBatch(bool skipOverwriteIfUnchanged = false) : MergedCommand, IDisposable
{
    private readonly List<Item> _items = [];
    private long _bytes;

    /// <summary>The memory the batch's prepared documents live in; freed with the batch.</summary>
    public ItemArena Arena { get; } = new();

    /// <summary>Documents left as they were because they were unchanged (with <c>skipOverwriteIfUnchanged</c>), once executed.</summary>
    public int Skipped { get; private set; }

    /// <summary>Documents in the batch.</summary>
    public int Count => _items.Count + _extraEntries;

    private int _extraEntries; // time-series entries beyond one per item: they count toward the batch's size

    /// <inheritdoc />
    public override int Operations => Math.Max(1, Count);

    /// <inheritdoc />
    public override long Bytes => _bytes;

    /// <summary>Adds a prepared document (its bytes in <see cref="Arena"/>); <paramref name="bytes"/> is the item's size in the stream.</summary>
    public void Add(string id, string collection, ReadOnlyMemory<byte> prepared, int prefixLength, int bytes)
    {
        _items.Add(new Item(id, collection, prepared, prefixLength, null, null, null));
        _bytes += bytes;
    }

    /// <summary>Adds a document's counter operations (applied after the items before them); <paramref name="bytes"/> as above.</summary>
    public void Add(Counters.CounterBatch counters, int bytes)
    {
        _items.Add(new Item(counters.DocumentId, "", default, 0, counters, null, null));
        _bytes += bytes;
    }

    /// <summary>Adds time-series appends of a document, applied after the items before them.</summary>
    public void Add(string documentId, TimeSeries.TimeSeriesOperation operation, int bytes)
    {
        _items.Add(new Item(documentId, "", default, 0, null, null, operation));
        _bytes += bytes;
        _extraEntries += Math.Max(1, operation.Size) - 1; // a batch is bounded by entries written, not items
    }

    /// <summary>Adds an attachment (its content read and staged already), attached after the items before it.</summary>
    public void Add(BulkInsertAttachment attachment, Attachments.StagedContent content)
    {
        _items.Add(new Item(attachment.DocumentId, "", default, 0, null, (attachment, content), null));
        _bytes += content.Staged ? 256 : content.Size;
    }

    /// <summary>The staged contents of the attachments in this batch (to discard when it fails).</summary>
    public IEnumerable<Attachments.StagedContent> StagedContents => _items.Where(i => i.Attachment is { Content.Staged: true }).Select(i => i.Attachment!.Value.Content);

    /// <inheritdoc />
    public override void Execute(DocumentsWriteContext context)
    {
        // Re-runnable: the merger may run it again alone after a rollback.
        int skipped = 0;
        // Attachments' document versions are written once per document, before the next other item and at the end (as RavenDB's bulk insert does).
        var versions = Attachments.AttachmentVersions.ForBatch();
        foreach (var item in _items)
        {
            if (item.Attachment is var (attachment, content))
            {
                Attachments.AttachmentOperations.Put(context, attachment.DocumentId, attachment.Name, attachment.ContentType, content, null, versions);
                continue;
            }
            versions.Write(context);
            if (item.Counters != null)
            {
                item.Counters.Apply(context);
                continue;
            }
            if (item.TimeSeries != null)
            {
                item.TimeSeries.Apply(context, item.Id);
                continue;
            }
            if (skipOverwriteIfUnchanged && !IsServerGenerated(item.Id) && context.IsUnchanged(item.Id, item.Collection, item.Prepared.Span, item.PrefixLength))
            {
                skipped++;
                continue;
            }
            context.Put(context.ResolveId(item.Id), item.Collection, item.Prepared.Span, item.PrefixLength, null);
        }
        versions.Write(context);
        Skipped = skipped;
    }

    private static bool IsServerGenerated(string id) => id.Length == 0 || id.EndsWith('/') || id.EndsWith('|');

    /// <summary>Returns the batch's pooled memory.</summary>
    public void Dispose()
    {
        _items.Clear();
        Arena.Dispose();
    }

    private readonly record struct Item(string Id, string Collection, ReadOnlyMemory<byte> Prepared, int PrefixLength, Counters.CounterBatch? Counters,
        (BulkInsertAttachment Attachment, Attachments.StagedContent Content)? Attachment, TimeSeries.TimeSeriesOperation? TimeSeries);
}
