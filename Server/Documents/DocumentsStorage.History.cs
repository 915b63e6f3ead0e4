using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Documents;

/// <summary>Documents and tombstones in etag order, and the transaction bounds between them: what replication reads.</summary>
public sealed partial class DocumentsStorage
{
    /// <summary>
    /// Live documents and tombstones after <paramref name="afterEtag"/> in etag order, one at a time (constant memory;
    /// copies). A tombstone superseded by a later delete of the same id is skipped: the later one stands for it; so is
    /// one of an id now in conflict.
    /// </summary>
    public IEnumerable<EtagItem> ScanByEtag(Transaction tx, long afterEtag)
    {
        var docs = tx.ReadTree(DocsTree)!;
        var tombsById = tx.ReadTree(TombstonesByIdTree);
        var byEtag = tx.ReadTree(EtagTree)!.CreateCursor();
        var tombs = tx.ReadTree(TombstoneTree)!.CreateCursor();
        bool conflicts = DocumentConflicts.Any(tx);
        bool moreDocs = byEtag.Seek(EtagKey(afterEtag + 1)), moreTombs = tombs.Seek(EtagKey(afterEtag + 1));
        while (moreDocs || moreTombs)
        {
            long docEtag = moreDocs ? BinaryPrimitives.ReadInt64BigEndian(byEtag.Key) : long.MaxValue;
            long tombEtag = moreTombs ? BinaryPrimitives.ReadInt64BigEndian(tombs.Key) : long.MaxValue;
            if (docEtag < tombEtag)
            {
                if (docs.TryGet(byEtag.Value, out var value))
                    yield return new EtagItem(docEtag, DocumentRecord.Read(value, this), null);
                moreDocs = byEtag.MoveNext();
                continue;
            }
            var v = tombs.Value;
            int colLen = BinaryPrimitives.ReadUInt16LittleEndian(v);
            var lowerId = v[(2 + colLen)..];
            Tombstone? tombstone;
            if (tombsById != null && tombsById.TryGet(lowerId, out var byId))
                tombstone = TombstoneRecord.Etag(byId) == tombEtag ? TombstoneRecord.Read(byId, lowerId) : null;
            else
                tombstone = new Tombstone(Encoding.UTF8.GetString(lowerId), Encoding.UTF8.GetString(v.Slice(2, colLen)), tombEtag, LocalChangeVector(tombEtag), DateTime.MinValue);
            // The tombstone that took a document into conflict is not a delete: the versions in conflict stand for it.
            if (tombstone != null && !(conflicts && DocumentConflicts.Of(tx, lowerId).Count > 0))
                yield return new EtagItem(tombEtag, null, tombstone);
            moreTombs = tombs.MoveNext();
        }
    }

    /// <summary>The latest tombstone of <paramref name="id"/> (any casing), or null when it was never deleted (or before tombstones kept change vectors).</summary>
    public Tombstone? GetTombstone(Transaction tx, string id)
    {
        var key = KeyOf(id);
        return tx.ReadTree(TombstonesByIdTree) is { } t && t.TryGet(key, out var v) ? TombstoneRecord.Read(v, key) : null;
    }

    /// <summary>
    /// The last etag of the write transaction that wrote <paramref name="etag"/>, as of <paramref name="tx"/>;
    /// <paramref name="etag"/> itself when that transaction committed before bounds were recorded.
    /// </summary>
    public static long TransactionEnd(Transaction tx, long etag)
    {
        var ends = tx.ReadTree(TransactionEndsTree)?.CreateCursor();
        if (ends == null || !ends.Seek(EtagKey(etag)))
            return etag;
        long first = BinaryPrimitives.ReadInt64LittleEndian(ends.Value);
        return first <= etag ? BinaryPrimitives.ReadInt64BigEndian(ends.Key) : etag;
    }

    internal static void WriteTransactionEnd(WriteTransaction tx, long first, long last)
    {
        Span<byte> value = stackalloc byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(value, first);
        tx.CreateTree(TransactionEndsTree).Put(EtagKey(last), value);
    }
}

/// <summary>A document or a tombstone at its etag (<see cref="DocumentsStorage.ScanByEtag"/>).</summary>
public sealed record EtagItem(long Etag, StoredDocument? Document, Tombstone? Tombstone);
