using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Which documents an index's maps loaded (<c>LoadDocument</c>, <c>load()</c>) for which source documents, kept in the
/// database's storage so that a change to a loaded document maps its sources again (RavenDB's reference tracking):
/// <list type="bullet">
/// <item><c>refs/{index}/loaded</c>: lower-cased loaded id ‖ 0x1F ‖ lower-cased source id → nothing;</item>
/// <item><c>refs/{index}/sources</c>: lower-cased source id → the ids it loaded, 0x1F-separated.</item>
/// </list>
/// An id that was asked for but did not exist is kept too: creating that document maps the source again.
/// </summary>
internal sealed class ReferenceStore(string indexName)
{
    private const byte Separator = 0x1F;

    private string LoadedTree => $"refs/{indexName}/loaded";

    private string SourcesTree => $"refs/{indexName}/sources";

    /// <summary>Replaces what <paramref name="lowerSource"/> loaded with <paramref name="loaded"/> (lower-cased ids).</summary>
    public void Replace(WriteTransaction tx, ReadOnlySpan<byte> lowerSource, IReadOnlyCollection<string> loaded)
    {
        var sources = tx.CreateTree(SourcesTree);
        var byLoaded = tx.CreateTree(LoadedTree);
        if (sources.TryGet(lowerSource, out var old))
        {
            foreach (var id in Split(old))
                byLoaded.Delete(Key(id, lowerSource));
        }
        if (loaded.Count == 0)
        {
            sources.Delete(lowerSource);
            return;
        }
        var all = new List<byte>();
        foreach (string id in loaded)
        {
            var idBytes = Encoding.UTF8.GetBytes(id);
            byLoaded.Put(Key(idBytes, lowerSource), []);
            if (all.Count > 0)
                all.Add(Separator);
            all.AddRange(idBytes);
        }
        sources.Put(lowerSource, all.ToArray());
    }

    /// <summary>The sources (lower-cased ids) that loaded <paramref name="lowerLoaded"/>.</summary>
    public List<byte[]> SourcesOf(Transaction tx, ReadOnlySpan<byte> lowerLoaded)
    {
        var list = new List<byte[]>();
        if (tx.ReadTree(LoadedTree) is not { } byLoaded)
            return list;
        var prefix = new byte[lowerLoaded.Length + 1];
        lowerLoaded.CopyTo(prefix);
        prefix[^1] = Separator;
        var cursor = byLoaded.CreateCursor();
        cursor.Prefix = prefix;
        if (cursor.SeekToFirst())
        {
            do
                list.Add(cursor.Key[prefix.Length..].ToArray());
            while (cursor.MoveNext());
        }
        return list;
    }

    /// <summary>Deletes every reference of the index.</summary>
    public void Drop(WriteTransaction tx)
    {
        tx.DeleteTree(LoadedTree);
        tx.DeleteTree(SourcesTree);
    }

    private static byte[] Key(ReadOnlySpan<byte> loaded, ReadOnlySpan<byte> source)
    {
        var key = new byte[loaded.Length + 1 + source.Length];
        loaded.CopyTo(key);
        key[loaded.Length] = Separator;
        source.CopyTo(key.AsSpan(loaded.Length + 1));
        return key;
    }

    private static List<byte[]> Split(ReadOnlySpan<byte> value)
    {
        var parts = new List<byte[]>();
        while (value.Length > 0)
        {
            int i = value.IndexOf(Separator);
            parts.Add((i < 0 ? value : value[..i]).ToArray());
            value = i < 0 ? [] : value[(i + 1)..];
        }
        return parts;
    }
}
