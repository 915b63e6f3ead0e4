using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Attachments;

/// <summary>
/// Attachment contents, stored once per distinct content (docs/format/documents.md "Attachments"). A document's
/// attachments are listed in its <c>@attachments</c> (name, hash, content type, size: <see cref="DocumentExtras"/>);
/// the bytes live apart:
/// <list type="bullet">
/// <item><c>AttachmentHashes</c>: hash (32 bytes, SHA-256) → content id (16 bytes), reference count (int64), size (int64).</item>
/// <item><c>AttachmentContent</c>: content id + chunk number (int32, big endian) → up to <see cref="ChunkSize"/> bytes.</item>
/// <item><c>AttachmentUploads</c>: content ids staged by an upload not yet attached; whatever is left there when a
///   database opens was cut short (a crash, a failed request) and is removed.</item>
/// </list>
/// A content is written chunk by chunk as it arrives (<see cref="AttachmentUpload"/>), then attached in the
/// transaction that changes the document; identical content (same hash) is kept once and counted.
/// </summary>
public static class AttachmentsStore
{
    internal const string HashesTree = "AttachmentHashes";
    internal const string ContentTree = "AttachmentContent";
    internal const string UploadsTree = "AttachmentUploads";

    /// <summary>Bytes per content chunk (and per staging write).</summary>
    public const int ChunkSize = 4 * 1024 * 1024;

    /// <summary>Longest attachment name, in UTF-8 bytes.</summary>
    public const int MaxNameBytes = 512;

    /// <summary>400 for a name that is empty, too long or holds control characters.</summary>
    public static void ValidateName(string? name) => ExtensionKeys.ValidateName(name, "attachment", MaxNameBytes);

    /// <summary>The stored content of a hash: its id and size, or null when no attachment has it.</summary>
    public static (byte[] ContentId, long Size, long References)? Find(Transaction tx, string hash)
    {
        if (tx.ReadTree(HashesTree) is not { } t || !t.TryGet(HashKey(hash), out var v))
            return null;
        return (v[..16].ToArray(), BinaryPrimitives.ReadInt64LittleEndian(v[24..]), BinaryPrimitives.ReadInt64LittleEndian(v[16..]));
    }

    private static byte[] HashKey(string hash)
    {
        var key = new byte[32];
        if (!Convert.TryFromBase64String(hash, key, out int n) || n != 32)
            throw new BadRequestException($"'{hash}' is not an attachment hash.");
        return key;
    }

    internal static byte[] ChunkKey(ReadOnlySpan<byte> contentId, int chunk)
    {
        var key = new byte[20];
        contentId.CopyTo(key);
        BinaryPrimitives.WriteInt32BigEndian(key.AsSpan(16), chunk);
        return key;
    }

    /// <summary>Writes one chunk of a content being staged (and records the content as staged).</summary>
    internal static void WriteChunk(WriteTransaction tx, byte[] contentId, int chunk, ReadOnlySpan<byte> data)
    {
        if (chunk == 0)
            tx.CreateTree(UploadsTree).Put(contentId, []);
        tx.CreateTree(ContentTree).Put(ChunkKey(contentId, chunk), data);
    }

    /// <summary>Removes the chunks of a content.</summary>
    internal static void DeleteContent(WriteTransaction tx, ReadOnlySpan<byte> contentId, long size)
    {
        var tree = tx.CreateTree(ContentTree);
        int chunks = (int)Math.Max(1, (size + ChunkSize - 1) / ChunkSize);
        for (int i = 0; i < chunks; i++)
            tree.Delete(ChunkKey(contentId, i));
    }

    /// <summary>
    /// Takes a reference to <paramref name="content"/> in <paramref name="tx"/>: an existing content with the same hash
    /// gains a reference (and the staged copy, if any, is dropped); a new one is registered (its staged chunks
    /// become the content, or its inline bytes are written now).
    /// </summary>
    internal static void AddReference(WriteTransaction tx, StagedContent content)
    {
        var hashes = tx.CreateTree(HashesTree);
        var key = HashKey(content.Hash);
        if (hashes.TryGet(key, out var v))
        {
            var value = v.ToArray();
            BinaryPrimitives.WriteInt64LittleEndian(value.AsSpan(16), BinaryPrimitives.ReadInt64LittleEndian(value.AsSpan(16)) + 1);
            hashes.Put(key, value);
            if (content.Staged && tx.CreateTree(UploadsTree).Delete(content.ContentId))
                DeleteContent(tx, content.ContentId, content.Size);
            return;
        }
        if (content.Staged)
        {
            if (!tx.CreateTree(UploadsTree).Delete(content.ContentId))
                throw new InvalidOperationException("The staged attachment content is gone (it was attached already, or removed at start-up).");
        }
        else
        {
            var tree = tx.CreateTree(ContentTree);
            var inline = content.Inline.Span;
            int chunk = 0;
            do
            {
                int n = Math.Min(ChunkSize, inline.Length);
                tree.Put(ChunkKey(content.ContentId, chunk++), inline[..n]);
                inline = inline[n..];
            }
            while (!inline.IsEmpty);
        }
        var entry = new byte[32];
        content.ContentId.CopyTo(entry, 0);
        BinaryPrimitives.WriteInt64LittleEndian(entry.AsSpan(16), 1);
        BinaryPrimitives.WriteInt64LittleEndian(entry.AsSpan(24), content.Size);
        hashes.Put(key, entry);
    }

    /// <summary>Adds a reference to a content already stored (a copy of an attachment).</summary>
    internal static void AddReference(WriteTransaction tx, string hash)
    {
        var hashes = tx.CreateTree(HashesTree);
        var key = HashKey(hash);
        if (!hashes.TryGet(key, out var v))
            throw new InvalidOperationException($"Attachment content {hash} is not stored.");
        var value = v.ToArray();
        BinaryPrimitives.WriteInt64LittleEndian(value.AsSpan(16), BinaryPrimitives.ReadInt64LittleEndian(value.AsSpan(16)) + 1);
        hashes.Put(key, value);
    }

    /// <summary>Drops a reference to a content; the last one removes the content.</summary>
    internal static void Release(WriteTransaction tx, string hash)
    {
        var hashes = tx.CreateTree(HashesTree);
        var key = HashKey(hash);
        if (!hashes.TryGet(key, out var v))
            return;
        var value = v.ToArray();
        long refs = BinaryPrimitives.ReadInt64LittleEndian(value.AsSpan(16)) - 1;
        if (refs > 0)
        {
            BinaryPrimitives.WriteInt64LittleEndian(value.AsSpan(16), refs);
            hashes.Put(key, value);
            return;
        }
        hashes.Delete(key);
        DeleteContent(tx, value.AsSpan(0, 16), BinaryPrimitives.ReadInt64LittleEndian(value.AsSpan(24)));
    }

    /// <summary>Drops the references of every attachment of a document that is being deleted.</summary>
    internal static void ReleaseAll(WriteTransaction tx, DocumentExtras extras)
    {
        foreach (var a in extras.Attachments.Values)
            Release(tx, a.Hash);
    }

    /// <summary>Removes contents staged by uploads that never finished (a database opening).</summary>
    public static int RemoveUnfinishedUploads(WriteTransaction tx)
    {
        var uploads = tx.CreateTree(UploadsTree);
        var ids = new List<byte[]>();
        var c = uploads.CreateCursor();
        for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
            ids.Add(c.Key.ToArray());
        var content = tx.CreateTree(ContentTree);
        foreach (var id in ids)
        {
            var chunks = new List<byte[]>();
            var cc = content.CreateCursor();
            cc.Prefix = id;
            for (bool ok = cc.SeekToFirst(); ok; ok = cc.MoveNext())
                chunks.Add(cc.Key.ToArray());
            foreach (var k in chunks)
                content.Delete(k);
            uploads.Delete(id);
        }
        return ids.Count;
    }

    /// <summary>Distinct contents stored, the attachments referring to them, and the bytes the contents hold.</summary>
    public static (long Unique, long Attachments, long Bytes) Stats(Transaction tx)
    {
        if (tx.ReadTree(HashesTree) is not { } t)
            return (0, 0, 0);
        long bytes = 0, references = 0;
        var c = t.CreateCursor();
        for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
        {
            references += BinaryPrimitives.ReadInt64LittleEndian(c.Value[16..]);
            bytes += BinaryPrimitives.ReadInt64LittleEndian(c.Value[24..]);
        }
        return (t.Count, references, bytes);
    }

    /// <summary>
    /// Copies bytes [<paramref name="from"/>, <paramref name="from"/>+<paramref name="length"/>) of a content to
    /// <paramref name="output"/>, a chunk at a time (read under <paramref name="tx"/>, a snapshot that stays valid while writing).
    /// </summary>
    public static async Task CopyToAsync(Transaction tx, byte[] contentId, long from, long length, Stream output, CancellationToken cancellationToken)
    {
        var tree = tx.ReadTree(ContentTree) ?? throw new InvalidOperationException("No attachment content is stored.");
        var buffer = System.Buffers.ArrayPool<byte>.Shared.Rent(ChunkSize);
        try
        {
            int chunk = (int)(from / ChunkSize);
            int offset = (int)(from % ChunkSize);
            while (length > 0)
            {
                if (!tree.TryGet(ChunkKey(contentId, chunk), out var data))
                    throw new InvalidOperationException($"Attachment content chunk {chunk} is missing.");
                int n = (int)Math.Min(length, data.Length - offset);
                data.Slice(offset, n).CopyTo(buffer);
                await output.WriteAsync(buffer.AsMemory(0, n), cancellationToken).ConfigureAwait(false);
                length -= n;
                offset = 0;
                chunk++;
            }
        }
        finally
        {
            System.Buffers.ArrayPool<byte>.Shared.Return(buffer);
        }
    }
}

/// <summary>
/// A content ready to attach: its SHA-256 hash (base64), size and id; either staged in storage already
/// (<see cref="Staged"/>, large contents) or held in <see cref="Inline"/> (at most one chunk).
/// </summary>
public sealed record StagedContent(string Hash, long Size, byte[] ContentId, bool Staged, ReadOnlyMemory<byte> Inline);
