using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Server.Counters;

/// <summary>
/// Counters of documents in the <c>Counters</c> tree (docs/format/documents.md "Counters"): key =
/// the document's key (lower-cased id), 0x1E, the lower-cased counter name; value = the total (int64),
/// the counter's version (int64, +1 per change) and the name in the casing it was created with.
/// The document's <c>@counters</c> lists the names (<see cref="DocumentExtras"/>); the two change in one
/// transaction. Static: every method works on the transaction it is given.
/// </summary>
public static class CountersStore
{
    internal const string TreeName = "Counters";
    private const byte Separator = ExtensionKeys.Separator;

    /// <summary>Longest counter name, in UTF-8 bytes.</summary>
    public const int MaxNameBytes = 512;

    /// <summary>One counter's state.</summary>
    public readonly record struct Counter(string Name, long Value, long Version);

    /// <summary>400 for a counter name that is empty, too long or holds control characters.</summary>
    public static void ValidateName(string? name) => ExtensionKeys.ValidateName(name, "counter", MaxNameBytes, blankAllowed: true);

    internal static byte[] Key(ReadOnlySpan<byte> docKey, string name)
    {
        string lower = name.ToLowerInvariant();
        var key = new byte[docKey.Length + 1 + Encoding.UTF8.GetByteCount(lower)];
        docKey.CopyTo(key);
        key[docKey.Length] = Separator;
        Encoding.UTF8.GetBytes(lower, key.AsSpan(docKey.Length + 1));
        return key;
    }

    private static Counter Decode(ReadOnlySpan<byte> value) =>
        new(Encoding.UTF8.GetString(value[16..]), BinaryPrimitives.ReadInt64LittleEndian(value), BinaryPrimitives.ReadInt64LittleEndian(value[8..]));

    private static void Store(Tree tree, byte[] key, string name, long total, long version)
    {
        var value = new byte[16 + Encoding.UTF8.GetByteCount(name)];
        BinaryPrimitives.WriteInt64LittleEndian(value, total);
        BinaryPrimitives.WriteInt64LittleEndian(value.AsSpan(8), version);
        Encoding.UTF8.GetBytes(name, value.AsSpan(16));
        tree.Put(key, value);
    }

    /// <summary>The counter <paramref name="name"/> (any casing) of the document keyed <paramref name="docKey"/>, or null.</summary>
    public static Counter? Get(Transaction tx, ReadOnlySpan<byte> docKey, string name) =>
        tx.ReadTree(TreeName) is { } t && t.TryGet(Key(docKey, name), out var v) ? Decode(v) : null;

    /// <summary>Every counter of the document, in name order (lower-cased, ordinal).</summary>
    public static List<Counter> GetAll(Transaction tx, ReadOnlySpan<byte> docKey)
    {
        var result = new List<Counter>();
        if (tx.ReadTree(TreeName) is not { } t)
            return result;
        var c = t.CreateCursor();
        c.Prefix = ExtensionKeys.Prefix(docKey);
        for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
            result.Add(Decode(c.Value));
        return result;
    }

    /// <summary>Adds <paramref name="delta"/> (creating the counter at 0 first); 400 on overflow. Returns the counter and whether it is new.</summary>
    public static (Counter Counter, bool Created) Increment(WriteTransaction tx, ReadOnlySpan<byte> docKey, string name, long delta)
    {
        var tree = tx.CreateTree(TreeName);
        var key = Key(docKey, name);
        Counter old = tree.TryGet(key, out var v) ? Decode(v) : new Counter(name, 0, 0);
        long total;
        try
        {
            total = checked(old.Value + delta);
        }
        catch (OverflowException)
        {
            throw new BadRequestException($"Counter '{old.Name}' would overflow: {old.Value} + {delta} is outside the range of a 64-bit integer.");
        }
        var counter = new Counter(old.Name, total, old.Version + 1);
        Store(tree, key, counter.Name, counter.Value, counter.Version);
        return (counter, old.Version == 0);
    }

    /// <summary>Sets a counter's total (creating it). Returns the counter and whether it is new.</summary>
    public static (Counter Counter, bool Created) Put(WriteTransaction tx, ReadOnlySpan<byte> docKey, string name, long total)
    {
        var tree = tx.CreateTree(TreeName);
        var key = Key(docKey, name);
        Counter old = tree.TryGet(key, out var v) ? Decode(v) : new Counter(name, 0, 0);
        var counter = new Counter(old.Name, total, old.Version + 1);
        Store(tree, key, counter.Name, counter.Value, counter.Version);
        return (counter, old.Version == 0);
    }

    /// <summary>Removes a counter; false when there was none.</summary>
    public static bool Delete(WriteTransaction tx, ReadOnlySpan<byte> docKey, string name) => tx.CreateTree(TreeName).Delete(Key(docKey, name));

    /// <summary>Removes every counter of a document (it is being deleted).</summary>
    public static void DeleteAll(WriteTransaction tx, ReadOnlySpan<byte> docKey)
    {
        var tree = tx.CreateTree(TreeName);
        var keys = new List<byte[]>();
        var c = tree.CreateCursor();
        c.Prefix = ExtensionKeys.Prefix(docKey);
        for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
            keys.Add(c.Key.ToArray());
        foreach (var k in keys)
            tree.Delete(k);
    }

    /// <summary>Number of counters in the database (one per document and name).</summary>
    public static long Count(Transaction tx) => tx.ReadTree(TreeName)?.Count ?? 0;

    /// <summary>
    /// Number of documents with counters: RavenDB's <c>CountOfCounterEntries</c>, which counts its counter groups (a
    /// document's counters are stored together, one entry per document).
    /// </summary>
    public static long DocumentCount(Transaction tx)
    {
        if (tx.ReadTree(TreeName) is not { } tree)
            return 0;
        long count = 0;
        var c = tree.CreateCursor();
        for (bool ok = c.SeekToFirst(); ok; count++)
        {
            // Past this document's counters: its key, then the byte after the separator.
            var key = c.Key;
            var next = new byte[key.IndexOf(Separator) + 1];
            key[..(next.Length - 1)].CopyTo(next);
            next[^1] = Separator + 1;
            ok = c.Seek(next);
        }
        return count;
    }
}
