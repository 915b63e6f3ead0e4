using System.Security.Cryptography;
using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Server.Indexing;

/// <summary>
/// A map-reduce index's map results, kept per reduce key in the database's storage engine (three trees per index),
/// so that a changed or deleted document re-reduces only the keys it had and has:
/// <list type="bullet">
/// <item><c>mr/{index}/docs</c>: lower-cased document id → the 16-byte hashes of the reduce keys its map results have;</item>
/// <item><c>mr/{index}/results</c>: key hash ‖ lower-cased document id → that document's map results of the key (a JSON array);</item>
/// <item><c>mr/{index}/reduced</c>: key hash → the key's reduce results (a JSON array), as of the map results stored;</item>
/// <item><c>mr/{index}/dirty</c>: key hash → the key (JSON): keys whose map results changed and whose reduce result is not
/// committed in the Lucene index yet. They are reduced again after a crash, so the reduce results follow the map results.</item>
/// </list>
/// A key that only gained map results in a batch is reduced from its stored reduce results and the new map results (a
/// reduce must accept its own output, as RavenDB requires); a key that lost or changed map results is reduced again
/// from all of them. The storage transaction that changes map and reduce results commits before the Lucene index; a
/// key leaves "dirty" only after the Lucene commit that holds its reduce result.
/// </summary>
internal sealed class MapReduceStore(string indexName)
{
    public const int HashSize = 16;

    private string DocsTree => $"mr/{indexName}/docs";

    private string ResultsTree => $"mr/{indexName}/results";

    private string DirtyTree => $"mr/{indexName}/dirty";

    private string ReducedTree => $"mr/{indexName}/reduced";

    /// <summary>What a batch did to one key: only added map results (each document's a JSON array), or more (<see cref="Full"/>).</summary>
    public sealed class KeyChange
    {
        public bool Full { get; set; }

        public List<byte[]> Added { get; } = [];
    }

    /// <summary>The hash that stands for a reduce key (its canonical JSON).</summary>
    private static byte[] Hash(string keyJson) => SHA256.HashData(Encoding.UTF8.GetBytes(keyJson))[..HashSize];

    /// <summary>
    /// Hashes (and their hex) of the keys met lately: a build maps each key's documents in every batch (200 orders per
    /// company), so hashing each document's key again would repeat the same work. Only the index worker calls <see cref="Replace"/>.
    /// </summary>
    private readonly Dictionary<string, (byte[] Hash, string Hex)> _hashes = new(StringComparer.Ordinal);

    private (byte[] Hash, string Hex) HashOf(string keyJson)
    {
        if (_hashes.TryGetValue(keyJson, out var known))
            return known;
        if (_hashes.Count >= 65_536)
            _hashes.Clear(); // bounded: a huge number of distinct keys hashes each again
        var hash = Hash(keyJson);
        return _hashes[keyJson] = (hash, Convert.ToHexString(hash));
    }

    /// <summary>
    /// Replaces a document's map results: <paramref name="groups"/> by key (empty when the document is deleted or
    /// maps to nothing). Every key it had or has becomes dirty.
    /// </summary>
    public void Replace(WriteTransaction tx, ReadOnlySpan<byte> lowerId, IReadOnlyList<(string KeyJson, byte[] Results)> groups, Dictionary<string, KeyChange> dirtied)
    {
        var docs = tx.CreateTree(DocsTree);
        var results = tx.CreateTree(ResultsTree);
        var dirty = tx.CreateTree(DirtyTree);
        var key = new byte[HashSize + lowerId.Length];
        lowerId.CopyTo(key.AsSpan(HashSize));
        if (docs.TryGet(lowerId, out var old))
        {
            var hashes = old.ToArray();
            for (int i = 0; i + HashSize <= hashes.Length; i += HashSize)
            {
                hashes.AsSpan(i, HashSize).CopyTo(key);
                results.Delete(key);
                MarkDirty(dirty, hashes.AsSpan(i, HashSize), Convert.ToHexString(hashes.AsSpan(i, HashSize)), null, dirtied).Full = true;
            }
        }
        if (groups.Count == 0)
        {
            docs.Delete(lowerId);
            return;
        }
        var all = new byte[groups.Count * HashSize];
        for (int g = 0; g < groups.Count; g++)
        {
            var (hash, hex) = HashOf(groups[g].KeyJson);
            hash.CopyTo(all, g * HashSize);
            hash.CopyTo(key, 0);
            results.Put(key, groups[g].Results);
            MarkDirty(dirty, hash, hex, groups[g].KeyJson, dirtied).Added.Add(groups[g].Results);
        }
        docs.Put(lowerId, all);
    }

    private static KeyChange MarkDirty(Tree dirty, ReadOnlySpan<byte> hash, string hex, string? keyJson, Dictionary<string, KeyChange> dirtied)
    {
        if (!dirtied.TryGetValue(hex, out var change))
        {
            dirtied[hex] = change = new KeyChange();
            if (keyJson != null || !dirty.ContainsKey(hash))
                dirty.Put(hash, keyJson == null ? [] : Encoding.UTF8.GetBytes(keyJson)); // once per key and batch
        }
        return change;
    }

    /// <summary>A key's stored reduce results (a JSON array), or null.</summary>
    public byte[]? Reduced(Transaction tx, string hashHex) =>
        tx.ReadTree(ReducedTree) is { } t && t.TryGet(Convert.FromHexString(hashHex), out var v) ? v.ToArray() : null;

    /// <summary>Stores a key's reduce results (a JSON array; null: none).</summary>
    public void SetReduced(WriteTransaction tx, string hashHex, byte[]? results)
    {
        var t = tx.CreateTree(ReducedTree);
        if (results == null)
            t.Delete(Convert.FromHexString(hashHex));
        else
            t.Put(Convert.FromHexString(hashHex), results);
    }

    /// <summary>Every dirty key's hash (hex).</summary>
    public List<string> Dirty(Transaction tx)
    {
        var list = new List<string>();
        if (tx.ReadTree(DirtyTree) is not { } dirty)
            return list;
        var cursor = dirty.CreateCursor();
        if (cursor.SeekToFirst())
        {
            do
                list.Add(Convert.ToHexString(cursor.Key));
            while (cursor.MoveNext());
        }
        return list;
    }

    /// <summary>The map results of one key (hash in hex), each document's as a JSON array.</summary>
    public List<byte[]> Results(Transaction tx, string hashHex)
    {
        var list = new List<byte[]>();
        if (tx.ReadTree(ResultsTree) is not { } results)
            return list;
        var cursor = results.CreateCursor();
        cursor.Prefix = Convert.FromHexString(hashHex);
        if (cursor.SeekToFirst())
        {
            do
                list.Add(cursor.Value.ToArray());
            while (cursor.MoveNext());
        }
        return list;
    }

    /// <summary>Keys whose reduce results are now committed in the Lucene index.</summary>
    public void Clean(WriteTransaction tx, IEnumerable<string> hashes)
    {
        var dirty = tx.CreateTree(DirtyTree);
        foreach (string h in hashes)
            dirty.Delete(Convert.FromHexString(h));
    }

    /// <summary>Deletes every map result of the index (index deleted or reset).</summary>
    public void Drop(WriteTransaction tx)
    {
        tx.DeleteTree(DocsTree);
        tx.DeleteTree(ResultsTree);
        tx.DeleteTree(DirtyTree);
        tx.DeleteTree(ReducedTree);
    }
}
