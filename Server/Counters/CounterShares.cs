using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Server.Counters;

/// <summary>
/// What replication needs of counters (docs/replication.md "Counters"; trees in docs/format/documents.md): each counter's
/// total is the sum of per-database shares — every database instance only ever changes its own share — so versions
/// from different nodes merge by taking, per share, the one its owner changed last, and never conflict.
/// <c>CounterShares</c> (key: the <see cref="CountersStore"/> key) holds a counter's shares and the etag of its last
/// change (a deleted counter keeps an entry marked deleted, so the delete flows on); <c>CountersByEtag</c> orders the
/// changes for replication. A counter written before shares were kept has one implicit share: this database's, its total.
/// </summary>
public static class CounterShares
{
    internal const string SharesTree = "CounterShares";
    internal const string ByEtagTree = "CountersByEtag";

    /// <summary>One database instance's part of a counter: its value, and the etag at which that instance last changed it.</summary>
    public sealed record Share(string DatabaseId, long Value, long Etag);

    /// <summary>A counter's state at its last change, as replication sends it.</summary>
    public sealed record Change(long Etag, string DocumentKey, string Name, bool Deleted, IReadOnlyList<Share> Shares);

    /// <summary>
    /// Records a local change of counter <paramref name="name"/> of the document keyed <paramref name="docKey"/>: its
    /// total went from <paramref name="before"/> to <paramref name="after"/> (this database's share moves by the
    /// difference), or it was deleted.
    /// </summary>
    public static void Local(DocumentsWriteContext ctx, ReadOnlySpan<byte> docKey, string name, long before, long after, bool deleted)
    {
        ArgumentNullException.ThrowIfNull(ctx);
        var key = CountersStore.Key(docKey, name);
        var shares = Read(ctx.Transaction, key, out long oldEtag, out bool wasDeleted, out _) ?? (before != 0 ? [new Share(ctx.DatabaseId, before, 0)] : []);
        if (wasDeleted || deleted)
            shares.Clear();
        long etag = ctx.NextEtag();
        if (!deleted)
        {
            int own = shares.FindIndex(s => s.DatabaseId == ctx.DatabaseId);
            long value = (own < 0 ? 0 : shares[own].Value) + (after - before);
            if (own < 0)
                shares.Add(new Share(ctx.DatabaseId, value, etag));
            else
                shares[own] = new Share(ctx.DatabaseId, value, etag);
        }
        Write(ctx.Transaction, key, oldEtag, etag, deleted, name, shares);
    }

    /// <summary>
    /// Takes a counter's state from another instance: per share, the one changed last; a delete removes it. A document not
    /// here yet still takes it (the feed sends a document at its latest etag, after its counters' earlier changes); one
    /// deleted here does not. The counter's new state flows on under a new etag.
    /// </summary>
    public static void Merge(DocumentsWriteContext ctx, ReadOnlySpan<byte> docKey, string name, IReadOnlyList<Share> incoming, bool deleted)
    {
        ArgumentNullException.ThrowIfNull(ctx);
        ArgumentNullException.ThrowIfNull(incoming);
        if (!DocumentsStorage.Docs(ctx.Transaction).TryGet(docKey, out _) && ctx.GetTombstone(Encoding.UTF8.GetString(docKey)) != null)
            return; // deleted here: its counters went with it
        var key = CountersStore.Key(docKey, name);
        var current = CountersStore.Get(ctx.Transaction, docKey, name);
        var shares = Read(ctx.Transaction, key, out long oldEtag, out bool wasDeleted, out _)
            ?? (current is { } c && c.Value != 0 ? [new Share(ctx.DatabaseId, c.Value, 0)] : []);
        if (wasDeleted)
            shares.Clear();
        bool changed = false;
        if (deleted)
        {
            if (current != null || !wasDeleted)
            {
                CountersStore.Delete(ctx.Transaction, docKey, name);
                shares.Clear();
                changed = true;
            }
        }
        else
        {
            foreach (var share in incoming)
            {
                int i = shares.FindIndex(s => s.DatabaseId == share.DatabaseId);
                if (i < 0)
                    shares.Add(share);
                else if (share.Etag > shares[i].Etag)
                    shares[i] = share;
                else
                    continue;
                changed = true;
            }
            if (changed || current == null)
            {
                CountersStore.Put(ctx.Transaction, docKey, current?.Name ?? name, shares.Sum(s => s.Value));
                changed = true;
            }
        }
        if (changed)
            Write(ctx.Transaction, key, oldEtag, ctx.NextEtag(), deleted, current?.Name ?? name, shares);
    }

    /// <summary>Counter changes after <paramref name="afterEtag"/>, in etag order (constant memory).</summary>
    public static IEnumerable<Change> ScanByEtag(Transaction tx, long afterEtag)
    {
        if (tx.ReadTree(ByEtagTree) is not { } byEtag || tx.ReadTree(SharesTree) is not { } sharesTree)
            yield break;
        var cursor = byEtag.CreateCursor();
        for (bool ok = cursor.Seek(DocumentsStorage.EtagKey(afterEtag + 1)); ok; ok = cursor.MoveNext())
        {
            long etag = BinaryPrimitives.ReadInt64BigEndian(cursor.Key);
            var key = cursor.Value;
            if (!sharesTree.TryGet(key, out var value))
                continue;
            var shares = Decode(value, out long at, out bool deleted, out string name);
            if (at != etag)
                continue;
            int sep = key.IndexOf(ExtensionKeys.Separator);
            yield return new Change(etag, Encoding.UTF8.GetString(key[..sep]), name, deleted, shares);
        }
    }

    /// <summary>Forgets the shares of every counter of a document being deleted (its tombstone stands for them).</summary>
    internal static void RemoveAll(WriteTransaction tx, ReadOnlySpan<byte> docKey)
    {
        if (tx.ReadTree(SharesTree) is not { Count: > 0 })
            return;
        var shares = tx.CreateTree(SharesTree);
        var byEtag = tx.CreateTree(ByEtagTree);
        var cursor = shares.CreateCursor();
        cursor.Prefix = ExtensionKeys.Prefix(docKey);
        var found = new List<(byte[] Key, long Etag)>();
        for (bool ok = cursor.SeekToFirst(); ok; ok = cursor.MoveNext())
            found.Add((cursor.Key.ToArray(), BinaryPrimitives.ReadInt64LittleEndian(cursor.Value)));
        foreach (var (key, etag) in found)
        {
            shares.Delete(key);
            byEtag.Delete(DocumentsStorage.EtagKey(etag));
        }
    }

    // Value: int64 etag of the last change, uint8 deleted, uint16 name length, name (casing), then per share:
    // uint8 database id length, the id, int64 value, int64 the etag its owner changed it at.
    private static List<Share>? Read(Transaction tx, byte[] key, out long etag, out bool deleted, out string name)
    {
        etag = 0;
        deleted = false;
        name = "";
        return tx.ReadTree(SharesTree) is { } t && t.TryGet(key, out var value) ? Decode(value, out etag, out deleted, out name) : null;
    }

    private static List<Share> Decode(ReadOnlySpan<byte> value, out long etag, out bool deleted, out string name)
    {
        etag = BinaryPrimitives.ReadInt64LittleEndian(value);
        deleted = value[8] == 1;
        int nameLen = BinaryPrimitives.ReadUInt16LittleEndian(value[9..]);
        name = Encoding.UTF8.GetString(value.Slice(11, nameLen));
        var shares = new List<Share>();
        for (int at = 11 + nameLen; at < value.Length;)
        {
            int idLen = value[at];
            string id = Encoding.UTF8.GetString(value.Slice(at + 1, idLen));
            at += 1 + idLen;
            shares.Add(new Share(id, BinaryPrimitives.ReadInt64LittleEndian(value[at..]), BinaryPrimitives.ReadInt64LittleEndian(value[(at + 8)..])));
            at += 16;
        }
        return shares;
    }

    private static void Write(WriteTransaction tx, byte[] key, long oldEtag, long etag, bool deleted, string name, List<Share> shares)
    {
        var buffer = new ArrayBufferWriter<byte>(64);
        var header = buffer.GetSpan(11);
        BinaryPrimitives.WriteInt64LittleEndian(header, etag);
        header[8] = deleted ? (byte)1 : (byte)0;
        int nameLen = Encoding.UTF8.GetByteCount(name);
        BinaryPrimitives.WriteUInt16LittleEndian(header[9..], (ushort)nameLen);
        buffer.Advance(11);
        buffer.Write(Encoding.UTF8.GetBytes(name));
        foreach (var s in shares)
        {
            var id = Encoding.UTF8.GetBytes(s.DatabaseId);
            var span = buffer.GetSpan(1 + id.Length + 16);
            span[0] = (byte)id.Length;
            id.CopyTo(span[1..]);
            BinaryPrimitives.WriteInt64LittleEndian(span[(1 + id.Length)..], s.Value);
            BinaryPrimitives.WriteInt64LittleEndian(span[(9 + id.Length)..], s.Etag);
            buffer.Advance(1 + id.Length + 16);
        }
        tx.CreateTree(SharesTree).Put(key, buffer.WrittenSpan);
        var byEtag = tx.CreateTree(ByEtagTree);
        if (oldEtag != 0)
            byEtag.Delete(DocumentsStorage.EtagKey(oldEtag));
        byEtag.Put(DocumentsStorage.EtagKey(etag), key);
    }
}
