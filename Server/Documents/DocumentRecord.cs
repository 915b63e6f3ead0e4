namespace RavenLite.Server.Documents;

/// <summary>
/// The value stored under a document's lower-cased id in the <c>Docs</c> tree (docs/format/documents.md):
/// <code>
/// offset size meaning
///  0      8   etag (int64, little endian)
///  8      8   last-modified, UTC ticks (int64)
/// 16      2   id length in UTF-8 bytes (uint16)
/// 18      2   collection length in UTF-8 bytes (uint16; the top bit set: an explicit change vector follows it)
/// 20      n   id, stored casing
/// 20+n    m   collection, stored casing
/// [20+n+m 2   change vector length (uint16), then the change vector (UTF-8) — only with the top bit set]
/// ..      ..  the document's JSON (UTF-8, full @metadata), or compressed (<see cref="DocumentCompression"/>)
/// </code>
/// A record without an explicit change vector has the one-entry vector of its etag on its database
/// (<see cref="DocumentsStorage.LocalChangeVector"/>): every record a single node writes, so they pay nothing for replication.
/// </summary>
internal static class DocumentRecord
{
    public const int HeaderSize = 20;
    private const ushort ExplicitChangeVector = 0x8000;

    /// <summary>
    /// Writes the record's header, id, collection and — when it is not the etag's own one-entry vector, null — the
    /// <paramref name="explicitChangeVector"/> (everything before the JSON) to <paramref name="output"/>.
    /// </summary>
    public static void WriteHeader(IBufferWriter<byte> output, string id, string collection, long etag, DateTime lastModified, string? explicitChangeVector)
    {
        int idLen = Encoding.UTF8.GetByteCount(id), colLen = Encoding.UTF8.GetByteCount(collection);
        int cvLen = explicitChangeVector == null ? 0 : Encoding.UTF8.GetByteCount(explicitChangeVector);
        if (colLen >= ExplicitChangeVector || cvLen > ushort.MaxValue)
            throw new BadRequestException($"Collection name or change vector too long for document '{id}'.");
        int size = HeaderSize + idLen + colLen + (explicitChangeVector == null ? 0 : 2 + cvLen);
        var span = output.GetSpan(size);
        BinaryPrimitives.WriteInt64LittleEndian(span, etag);
        BinaryPrimitives.WriteInt64LittleEndian(span[8..], lastModified.Ticks);
        BinaryPrimitives.WriteUInt16LittleEndian(span[16..], (ushort)idLen);
        BinaryPrimitives.WriteUInt16LittleEndian(span[18..], (ushort)(colLen | (explicitChangeVector == null ? 0 : ExplicitChangeVector)));
        Encoding.UTF8.GetBytes(id, span[HeaderSize..]);
        Encoding.UTF8.GetBytes(collection, span[(HeaderSize + idLen)..]);
        if (explicitChangeVector != null)
        {
            BinaryPrimitives.WriteUInt16LittleEndian(span[(HeaderSize + idLen + colLen)..], (ushort)cvLen);
            Encoding.UTF8.GetBytes(explicitChangeVector, span[(HeaderSize + idLen + colLen + 2)..]);
        }
        output.Advance(size);
    }

    public static long Etag(ReadOnlySpan<byte> value) => BinaryPrimitives.ReadInt64LittleEndian(value);

    public static DateTime LastModified(ReadOnlySpan<byte> value) => new(BinaryPrimitives.ReadInt64LittleEndian(value[8..]), DateTimeKind.Utc);

    private static int CollectionLength(ReadOnlySpan<byte> value) => BinaryPrimitives.ReadUInt16LittleEndian(value[18..]) & ~ExplicitChangeVector;

    public static string Collection(ReadOnlySpan<byte> value)
    {
        int idLen = BinaryPrimitives.ReadUInt16LittleEndian(value[16..]);
        return Encoding.UTF8.GetString(value.Slice(HeaderSize + idLen, CollectionLength(value)));
    }

    /// <summary>True when the record stores its change vector (one that is more than its etag's own entry).</summary>
    public static bool HasExplicitChangeVector(ReadOnlySpan<byte> value) => (BinaryPrimitives.ReadUInt16LittleEndian(value[18..]) & ExplicitChangeVector) != 0;

    /// <summary>The record's change vector: the explicit one, or its etag's one-entry vector on <paramref name="documents"/>.</summary>
    public static string ChangeVector(ReadOnlySpan<byte> value, DocumentsStorage documents)
    {
        if ((BinaryPrimitives.ReadUInt16LittleEndian(value[18..]) & ExplicitChangeVector) == 0)
            return documents.LocalChangeVector(Etag(value));
        int at = HeaderSize + BinaryPrimitives.ReadUInt16LittleEndian(value[16..]) + CollectionLength(value);
        return Encoding.UTF8.GetString(value.Slice(at + 2, BinaryPrimitives.ReadUInt16LittleEndian(value[at..])));
    }

    /// <summary>The id in stored casing.</summary>
    public static string Id(ReadOnlySpan<byte> value) =>
        Encoding.UTF8.GetString(value.Slice(HeaderSize, BinaryPrimitives.ReadUInt16LittleEndian(value[16..])));

    /// <summary>Length of the record's header, id and collection (where its body starts).</summary>
    public static int BodyOffset(ReadOnlySpan<byte> value)
    {
        int at = HeaderSize + BinaryPrimitives.ReadUInt16LittleEndian(value[16..]) + CollectionLength(value);
        return (BinaryPrimitives.ReadUInt16LittleEndian(value[18..]) & ExplicitChangeVector) == 0 ? at : at + 2 + BinaryPrimitives.ReadUInt16LittleEndian(value[at..]);
    }

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
        long etag = BinaryPrimitives.ReadInt64LittleEndian(value);
        var modified = new DateTime(BinaryPrimitives.ReadInt64LittleEndian(value[8..]), DateTimeKind.Utc);
        byte[] json = documents.Compression.Decode(value[BodyOffset(value)..]);
        return new StoredDocument(Id(value), Collection(value), etag, ChangeVector(value, documents), modified, json);
    }
}
