using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.CompareExchange;

/// <summary>
/// Compare-exchange values (docs/format/documents.md "Compare-exchange"): in the <c>CompareExchange</c> tree
/// under the lower-cased key, value = index (int64), key length (uint16), the key in stored casing, then the
/// value's JSON (<c>{"Object":..,"@metadata":{..}}</c>). Every change takes the next value of the database's
/// transaction index (<c>State/TransactionIndex</c>), which is what a writer must name to change or delete a
/// value (0: the key must not exist). Atomic guards of cluster-wide transactions (<see cref="AtomicGuardPrefix"/>)
/// live here too. A value whose <c>@metadata.@expires</c> passed is deleted by the database's timed tasks
/// (<c>CompareExchangeExpires</c>: UTC ticks big endian + lower-cased key). Static: every method works on the
/// transaction it is given.
/// </summary>
public static class CompareExchangeStore
{
    internal const string TreeName = "CompareExchange";
    private static readonly byte[] IndexKey = "TransactionIndex"u8.ToArray();

    /// <summary>Longest key, in UTF-8 bytes (RavenDB's limit).</summary>
    public const int MaxKeyBytes = 512;

    /// <summary>The prefix of the atomic guard a cluster-wide transaction keeps per document it writes.</summary>
    public const string AtomicGuardPrefix = "rvn-atomic/";

    /// <summary>One stored value.</summary>
    public sealed record Entry(string Key, long Index, byte[] Json);

    /// <summary>The outcome of a put or delete: whether it happened, the key's index after it (or now, when it did not) and its value.</summary>
    public sealed record Result(bool Successful, long Index, byte[]? Json);

    /// <summary>400 (CompareExchangeKeyTooBigException for length) for a key that is empty, too long or holds control characters.</summary>
    public static void ValidateKey(string? key)
    {
        if (string.IsNullOrEmpty(key))
            throw new BadRequestException("A compare-exchange key must not be empty.");
        if (Encoding.UTF8.GetByteCount(key) > MaxKeyBytes)
            throw new BadRequestException($"Compare-exchange key '{key[..Math.Min(40, key.Length)]}...' is longer than {MaxKeyBytes} UTF-8 bytes.", RavenExceptionTypes.CompareExchangeKeyTooBig);
        foreach (char ch in key)
            if (char.IsControl(ch))
                throw new BadRequestException("Compare-exchange keys may not contain control characters.");
    }

    /// <summary>
    /// Checks a value to store: a JSON object with an <c>Object</c> property and, optionally, an object <c>@metadata</c>
    /// (400 otherwise); returns its bytes.
    /// </summary>
    public static byte[] ValidateValue(JsonElement value, string where)
    {
        if (value.ValueKind != JsonValueKind.Object || !value.TryGetProperty("Object", out _))
            throw new BadRequestException($"{where}: a compare-exchange value is {{\"Object\": value, \"@metadata\": {{..}}}}.");
        if (value.TryGetProperty("@metadata", out var m) && m.ValueKind is not (JsonValueKind.Object or JsonValueKind.Null))
            throw new BadRequestException($"{where}: @metadata of a compare-exchange value must be an object.");
        return Encoding.UTF8.GetBytes(value.GetRawText());
    }

    private static byte[] Key(string key) => Encoding.UTF8.GetBytes(key.ToLowerInvariant());

    private static Entry Decode(ReadOnlySpan<byte> v)
    {
        int keyLen = BinaryPrimitives.ReadUInt16LittleEndian(v[8..]);
        return new Entry(Encoding.UTF8.GetString(v.Slice(10, keyLen)), BinaryPrimitives.ReadInt64LittleEndian(v), v[(10 + keyLen)..].ToArray());
    }

    /// <summary>The database's last transaction index (0 before the first compare-exchange change).</summary>
    public static long LastIndex(Transaction tx) =>
        tx.ReadTree(DocumentsStorage.StateTree) is { } t && t.TryGet(IndexKey, out var v) ? BinaryPrimitives.ReadInt64LittleEndian(v) : 0;

    /// <summary>Takes the next transaction index.</summary>
    public static long NextIndex(WriteTransaction tx)
    {
        long next = LastIndex(tx) + 1;
        Span<byte> v = stackalloc byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(v, next);
        tx.CreateTree(DocumentsStorage.StateTree).Put(IndexKey, v);
        return next;
    }

    internal const string ChangesTree = "CompareExchangeChanges";
    private static readonly byte[] ChangeSequenceKey = "CompareExchangeChangeSequence"u8.ToArray();

    /// <summary>
    /// Logs a change of <paramref name="lowerKey"/> under the next change number (<c>CompareExchangeChanges</c>): indexes
    /// whose maps read compare-exchange values map the documents that read that key again. Atomic guards are not logged.
    /// </summary>
    private static void LogChange(WriteTransaction tx, byte[] lowerKey)
    {
        if (lowerKey.AsSpan().StartsWith("rvn-atomic/"u8))
            return;
        var state = tx.CreateTree(DocumentsStorage.StateTree);
        long next = (state.TryGet(ChangeSequenceKey, out var v) ? BinaryPrimitives.ReadInt64LittleEndian(v) : 0) + 1;
        Span<byte> number = stackalloc byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(number, next);
        state.Put(ChangeSequenceKey, number);
        tx.CreateTree(ChangesTree).Put(DocumentsStorage.EtagKey(next), lowerKey);
    }

    /// <summary>The last change number of <see cref="ChangesTree"/> (0: none).</summary>
    public static long LastChange(Transaction tx) =>
        tx.ReadTree(DocumentsStorage.StateTree) is { } t && t.TryGet(ChangeSequenceKey, out var v) ? BinaryPrimitives.ReadInt64LittleEndian(v) : 0;

    /// <summary>Changes after number <paramref name="after"/>, in order: the number and the lower-cased key.</summary>
    public static IEnumerable<(long Number, string Key)> ChangedAfter(Transaction tx, long after)
    {
        if (tx.ReadTree(ChangesTree) is not { } log)
            yield break;
        var c = log.CreateCursor();
        for (bool ok = c.Seek(DocumentsStorage.EtagKey(after + 1)); ok; ok = c.MoveNext())
            yield return (BinaryPrimitives.ReadInt64BigEndian(c.Key), Encoding.UTF8.GetString(c.Value));
    }

    /// <summary>The value under <paramref name="key"/> (any casing), or null.</summary>
    public static Entry? Get(Transaction tx, string key) =>
        tx.ReadTree(TreeName) is { } t && t.TryGet(Key(key), out var v) ? Decode(v) : null;

    /// <summary>The <c>Object</c> of the value under <paramref name="key"/> (RQL's <c>cmpxchg(key)</c>), or JSON null when there is none.</summary>
    public static JsonElement GetObject(Transaction tx, string key)
    {
        if (Get(tx, key) is not { } entry)
            return NullElement;
        using var parsed = JsonDocument.Parse(entry.Json);
        return parsed.RootElement.TryGetProperty("Object", out var o) ? o.Clone() : NullElement;
    }

    private static readonly JsonElement NullElement = JsonDocument.Parse("null").RootElement.Clone();

    /// <summary>Values whose key starts with <paramref name="prefix"/> (any casing), in key order, skipping <paramref name="start"/>.</summary>
    public static List<Entry> List(Transaction tx, string prefix, int start, int pageSize)
    {
        var result = new List<Entry>();
        if (tx.ReadTree(TreeName) is not { } t)
            return result;
        var c = t.CreateCursor();
        if (prefix.Length > 0)
            c.Prefix = Key(prefix);
        for (bool ok = c.SeekToFirst(); ok && result.Count < pageSize; ok = c.MoveNext())
        {
            if (start > 0)
            {
                start--;
                continue;
            }
            result.Add(Decode(c.Value));
        }
        return result;
    }

    /// <summary>Number of values (atomic guards included).</summary>
    public static long Count(Transaction tx) => tx.ReadTree(TreeName)?.Count ?? 0;

    /// <summary>
    /// Stores <paramref name="json"/> under <paramref name="key"/> when its index is <paramref name="expectedIndex"/>
    /// (0: the key must not exist); on success its index becomes <paramref name="takeIndex"/>() (a command or a
    /// cluster-wide transaction takes one index for all it changes).
    /// </summary>
    public static Result Put(WriteTransaction tx, string key, long expectedIndex, byte[] json, Func<long> takeIndex)
    {
        var tree = tx.CreateTree(TreeName);
        var k = Key(key);
        Entry? current = tree.TryGet(k, out var v) ? Decode(v) : null;
        if ((current?.Index ?? 0) != expectedIndex)
            return new Result(false, current?.Index ?? LastIndex(tx), current?.Json);
        long index = takeIndex();
        string storedKey = current?.Key ?? key;
        int keyLen = Encoding.UTF8.GetByteCount(storedKey);
        var value = new byte[10 + keyLen + json.Length];
        BinaryPrimitives.WriteInt64LittleEndian(value, index);
        BinaryPrimitives.WriteUInt16LittleEndian(value.AsSpan(8), (ushort)keyLen);
        Encoding.UTF8.GetBytes(storedKey, value.AsSpan(10));
        json.CopyTo(value, 10 + keyLen);
        tree.Put(k, value);
        UpdateExpiry(tx, k, current?.Json, json);
        LogChange(tx, k);
        return new Result(true, index, json);
    }

    /// <summary>Removes <paramref name="key"/> when its index is <paramref name="expectedIndex"/> (null: whatever it is).</summary>
    public static Result Delete(WriteTransaction tx, string key, long? expectedIndex)
    {
        var tree = tx.CreateTree(TreeName);
        var k = Key(key);
        if (!tree.TryGet(k, out var v))
            return new Result(false, LastIndex(tx), null);
        var current = Decode(v);
        if (expectedIndex is { } expected && current.Index != expected)
            return new Result(false, current.Index, current.Json); // RavenDB's index check: 0 deletes nothing that exists
        tree.Delete(k);
        UpdateExpiry(tx, k, current.Json, null);
        LogChange(tx, k);
        return new Result(true, current.Index, current.Json);
    }

    internal const string ExpiresTree = "CompareExchangeExpires";

    /// <summary>The UTC ticks of a value's <c>@metadata.@expires</c>, or null.</summary>
    private static long? Expiry(byte[]? json)
    {
        if (json == null || json.AsSpan().IndexOf("\"@expires\""u8) < 0)
            return null;
        using var doc = JsonDocument.Parse(json);
        return doc.RootElement.TryGetProperty("@metadata", out var m) && m.ValueKind == JsonValueKind.Object
            && m.TryGetProperty("@expires", out var e) && e.ValueKind == JsonValueKind.String
            && DateTime.TryParse(e.GetString(), System.Globalization.CultureInfo.InvariantCulture,
                System.Globalization.DateTimeStyles.AdjustToUniversal | System.Globalization.DateTimeStyles.AssumeUniversal, out var t) ? t.Ticks : null;
    }

    private static byte[] ExpiryKey(long ticks, byte[] key)
    {
        var k = new byte[8 + key.Length];
        BinaryPrimitives.WriteInt64BigEndian(k, ticks);
        key.CopyTo(k, 8);
        return k;
    }

    /// <summary>Keeps <c>CompareExchangeExpires</c> (UTC ticks BE + lower-cased key) in step with a value's <c>@expires</c>.</summary>
    private static void UpdateExpiry(WriteTransaction tx, byte[] key, byte[]? oldJson, byte[]? newJson)
    {
        long? before = Expiry(oldJson), after = Expiry(newJson);
        if (before == after)
            return;
        var tree = tx.CreateTree(ExpiresTree);
        if (before is { } b)
            tree.Delete(ExpiryKey(b, key));
        if (after is { } a)
            tree.Put(ExpiryKey(a, key), []);
    }

    /// <summary>Keys of the values whose <c>@expires</c> is at or before <paramref name="now"/>, at most <paramref name="max"/>.</summary>
    public static List<string> Expired(Transaction tx, DateTime now, int max)
    {
        var result = new List<string>();
        if (tx.ReadTree(ExpiresTree) is not { } t)
            return result;
        var c = t.CreateCursor();
        for (bool ok = c.SeekToFirst(); ok && result.Count < max; ok = c.MoveNext())
        {
            if (BinaryPrimitives.ReadInt64BigEndian(c.Key) > now.Ticks)
                break;
            result.Add(Encoding.UTF8.GetString(c.Key[8..]));
        }
        return result;
    }

    /// <summary>Deletes a value whose <c>@expires</c> passed (checked again in this transaction); true when it did.</summary>
    public static bool DeleteIfExpired(WriteTransaction tx, string key, DateTime now)
    {
        if (Get(tx, key) is not { } entry || Expiry(entry.Json) is not { } at || at > now.Ticks)
            return false;
        return Delete(tx, key, null).Successful;
    }

    /// <summary>The atomic guard key of a document.</summary>
    public static string AtomicGuardOf(string documentId) => AtomicGuardPrefix + documentId;

    /// <summary>Removes a document's atomic guard, if it has one (the document is deleted: a new one under its id starts unguarded).</summary>
    public static void DeleteAtomicGuard(WriteTransaction tx, string documentId)
    {
        if (tx.ReadTree(TreeName) is { Count: > 0 })
            tx.CreateTree(TreeName).Delete(Key(AtomicGuardOf(documentId)));
    }

    /// <summary>Writes <c>{"Key","Index","Value","ChangeVector"}</c> for an entry.</summary>
    /// <summary>A requested key with no value, as RavenDB answers it among others: <c>{Key, Index: -1, Value: null}</c>.</summary>
    public static void WriteMissing(Utf8JsonWriter w, string key)
    {
        w.WriteStartObject();
        w.WriteString("Key"u8, key);
        w.WriteNumber("Index"u8, -1);
        w.WriteNull("Value"u8);
        w.WriteNull("ChangeVector"u8);
        w.WriteEndObject();
    }

    public static void WriteEntry(Utf8JsonWriter w, Entry e)
    {
        w.WriteStartObject();
        w.WriteString("Key"u8, e.Key);
        w.WriteNumber("Index"u8, e.Index);
        w.WritePropertyName("Value"u8);
        w.WriteRawValue(e.Json, skipInputValidation: true);
        w.WriteNull("ChangeVector"u8);
        w.WriteEndObject();
    }
}
