namespace RavenLite.Server.Documents;

/// <summary>
/// The value stored under a deleted document's lower-cased id in the <c>TombstonesById</c> tree (docs/format/documents.md):
/// <code>
/// offset size meaning
///  0      8   etag of the tombstone (int64, little endian; its key in the Tombstones tree)
///  8      8   when it was deleted, UTC ticks (int64)
/// 16      2   collection length in UTF-8 bytes (uint16)
/// 18      m   collection, stored casing
/// 18+m    ..  change vector (UTF-8)
/// </code>
/// Tombstones written before this tree existed have no entry here; theirs is the etag's one-entry vector.
/// </summary>
internal static class TombstoneRecord
{
    public static byte[] Write(long etag, DateTime deleted, string collection, string changeVector)
    {
        int colLen = Encoding.UTF8.GetByteCount(collection);
        var value = new byte[18 + colLen + Encoding.UTF8.GetByteCount(changeVector)];
        BinaryPrimitives.WriteInt64LittleEndian(value, etag);
        BinaryPrimitives.WriteInt64LittleEndian(value.AsSpan(8), deleted.Ticks);
        BinaryPrimitives.WriteUInt16LittleEndian(value.AsSpan(16), (ushort)colLen);
        Encoding.UTF8.GetBytes(collection, value.AsSpan(18));
        Encoding.UTF8.GetBytes(changeVector, value.AsSpan(18 + colLen));
        return value;
    }

    public static long Etag(ReadOnlySpan<byte> value) => BinaryPrimitives.ReadInt64LittleEndian(value);

    public static Tombstone Read(ReadOnlySpan<byte> value, ReadOnlySpan<byte> lowerId)
    {
        int colLen = BinaryPrimitives.ReadUInt16LittleEndian(value[16..]);
        return new Tombstone(Encoding.UTF8.GetString(lowerId), Encoding.UTF8.GetString(value.Slice(18, colLen)), Etag(value),
            Encoding.UTF8.GetString(value[(18 + colLen)..]), new DateTime(BinaryPrimitives.ReadInt64LittleEndian(value[8..]), DateTimeKind.Utc));
    }
}

/// <summary>A deleted document as its tombstone remembers it (the id lower-cased: a tombstone keeps no casing).</summary>
public sealed record Tombstone(string LowerId, string Collection, long Etag, string ChangeVector, DateTime Deleted);
