using RavenLite.Server.Attachments;
using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Revisions;

/// <summary>
/// Revisions as a document extension. With a configuration that keeps revisions for a document's collection, every
/// version written is also stored as a revision (flagged <c>Revision</c>; its attachments keep a reference so they stay
/// readable) and old revisions are trimmed; a delete stores a deletion revision and puts the document in the bin, or
/// purges its revisions when the configuration says so. Holds the configuration (JSON in the <c>State</c> tree).
/// </summary>
public sealed class RevisionsExtension : IDocumentExtension
{
    /// <summary>Reads the stored configuration through <paramref name="tx"/>.</summary>
    public RevisionsExtension(Transaction tx) => Configuration = RevisionsStore.LoadConfiguration(tx);

    /// <summary>
    /// The configuration (null: none), as stored; replaced by <see cref="Save"/> on the merger thread, which is the only
    /// reader on the write path.
    /// </summary>
    public RevisionsConfiguration? Configuration { get; private set; }

    /// <summary>Stores a configuration and makes it current.</summary>
    public void Save(WriteTransaction tx, RevisionsConfiguration configuration)
    {
        RevisionsStore.SaveConfiguration(tx, configuration);
        Configuration = configuration;
    }

    /// <summary>A version of a collection that keeps revisions carries <c>HasRevisions</c>.</summary>
    public DocumentExtras? BeforePut(string collection, DocumentExtras? extras)
    {
        if (Configuration?.For(collection) == null || extras is { HasRevisions: true })
            return extras;
        var marked = extras?.Clone() ?? new DocumentExtras();
        marked.HasRevisions = true;
        return marked;
    }

    /// <inheritdoc />
    public void AfterPut(DocumentsWriteContext context, in DocumentPut put)
    {
        if (Configuration?.For(put.Collection) is { } keep)
            Add(context, put.Key, put.Id, put.Collection, put.Etag, put.ChangeVector, put.LastModified, put.Prepared, put.PrefixLength, put.Extras!, keep);
        else if (put.IsNew && Configuration != null)
            RevisionsStore.RemoveFromBin(context.Transaction, put.Key);
    }

    /// <inheritdoc />
    public void AfterDelete(DocumentsWriteContext context, in DocumentDelete deleted)
    {
        if (Configuration is not { } configuration)
            return;
        var doc = deleted.Document;
        if (configuration.Raw(doc.Collection) is { PurgeOnDelete: true })
        {
            RevisionsStore.DeleteAll(context.Transaction, deleted.Key, context.Storage);
        }
        else if (configuration.For(doc.Collection) != null || deleted.Extras is { HasRevisions: true })
        {
            RevisionsStore.Add(context.Transaction, deleted.Key, deleted.Etag,
                RevisionsStore.DeletionRecord(doc.Id, doc.Collection, deleted.Etag, deleted.ChangeVector, DateTime.UtcNow, context.Storage), context.Storage);
            RevisionsStore.AddToBin(context.Transaction, deleted.Key, deleted.Etag);
            context.TakeItemEtag(null);
        }
    }

    /// <summary>
    /// Creates a revision of the document's current version even when its collection keeps none (RavenDB's forced
    /// revision): false when that version has a revision already or the document does not exist. A document without
    /// revisions gains <c>HasRevisions</c> (a new version, whose revision this is).
    /// </summary>
    public static bool Force(DocumentsWriteContext context, string id)
    {
        ArgumentNullException.ThrowIfNull(context);
        var doc = context.Get(id);
        if (doc == null)
            return false;
        var key = context.KeyOf(doc.Id);
        if (RevisionsStore.Exists(context.Transaction, key, doc.Etag))
            return false;
        var extras = DocumentExtras.Read(doc.Json);
        if (extras is not { HasRevisions: true })
        {
            context.UpdateExtras(doc.Id, e => e.HasRevisions = true);
            doc = context.Get(id)!;
            if (RevisionsStore.Exists(context.Transaction, key, doc.Etag))
                return true; // the collection keeps revisions: the rewrite made one
            extras = DocumentExtras.Read(doc.Json)!;
        }
        var prepared = new System.Buffers.ArrayBufferWriter<byte>(doc.Json.Length + 64);
        int prefix = DocumentPreparer.Current.Prepare(doc.Json, prepared, out _);
        Add(context, key, doc.Id, doc.Collection, doc.Etag, doc.ChangeVector, doc.LastModified, prepared.WrittenSpan, prefix, extras, null);
        return true;
    }

    /// <summary>
    /// Stores a revision read from a dump (its JSON as exported, full <c>@metadata</c>) under a new etag of this
    /// database, after any revision of the same document stored before (so dumps list them oldest first). The
    /// attachments it lists that this database holds get a reference, as a revision made here would.
    /// </summary>
    public static void Import(DocumentsWriteContext context, string id, string collection, DateTime lastModified, ReadOnlySpan<byte> json)
    {
        ArgumentNullException.ThrowIfNull(context);
        long etag = context.NextEtag();
        RevisionsStore.Add(context.Transaction, context.KeyOf(id), etag, context.EncodeVersion(id, collection, etag, lastModified, json), context.Storage);
        if (DocumentExtras.Read(json) is { } extras)
            foreach (var attachment in extras.Attachments.Values)
                if (AttachmentsStore.Find(context.Transaction, attachment.Hash) != null)
                    AttachmentsStore.AddReference(context.Transaction, attachment.Hash);
    }

    /// <summary>
    /// Stores a revision another database instance made (replication): its JSON as stored there, under its own change
    /// vector and time, at a new etag of this database. False when this database holds that revision already (made here
    /// from the replicated version, or replicated before). The caller takes the references of the attachments it lists.
    /// </summary>
    public static bool Replicated(DocumentsWriteContext context, string id, string collection, string changeVector, DateTime lastModified, ReadOnlySpan<byte> json)
    {
        ArgumentNullException.ThrowIfNull(context);
        if (RevisionsStore.GetByChangeVector(context.Transaction, changeVector, context.Storage) != null)
            return false;
        long etag = context.NextEtag();
        RevisionsStore.Add(context.Transaction, context.KeyOf(id), etag, context.EncodeVersion(id, collection, etag, lastModified, json, changeVector), context.Storage);
        return true;
    }

    /// <summary>Stores the revision of a version just written and trims the document's old revisions (<paramref name="keep"/>; null: no trim).</summary>
    private static void Add(DocumentsWriteContext context, ReadOnlySpan<byte> key, string id, string collection, long etag, string changeVector,
        DateTime lastModified, ReadOnlySpan<byte> prepared, int prefixLength, DocumentExtras extras, RevisionsCollectionConfiguration? keep)
    {
        var flags = extras.Clone();
        flags.IsRevision = true;
        RevisionsStore.Add(context.Transaction, key, etag, context.EncodeVersion(id, collection, etag, changeVector, lastModified, prepared, prefixLength, flags), context.Storage);
        foreach (var attachment in extras.Attachments.Values)
            AttachmentsStore.AddReference(context.Transaction, attachment.Hash); // the revision's attachments stay readable
        RevisionsStore.RemoveFromBin(context.Transaction, key);
        if (keep != null)
            RevisionsStore.Trim(context.Transaction, key, keep, lastModified, context.Storage);
        context.TakeItemEtag(null); // the revision shares its version's etag here; RavenDB's takes the next one
    }
}
