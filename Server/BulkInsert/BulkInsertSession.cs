using System.IO.Pipelines;
using RavenLite.Server.Attachments;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Memory;
using RavenLite.Server.Operations;

namespace RavenLite.Server.BulkInsert;

/// <summary>
/// One bulk-insert stream into a database: items are parsed as they arrive and gather into a batch handed to the
/// merger (one transaction each) at a byte bound, a count bound, or when the stream has been quiet for
/// <see cref="ServerOptions.BulkInsertQuietMs"/>. At most <see cref="MaxBatchesInFlight"/> batches are in flight,
/// charged to the request's memory lease, so memory stays bounded whatever the stream's size. Progress goes to the
/// operation's state. A batch commits whole or not at all; batches committed before a failure stay.
/// </summary>
public sealed class BulkInsertSession
{
    /// <summary>Batches handed to the merger and not yet committed, at most.</summary>
    public const int MaxBatchesInFlight = 2;

    private readonly Database _db;
    private readonly OperationState _state;
    private readonly PipeReader _pipe;
    private readonly ServerOptions _options;
    private readonly MemoryBudget.Lease? _memory;
    private readonly bool _skipUnchanged;
    private readonly Queue<BulkInsertBatch> _inFlight = new();
    private readonly BulkInsertReader _parser;
    private BulkInsertBatch? _batch;

    /// <summary>A session reading <paramref name="pipe"/> into <paramref name="db"/>, reporting to <paramref name="state"/>.</summary>
    public BulkInsertSession(Database db, OperationState state, PipeReader pipe, ServerOptions options, MemoryBudget.Lease? memory, bool skipUnchanged)
    {
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(options);
        (_db, _state, _pipe, _options, _memory, _skipUnchanged) = (db, state, pipe, options, memory, skipUnchanged);
        _parser = new BulkInsertReader(pipe, db.Documents, options.MaxDocumentBytes);
    }

    /// <summary>
    /// Reads the stream to its closing <c>]</c> and waits for every batch to be durable; the state is then Completed.
    /// Throws what stopped it (a 4xx for bad input; the merger's failure; cancellation): call <see cref="AbandonAsync"/>.
    /// </summary>
    public async Task RunAsync(CancellationToken cancellation)
    {
        while (!_parser.Finished)
        {
            var result = await ReadAsync(cancellation).ConfigureAwait(false);
            _parser.Consume(result, () => _batch ??= new BulkInsertBatch(_skipUnchanged), Full);
            if (_parser.PendingAttachment is { } attachment)
                await ReadAttachmentAsync(attachment, cancellation).ConfigureAwait(false);
            if (_batch != null && Full(_batch))
                await SubmitAsync().ConfigureAwait(false);
        }
        if (_batch is { Count: > 0 })
            await SubmitAsync().ConfigureAwait(false);
        else
            _batch?.Dispose(); // only heartbeats since the last batch: give its memory back
        _batch = null;
        while (_inFlight.Count > 0)
            await CompleteOldestAsync().ConfigureAwait(false);
        _state.Complete();
    }

    /// <summary>
    /// After a failure: discards what the unsent batch staged, and waits for the batches in flight (each commits whole
    /// or not at all), so the state's counts are exact. Never throws.
    /// </summary>
    public async Task AbandonAsync()
    {
        // Attachment contents staged for a batch that will never run (those of a failed batch in flight are swept when the database opens).
        foreach (var staged in _batch?.StagedContents ?? [])
            await AttachmentUpload.DiscardAsync(_db.Merger, staged.ContentId, staged.Size).ConfigureAwait(false);
        _batch?.Dispose();
        _batch = null;
        while (_inFlight.Count > 0)
        {
            try
            {
                await CompleteOldestAsync().ConfigureAwait(false);
            }
            catch (Exception)
            {
                // The first failure is the one reported.
            }
        }
    }

    /// <summary>A drainer for the rest of a refused stream, from where the parser stopped (null when the array has ended).</summary>
    public BodyDrainer? BeginDrain() => _parser.BeginDrain();

    private bool Full(BulkInsertBatch b) => b.Count >= _options.BulkInsertBatchDocuments || b.Bytes >= _options.BulkInsertBatchBytes;

    /// <summary>The next bytes; with a batch pending and nothing buffered, the batch goes to the merger if the stream stays quiet for a moment.</summary>
    private async Task<ReadResult> ReadAsync(CancellationToken cancellation)
    {
        if (_batch is not { Count: > 0 })
            return await _pipe.ReadAsync(cancellation).ConfigureAwait(false);
        if (_pipe.TryRead(out var buffered))
            return buffered;
        var readTask = _pipe.ReadAsync(cancellation).AsTask();
        if (await Task.WhenAny(readTask, Task.Delay(_options.BulkInsertQuietMs, cancellation)).ConfigureAwait(false) != readTask)
            await SubmitAsync().ConfigureAwait(false);
        return await readTask.ConfigureAwait(false);
    }

    /// <summary>An attachment's raw bytes follow its item: streamed to storage (staged in chunks), then attached with the batch.</summary>
    private async Task ReadAttachmentAsync(BulkInsertAttachment attachment, CancellationToken cancellation)
    {
        if (attachment.Length > _options.MaxAttachmentBytes)
            throw new TooLargeException($"Attachment '{attachment.Name}' of '{attachment.DocumentId}' is over the limit of {_options.MaxAttachmentBytes} bytes (MaxAttachmentBytes).");
        await using var content = new PipeSliceStream(_pipe, attachment.Length);
        var staged = await AttachmentUpload.StageAsync(content, _db.Merger, attachment.Length, cancellation).ConfigureAwait(false);
        if (staged.Size != attachment.Length)
            throw new BadRequestException($"The bulk insert stream ended inside attachment '{attachment.Name}' of '{attachment.DocumentId}' ({staged.Size} of {attachment.Length} bytes).");
        _parser.AttachmentRead();
        (_batch ??= new BulkInsertBatch(_skipUnchanged)).Add(attachment, staged);
    }

    /// <summary>Hands the pending batch to the merger, first waiting for the oldest when <see cref="MaxBatchesInFlight"/> are in flight.</summary>
    private async Task SubmitAsync()
    {
        var batch = _batch!;
        while (_inFlight.Count >= MaxBatchesInFlight)
            await CompleteOldestAsync().ConfigureAwait(false);
        // 503 when the budget has no room: the batch is not handed over (AbandonAsync disposes it).
        _memory?.Add(batch.Bytes, $"A bulk insert holds up to {MaxBatchesInFlight} batches of BulkInsertBatchBytes while they commit: run fewer bulk inserts at once, or lower BulkInsertBatchBytes.");
        _batch = null;
        _ = _db.Merger.EnqueueAsync(batch);
        _inFlight.Enqueue(batch);
    }

    private async Task CompleteOldestAsync()
    {
        var oldest = _inFlight.Dequeue();
        try
        {
            await oldest.Completion.ConfigureAwait(false);
            _state.AddProcessed(oldest.Count);
            _state.AddSkipped(oldest.Skipped);
        }
        finally
        {
            _memory?.Remove(oldest.Bytes);
            oldest.Dispose();
        }
    }
}
