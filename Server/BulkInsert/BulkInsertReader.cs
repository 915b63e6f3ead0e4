using System.IO.Pipelines;
using RavenLite.Server.Documents;

namespace RavenLite.Server.BulkInsert;

/// <summary>
/// Incremental parser of a bulk-insert body (docs/protocol.md §7): one JSON array of
/// <c>{"Id":..,"Type":"PUT","Document":{..}}</c> items (and <c>{"Type":"Counters","Counters":{..}}</c>,
/// <c>{"Type":"AttachmentPUT","Name":..,"ContentLength":n}</c> followed by n raw bytes, <c>{"Type":"HeartBeat"}</c>), read from a
/// <see cref="PipeReader"/> as it arrives, never buffered whole. Between items a few bytes of array
/// syntax are checked by hand; each item gets one <see cref="Utf8JsonReader"/> pass over contiguous
/// bytes (the pipe's segment, or the item copied out when it spans segments) that finds its end,
/// validates it and prepares the document (<see cref="DocumentPreparer"/>) into the batch. When an
/// item is not all there yet, a byte scanner (strings, escapes, nesting) looks for its end in each
/// new piece only, and the item is parsed once it is whole, so a large document arriving in small
/// pieces costs O(size), not O(size × pieces). The pipe
/// keeps only the bytes of the item in progress. Returns at the array's closing <c>]</c> without
/// waiting for the end of the body (the Node client never ends it). Not thread-safe.
/// </summary>
public sealed class BulkInsertReader(PipeReader reader, DocumentsStorage documents, int maxDocumentBytes)
{
    private static readonly SearchValues<byte> Whitespace = SearchValues.Create(" \t\r\n"u8);
    private static readonly JsonReaderOptions ItemOptions = new() { MaxDepth = DocumentJson.MaxDepth + 1, CommentHandling = JsonCommentHandling.Disallow };

    private enum Expect
    {
        ArrayStart,     // before '['
        FirstItem,      // after '[': an item or ']'
        NextItem,       // after ',': an item
        CommaOrEnd,     // after an item: ',' or ']'
        InItem,         // inside an item
    }

    private bool _lastWasTimeSeries; // the item just read was a time series: the next may follow it without a comma
    private Expect _expect = Expect.ArrayStart;
    private byte[] _join = new byte[64 << 10];
    private long _bufferStart;      // stream offset of the first byte the pipe still holds
    private long _scan;             // stream offset parsing resumes at
    private long _itemStart = -1;   // stream offset of the item being read, or -1
    private long _itemScanned = -1; // once a try ran out of bytes: how much of the item the end finder has scanned
    private readonly JsonNestingScanner _itemEnd = new(); // the end finder's state inside the item
    private bool _finished;
    private ReadOnlySequence<byte> _pending; // the buffer of a read Consume has not advanced past (it threw)
    private bool _hasPending;

    private long ItemLimit => maxDocumentBytes + 4096L;

    /// <summary>True once the closing <c>]</c> was read.</summary>
    public bool Finished => _finished;

    /// <summary>
    /// An AttachmentPUT item was just read: its <see cref="BulkInsertAttachment.Length"/> raw bytes come next in the
    /// stream, before the next <c>,</c> or <c>]</c>. The caller reads them from the pipe and calls <see cref="AttachmentRead"/>.
    /// </summary>
    public BulkInsertAttachment? PendingAttachment { get; private set; }

    /// <summary>The caller read the pending attachment's bytes from the pipe: parsing resumes after them.</summary>
    public void AttachmentRead()
    {
        var pending = PendingAttachment ?? throw new InvalidOperationException("No attachment is pending.");
        _scan += pending.Length;
        _bufferStart += pending.Length;
        PendingAttachment = null;
    }

    // Kept whole: the parse loop over one buffer (items, separators, the array's end), stopping where a batch
    // fills.
    /// <summary>
    /// Parses what is complete in <paramref name="result"/>: each document is validated, prepared
    /// (<see cref="DocumentPreparer"/>) into the batch <paramref name="batch"/> returns (asked per
    /// item, so a new batch can take over between two items) and added to it, then the pipe advances.
    /// Stops early when <paramref name="full"/> says the batch is full; the rest is parsed by the next call.
    /// 400 for anything that is not a well-formed array of items; 413 for an item over the limit.
    /// </summary>
    public void Consume(ReadResult result, Func<BulkInsertBatch> batch, Func<BulkInsertBatch, bool> full)
    {
        var buffer = result.Buffer;
        _pending = buffer;
        _hasPending = true;
        bool stop = false;
        // The pipe was advanced to the item in progress (or the next unread byte) last time: the buffer starts there.
        var remaining = buffer;
        while (!stop && !_finished && PendingAttachment == null)
        {
            if (_expect == Expect.InItem)
            {
                int length;
                if (_itemScanned < 0)
                {
                    length = TryItem(remaining, batch, out stop, full);
                    if (length < 0)
                    {
                        // Not all here yet: from now on only new bytes are scanned for the item's end, and it is parsed once whole.
                        _itemScanned = 0;
                        _itemEnd.Reset();
                        continue;
                    }
                }
                else
                {
                    long end = FindItemEnd(remaining);
                    if (end < 0)
                    {
                        if (_itemScanned > ItemLimit)
                            throw new TooLargeException($"A bulk insert item is over the limit of {maxDocumentBytes} bytes (MaxDocumentBytes).");
                        break;
                    }
                    _itemScanned = -1;
                    if (end > ItemLimit)
                        throw new TooLargeException($"A bulk insert item is over the limit of {maxDocumentBytes} bytes (MaxDocumentBytes).");
                    length = TryItem(remaining.Slice(0, end), batch, out stop, full);
                    if (length < 0)
                        throw new BadRequestException("Invalid JSON in the bulk insert stream: an item's brackets do not match.");
                }
                remaining = remaining.Slice(length);
                _scan = _itemStart + length;
                _itemStart = -1;
                _expect = Expect.CommaOrEnd;
                continue;
            }
            // Array syntax between items: skip whitespace, then one byte.
            long skipped = 0;
            int found = -1;
            foreach (var m in remaining)
            {
                var span = m.Span;
                int k = span.IndexOfAnyExcept(Whitespace);
                if (k >= 0)
                {
                    found = k;
                    skipped += k;
                    break;
                }
                skipped += span.Length;
            }
            long at = _scan + skipped;
            if (found < 0)
            {
                _scan = at;
                remaining = remaining.Slice(remaining.End);
                break;
            }
            Between(remaining.Slice(skipped, 1).FirstSpan[0], at);
            if (_expect == Expect.InItem)
            {
                _itemStart = _scan = at;
                remaining = remaining.Slice(skipped);
            }
            else
            {
                _scan = at + 1;
                remaining = remaining.Slice(skipped + 1);
            }
        }
        if (_expect == Expect.ArrayStart && result.IsCompleted)
            throw new BadRequestException(buffer.IsEmpty ? "The bulk insert body is empty; it must be a JSON array." : "The bulk insert body must be a JSON array.");
        if (result.IsCompleted && !_finished && !stop)
            throw new BadRequestException($"The bulk insert stream ended after {_bufferStart + buffer.Length} bytes, inside the array (no closing ']').");
        long keep = _itemStart >= 0 ? _itemStart : _scan;
        var consumed = buffer.GetPosition(keep - _bufferStart);
        // Stopped early for a full batch: the rest is unread, so the next read must return at once.
        reader.AdvanceTo(consumed, stop ? consumed : buffer.End);
        _hasPending = false;
        _bufferStart = keep;
    }

    /// <summary>
    /// After a failure (<see cref="Consume"/> threw, or the insert failed between two calls): a drainer
    /// positioned where parsing stopped (an item's start or a point between items, so inside the array),
    /// already fed with the unread rest of a read <see cref="Consume"/> did not advance past (which is then
    /// advanced). Continue with <see cref="BodyDrainer.DrainAsync"/> on the same pipe; null when the array
    /// was read to its end already.
    /// </summary>
    public BodyDrainer? BeginDrain()
    {
        if (_finished)
        {
            if (_hasPending)
                reader.AdvanceTo(_pending.End);
            _hasPending = false;
            return null;
        }
        var drainer = _expect == Expect.ArrayStart ? BodyDrainer.FromStart() : BodyDrainer.InsideArray();
        if (_hasPending)
        {
            long from = Math.Clamp((_itemStart >= 0 ? _itemStart : _scan) - _bufferStart, 0, _pending.Length);
            drainer.Feed(_pending.Slice(from));
            reader.AdvanceTo(_pending.End);
            _hasPending = false;
        }
        return drainer;
    }

    /// <summary>A byte outside any item (not whitespace) at stream offset <paramref name="at"/>: moves the array state on, or 400.</summary>
    private void Between(byte c, long at)
    {
        switch (_expect)
        {
            case Expect.ArrayStart when c == (byte)'[':
                _expect = Expect.FirstItem;
                return;
            case Expect.ArrayStart:
                throw new BadRequestException($"The bulk insert body must be a JSON array of objects; found '{(char)c}' at byte {at}.");
            case Expect.FirstItem or Expect.NextItem when c == (byte)'{':
                _expect = Expect.InItem;
                return;
            case Expect.FirstItem or Expect.CommaOrEnd when c == (byte)']':
                _finished = true;
                return;
            case Expect.CommaOrEnd when c == (byte)',':
                _expect = Expect.NextItem;
                return;
            case Expect.CommaOrEnd when c == (byte)'{' && _lastWasTimeSeries:
                // An item right after a time-series item: older RavenDB clients write that one without the comma after it.
                _expect = Expect.InItem;
                return;
            case Expect.CommaOrEnd:
                throw new BadRequestException($"Invalid JSON in the bulk insert stream at byte {at}: expected ',' or ']' after an item, found '{(char)c}'.");
            default:
                throw new BadRequestException($"The bulk insert body must be a JSON array of objects; found '{(char)c}' at byte {at}.");
        }
    }

    /// <summary>Scans the item in progress (at the start of <paramref name="item"/>) from where the last scan stopped; returns its length once its closing brace is seen, else -1.</summary>
    private long FindItemEnd(ReadOnlySequence<byte> item)
    {
        foreach (var m in item.Slice(_itemScanned))
        {
            int end = _itemEnd.FindClose(m.Span);
            if (end >= 0)
                return _itemScanned + end + 1;
            _itemScanned += m.Length;
        }
        return -1;
    }

    /// <summary>
    /// Parses the item at the start of <paramref name="rest"/> if it is complete there: from the first
    /// segment when it holds the whole item, else from a copy. Returns its length, or -1 when more bytes are needed.
    /// </summary>
    private int TryItem(ReadOnlySequence<byte> rest, Func<BulkInsertBatch> currentBatch, out bool stop, Func<BulkInsertBatch, bool> full)
    {
        var first = rest.FirstSpan;
        int length = ParseItem(first, currentBatch, out stop, full);
        if (length >= 0 || rest.IsSingleSegment)
            return length;
        // Spans segments: copy a window from the item's start, doubling it until the item fits or the bytes run out.
        long window = Math.Max(first.Length * 2L, 16 << 10);
        while (true)
        {
            int n = (int)Math.Min(Math.Min(window, rest.Length), ItemLimit + 1);
            if (_join.Length < n)
                _join = new byte[Math.Max(n, Math.Min(_join.Length * 2L, ItemLimit + 1))];
            rest.Slice(0, n).CopyTo(_join);
            length = ParseItem(_join.AsSpan(0, n), currentBatch, out stop, full);
            if (length >= 0 || n == rest.Length || n > ItemLimit)
                return length;
            window *= 2;
        }
    }

    // Kept whole: one item's parse over the bytes buffered so far, a state machine resumed across calls whose
    // states share the reader's position and the item's fields.
    /// <summary>
    /// One pass over the item at the start of <paramref name="source"/>: its keys, and the document validated
    /// and prepared straight into the batch's arena. Returns the item's length (the batch then holds it;
    /// <paramref name="stop"/> says the batch is full), or -1 when <paramref name="source"/> ends inside it.
    /// </summary>
    private int ParseItem(ReadOnlySpan<byte> source, Func<BulkInsertBatch> currentBatch, out bool stop, Func<BulkInsertBatch, bool> full)
    {
        stop = false;
        var r = new Utf8JsonReader(source, isFinalBlock: false, new JsonReaderState(ItemOptions));
        var preparer = DocumentPreparer.Current;
        string? type = null, id = null, collection = null;
        byte[]? counters = null; // the raw Counters or TimeSeries object of such an item
        string? name = null, contentType = null;
        long contentLength = -1;
        int prefix = 0, length;
        BulkInsertBatch? batch = null;
        try
        {
            if (!r.Read())
                return -1;
            preparer.BeginEnvelope();
            while (true)
            {
                if (!preparer.TryNextName(ref r, out bool end))
                    return Incomplete(batch);
                if (end)
                    break;
                if (r.ValueTextEquals("Document"u8))
                {
                    if (!r.Read())
                        return Incomplete(batch);
                    if (r.TokenType != JsonTokenType.StartObject)
                        throw new BadRequestException($"Bulk insert item '{id}' has no Document object.");
                    batch ??= currentBatch();
                    batch.Arena.BeginItem(source.Length < 64 << 10 ? source.Length + 64 : 4096);
                    if (!preparer.TryPrepareAt(ref r, source, batch.Arena, out prefix, out string c))
                        return Incomplete(batch);
                    collection = c;
                    continue;
                }
                bool isId = r.ValueTextEquals("Id"u8), isType = r.ValueTextEquals("Type"u8);
                bool isCounters = r.ValueTextEquals("Counters"u8) || r.ValueTextEquals("TimeSeries"u8);
                bool isName = r.ValueTextEquals("Name"u8), isContentType = r.ValueTextEquals("ContentType"u8), isContentLength = r.ValueTextEquals("ContentLength"u8);
                if (!r.Read())
                    return Incomplete(batch);
                if (isId && r.TokenType == JsonTokenType.String)
                    id = r.GetString();
                else if (isType && r.TokenType == JsonTokenType.String)
                    type = r.GetString();
                else if (isName && r.TokenType == JsonTokenType.String)
                    name = r.GetString();
                else if (isContentType && r.TokenType == JsonTokenType.String)
                    contentType = r.GetString();
                else if (isContentLength && r.TokenType == JsonTokenType.Number && r.TryGetInt64(out long n))
                    contentLength = n;
                int valueStart = (int)r.TokenStartIndex;
                if (!preparer.TrySkipValue(ref r))
                    return Incomplete(batch);
                if (isCounters)
                    counters = source[valueStart..(int)r.BytesConsumed].ToArray();
            }
            preparer.CloseObject();
            length = (int)r.BytesConsumed;
            if (length > ItemLimit)
                throw new TooLargeException($"A bulk insert item is over the limit of {maxDocumentBytes} bytes (MaxDocumentBytes).");
            // The reader checks structure, not the UTF-8 inside strings.
            if (!System.Text.Unicode.Utf8.IsValid(source[..length]))
                throw new BadRequestException("Invalid bulk insert item: not valid UTF-8.");
            type ??= "PUT";
            if (type == "HeartBeat")
            {
                batch?.Arena.AbandonItem();
                return length;
            }
            if (type == "Counters")
            {
                batch?.Arena.AbandonItem();
                if (counters == null)
                    throw new BadRequestException($"Bulk insert Counters item '{id}' has no Counters object.");
                using var parsed = DocumentJson.Parse(counters, 4);
                var operations = Counters.CounterBatch.Parse(parsed.RootElement, $"Bulk insert Counters item '{id}'", documents);
                batch = currentBatch();
                batch.Add(operations, length);
                stop = full(batch);
                return length;
            }
            _lastWasTimeSeries = type == "TimeSeriesBulkInsert";
            if (type == "TimeSeriesBulkInsert")
            {
                batch?.Arena.AbandonItem();
                if (counters == null || id == null)
                    throw new BadRequestException($"Bulk insert TimeSeriesBulkInsert item '{id}' has no Id or no TimeSeries object.");
                documents.ValidateId(id);
                using var parsed = DocumentJson.Parse(counters, 4);
                var operation = TimeSeries.TimeSeriesOperation.Parse(parsed.RootElement, $"Bulk insert time series of '{id}'");
                batch = currentBatch();
                batch.Add(id, operation, length);
                stop = full(batch);
                return length;
            }
            if (type == "AttachmentPUT")
            {
                // The attachment's bytes follow the item, outside the JSON: the caller reads them (PendingAttachment).
                batch?.Arena.AbandonItem();
                if (id == null)
                    throw new BadRequestException("A bulk insert AttachmentPUT item has no Id.");
                documents.ValidateId(id);
                Attachments.AttachmentsStore.ValidateName(name);
                if (contentLength < 0)
                    throw new BadRequestException($"Bulk insert AttachmentPUT item '{id}/{name}' has no ContentLength.");
                PendingAttachment = new BulkInsertAttachment(id, name!, contentType, contentLength);
                stop = true;
                return length;
            }
            if (type != "PUT")
                throw new BadRequestException($"Bulk insert item Type '{type}' is not supported (PUT, Counters, TimeSeriesBulkInsert, AttachmentPUT and HeartBeat are).");
            if (id == null)
                throw new BadRequestException("A bulk insert item has no Id.");
            if (collection == null || batch == null)
                throw new BadRequestException($"Bulk insert item '{id}' has no Document object.");
            documents.ValidateIdToWrite(id);
        }
        catch (Exception e)
        {
            batch?.Arena.AbandonItem();
            if (e is JsonException j)
                throw new BadRequestException("Invalid bulk insert item: " + DocumentPreparer.Invalid(j).Message);
            throw;
        }
        batch.Add(id, collection, batch.Arena.EndItem(), prefix, length);
        stop = full(batch);
        return length;
    }

    /// <summary>Drops what an unfinished item wrote to the batch's arena; returns -1.</summary>
    private static int Incomplete(BulkInsertBatch? batch)
    {
        batch?.Arena.AbandonItem();
        return -1;
    }
}

/// <summary>An AttachmentPUT of a bulk insert: the document, name, content type and the length of the raw bytes that follow.</summary>
public sealed record BulkInsertAttachment(string DocumentId, string Name, string? ContentType, long Length);
