using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Server.Documents;

/// <summary>
/// Versions of a document kept in conflict (docs/replication.md "Conflicts"; tree <c>Conflicts</c> in
/// docs/format/documents.md): concurrent versions no resolver settled. While an id has conflicts it has no document —
/// loading it is a 409 — until a write of that id (a PUT or a DELETE, local or replicated and newer than all of them)
/// resolves it. Key: the lower-cased id, 0x1E, the version's change vector; value: uint8 kind (0 document, 1 deleted),
/// int64 last-modified UTC ticks, uint16 collection length, collection, then the document's JSON (documents only).
/// </summary>
public static class DocumentConflicts
{
    internal const string Tree = "Conflicts";
    private const byte Separator = 0x1E;

    /// <summary>The versions in conflict for <paramref name="lowerId"/>, in change-vector order; empty when none.</summary>
    public static List<ConflictedVersion> Of(Transaction tx, ReadOnlySpan<byte> lowerId)
    {
        var result = new List<ConflictedVersion>();
        if (tx.ReadTree(Tree) is not { Count: > 0 } tree)
            return result;
        var cursor = tree.CreateCursor();
        cursor.Prefix = Prefix(lowerId);
        for (bool ok = cursor.SeekToFirst(); ok; ok = cursor.MoveNext())
            result.Add(Read(cursor.Key, cursor.Value, lowerId.Length));
        return result;
    }

    /// <summary>RavenDB's 409 <c>DocumentConflictException</c> when <paramref name="id"/> (a missing document) has versions in conflict: it cannot be loaded until they are resolved.</summary>
    public static void ThrowIfConflicted(Transaction tx, DocumentsStorage documents, string id)
    {
        ArgumentNullException.ThrowIfNull(documents);
        if (Any(tx) && Of(tx, documents.KeyOf(id)).Count > 0)
            throw new ConcurrencyException($"Conflict detected on '{id}', conflict must be resolved before the document will be accessible.", RavenExceptionTypes.DocumentConflict)
            {
                Extra = new Dictionary<string, string> { ["DocId"] = id },
            };
    }

    /// <summary>True when any document is in conflict.</summary>
    public static bool Any(Transaction tx) => tx.ReadTree(Tree) is { Count: > 0 };

    /// <summary>Every id in conflict (lower-cased) with its number of versions and the latest version's time, in id order.</summary>
    public static List<(string LowerId, int Versions, DateTime LastModified)> All(Transaction tx)
    {
        var result = new List<(string, int, DateTime)>();
        if (tx.ReadTree(Tree) is not { Count: > 0 } tree)
            return result;
        var cursor = tree.CreateCursor();
        for (bool ok = cursor.SeekToFirst(); ok; ok = cursor.MoveNext())
        {
            int sep = cursor.Key.IndexOf(Separator);
            string id = Encoding.UTF8.GetString(cursor.Key[..sep]);
            var modified = new DateTime(BinaryPrimitives.ReadInt64LittleEndian(cursor.Value[1..]), DateTimeKind.Utc);
            if (result.Count > 0 && result[^1].Item1 == id)
                result[^1] = (id, result[^1].Item2 + 1, modified > result[^1].Item3 ? modified : result[^1].Item3);
            else
                result.Add((id, 1, modified));
        }
        return result;
    }

    /// <summary>Number of versions in conflict, over all ids.</summary>
    public static long Count(Transaction tx) => tx.ReadTree(Tree)?.Count ?? 0;

    internal static void Add(WriteTransaction tx, ReadOnlySpan<byte> lowerId, ConflictedVersion version)
    {
        var key = Key(lowerId, version.ChangeVector);
        int colLen = Encoding.UTF8.GetByteCount(version.Collection);
        var value = new byte[11 + colLen + (version.Json?.Length ?? 0)];
        value[0] = version.Json == null ? (byte)1 : (byte)0;
        BinaryPrimitives.WriteInt64LittleEndian(value.AsSpan(1), version.LastModified.Ticks);
        BinaryPrimitives.WriteUInt16LittleEndian(value.AsSpan(9), (ushort)colLen);
        Encoding.UTF8.GetBytes(version.Collection, value.AsSpan(11));
        version.Json?.CopyTo(value, 11 + colLen);
        tx.CreateTree(Tree).Put(key, value);
    }

    /// <summary>Removes every version in conflict for <paramref name="lowerId"/>; returns them.</summary>
    internal static List<ConflictedVersion> Clear(WriteTransaction tx, ReadOnlySpan<byte> lowerId)
    {
        var versions = Of(tx, lowerId);
        if (versions.Count == 0)
            return versions;
        var tree = tx.CreateTree(Tree);
        foreach (var v in versions)
            tree.Delete(Key(lowerId, v.ChangeVector));
        return versions;
    }

    private static byte[] Prefix(ReadOnlySpan<byte> lowerId)
    {
        var prefix = new byte[lowerId.Length + 1];
        lowerId.CopyTo(prefix);
        prefix[^1] = Separator;
        return prefix;
    }

    private static byte[] Key(ReadOnlySpan<byte> lowerId, string changeVector)
    {
        var key = new byte[lowerId.Length + 1 + Encoding.UTF8.GetByteCount(changeVector)];
        lowerId.CopyTo(key);
        key[lowerId.Length] = Separator;
        Encoding.UTF8.GetBytes(changeVector, key.AsSpan(lowerId.Length + 1));
        return key;
    }

    private static ConflictedVersion Read(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value, int idLength)
    {
        string cv = Encoding.UTF8.GetString(key[(idLength + 1)..]);
        var modified = new DateTime(BinaryPrimitives.ReadInt64LittleEndian(value[1..]), DateTimeKind.Utc);
        int colLen = BinaryPrimitives.ReadUInt16LittleEndian(value[9..]);
        string collection = Encoding.UTF8.GetString(value.Slice(11, colLen));
        byte[]? json = value[0] == 1 ? null : value[(11 + colLen)..].ToArray();
        return new ConflictedVersion(collection, cv, modified, json);
    }
}

/// <summary>One version of a document in conflict: a document (<paramref name="Json"/>, its stored JSON) or a delete (null).</summary>
public sealed record ConflictedVersion(string Collection, string ChangeVector, DateTime LastModified, byte[]? Json);
