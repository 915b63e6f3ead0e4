using System.Security.Cryptography;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Attachments;

/// <summary>
/// Reads an attachment's bytes from a stream as they arrive, hashing them (SHA-256): a content of at most one
/// chunk is kept in memory to be written with the attach; a larger one is written to storage a chunk at a time
/// (each a merger command, staged under a new content id) so that no attachment is ever held whole. A staged
/// content that is never attached is removed (at once when the upload fails, else when the database next opens).
/// </summary>
public static class AttachmentUpload
{
    /// <summary>Stages the content of <paramref name="body"/>; 413 past <paramref name="limit"/> bytes (nothing kept).</summary>
    public static async Task<StagedContent> StageAsync(Stream body, WriteMerger merger, long limit, CancellationToken cancellationToken)
    {
        using var sha = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        var contentId = Guid.NewGuid().ToByteArray();
        var buffer = ArrayPool<byte>.Shared.Rent(AttachmentsStore.ChunkSize);
        int chunk = 0;
        long size = 0;
        var inFlight = new Queue<Task>();
        try
        {
            while (true)
            {
                int filled = await ReadChunkAsync(body, buffer, cancellationToken).ConfigureAwait(false);
                size += filled;
                if (size > limit)
                    throw new TooLargeException($"Attachment is over the limit of {limit} bytes (MaxAttachmentBytes).");
                sha.AppendData(buffer, 0, filled);
                if (chunk == 0 && filled < AttachmentsStore.ChunkSize)
                    return new StagedContent(Convert.ToBase64String(sha.GetHashAndReset()), size, contentId, Staged: false, buffer.AsSpan(0, filled).ToArray());
                if (filled == 0)
                    break;
                var data = buffer.AsSpan(0, filled).ToArray();
                int n = chunk++;
                // Up to two chunks are being written while the next one is read and hashed.
                inFlight.Enqueue(merger.EnqueueAsync(new DelegateCommand<bool>(ctx =>
                {
                    AttachmentsStore.WriteChunk(ctx.Transaction, contentId, n, data);
                    return true;
                }, filled)));
                if (inFlight.Count >= 2)
                    await inFlight.Dequeue().ConfigureAwait(false);
                if (filled < AttachmentsStore.ChunkSize)
                    break;
            }
            while (inFlight.Count > 0)
                await inFlight.Dequeue().ConfigureAwait(false);
            return new StagedContent(Convert.ToBase64String(sha.GetHashAndReset()), size, contentId, Staged: true, default);
        }
        catch when (chunk > 0)
        {
            foreach (var t in inFlight)
                await t.ContinueWith(_ => { }, TaskScheduler.Default).ConfigureAwait(false); // let every started write end before discarding
            await DiscardAsync(merger, contentId, size).ConfigureAwait(false);
            throw;
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
    }

    /// <summary>Removes a staged content that will not be attached (best effort: what is left is removed when the database opens).</summary>
    public static async Task DiscardAsync(WriteMerger merger, byte[] contentId, long size)
    {
        try
        {
            await merger.EnqueueAsync(new DelegateCommand<bool>(ctx =>
            {
                if (ctx.Transaction.CreateTree(AttachmentsStore.UploadsTree).Delete(contentId))
                    AttachmentsStore.DeleteContent(ctx.Transaction, contentId, size);
                return true;
            })).ConfigureAwait(false);
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            // The database is closing or failed: the start-up sweep removes the chunks.
        }
    }

    /// <summary>Fills <paramref name="buffer"/> from the stream (up to one chunk); fewer bytes only at its end.</summary>
    private static async Task<int> ReadChunkAsync(Stream body, byte[] buffer, CancellationToken cancellationToken)
    {
        int filled = 0;
        while (filled < AttachmentsStore.ChunkSize)
        {
            int n = await body.ReadAsync(buffer.AsMemory(filled, AttachmentsStore.ChunkSize - filled), cancellationToken).ConfigureAwait(false);
            if (n == 0)
                break;
            filled += n;
        }
        return filled;
    }
}
