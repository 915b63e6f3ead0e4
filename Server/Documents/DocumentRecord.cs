namespace RavenLite.Server.Documents;

/// <summary>
/// The value stored under a document's lower-cased id in the <c>Docs</c> tree (docs/format/documents.md):
/// <code>
/// offset size meaning
///  0      8   etag (int64, little endian)
///  8      8   last-modified, UTC ticks (int64)
/// 16      2   id length in UTF-8 bytes (uint16)
/// 18      2   collection length in UTF-8 bytes (uint16)
/// 20      n   id, stored casing
/// 20+n    m   collection, stored casing
/// 20+n+m  ..  the document's JSON (UTF-8, full @metadata), or compressed (<see cref="DocumentCompression"/>)
/// </code>
/// </summary>
internal static class DocumentRecord
{
    public const int HeaderSize = 20;

    /// <summary>Writes the record's header, id and collection (everything before the JSON) to <paramref name="output"/>.</summary>
    public static void WriteHeader(IBufferWriter<byte> output, string id, string collection, long etag, DateTime lastModified)
    {
        int idLen = Encoding.UTF8.GetByteCount(id), colLen = Encoding.UTF8.GetByteCount(collection);
        var span = output.GetSpan(HeaderSize + idLen + colLen);
        BinaryPrimitives.WriteInt64LittleEndian(span, etag);
        BinaryPrimitives.WriteInt64LittleEndian(span[8..], lastModified.Ticks);
        BinaryPrimitives.WriteUInt16LittleEndian(span[16..], (ushort)idLen);
        BinaryPrimitives.WriteUInt16LittleEndian(span[18..], (ushort)colLen);
        Encoding.UTF8.GetBytes(id, span[HeaderSize..]);
        Encoding.UTF8.GetBytes(collection, span[(HeaderSize + idLen)..]);
        output.Advance(HeaderSize + idLen + colLen);
    }

    public static long Etag(ReadOnlySpan<byte> value) => BinaryPrimitives.ReadInt64LittleEndian(value);

    public static string Collection(ReadOnlySpan<byte> value)
    {
        int idLen = BinaryPrimitives.ReadUInt16LittleEndian(value[16..]), colLen = BinaryPrimitives.ReadUInt16LittleEndian(value[18..]);
        return Encoding.UTF8.GetString(value.Slice(HeaderSize + idLen, colLen));
    }

    /// <summary>The id in stored casing.</summary>
    public static string Id(ReadOnlySpan<byte> value) =>
        Encoding.UTF8.GetString(value.Slice(HeaderSize, BinaryPrimitives.ReadUInt16LittleEndian(value[16..])));

    /// <summary>Length of the record's header, id and collection (where its body starts).</summary>
    public static int BodyOffset(ReadOnlySpan<byte> value) =>
        HeaderSize + BinaryPrimitives.ReadUInt16LittleEndian(value[16..]) + BinaryPrimitives.ReadUInt16LittleEndian(value[18..]);

    /// <summary>The stored JSON: in place, or decompressed into <paramref name="buffer"/>.</summary>
    public static ReadOnlySpan<byte> Json(ReadOnlySpan<byte> value, DocumentsStorage documents, ref byte[]? buffer) =>
        documents.Compression.Decode(value[BodyOffset(value)..], ref buffer);

    /// <summary>The stored JSON: in place, or decompressed into a new array.</summary>
    public static ReadOnlySpan<byte> Json(ReadOnlySpan<byte> value, DocumentsStorage documents)
    {
        var body = value[BodyOffset(value)..];
        return DocumentCompression.IsCompressed(body) ? documents.Compression.Decode(body) : body;
    }

    /// <summary>A document or revision record (its body compressed or not).</summary>
    public static StoredDocument Read(ReadOnlySpan<byte> value, DocumentsStorage documents)
    {
        string databaseId = documents.DatabaseId;
        long etag = BinaryPrimitives.ReadInt64LittleEndian(value);
        var modified = new DateTime(BinaryPrimitives.ReadInt64LittleEndian(value[8..]), DateTimeKind.Utc);
        int idLen = BinaryPrimitives.ReadUInt16LittleEndian(value[16..]), colLen = BinaryPrimitives.ReadUInt16LittleEndian(value[18..]);
        string id = Encoding.UTF8.GetString(value.Slice(HeaderSize, idLen));
        string collection = Encoding.UTF8.GetString(value.Slice(HeaderSize + idLen, colLen));
        byte[] json = documents.Compression.Decode(value[(HeaderSize + idLen + colLen)..]);
        return new StoredDocument(id, collection, etag, ChangeVectors.Format(etag, databaseId), modified, json);
    }
}
