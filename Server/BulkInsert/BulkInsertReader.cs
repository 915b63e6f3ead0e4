using System.Buffers;
using System.IO.Pipelines;
using System.Text.Json;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;

namespace RavenLite.Server.BulkInsert;

/// <summary>
/// Incremental parser of a bulk-insert body (PROTOCOL.md §7): one JSON array of
/// <c>{"Id":..,"Type":"PUT","Document":{..}}</c> items (and <c>{"Type":"HeartBeat"}</c>), read from a
/// <see cref="PipeReader"/> as it arrives, never buffered whole. A byte scanner finds where each item
/// ends (strings, escapes and nesting; between items only whitespace, commas and the brackets are
/// allowed); the item's bytes then get one full <see cref="Utf8JsonReader"/> pass that validates them
/// and prepares the document (<see cref="DocumentPreparer"/>). So every byte is tokenized once, and the
/// pipe keeps only the bytes of the item in progress. Returns at the array's closing <c>]</c> without
/// waiting for the end of the body (the Node client never ends it). Not thread-safe.
/// </summary>
public sealed class BulkInsertReader(PipeReader reader, DocumentsStorage documents, int maxDocumentBytes)
{
    private static readonly JsonReaderOptions ItemOptions = new() { MaxDepth = DocumentJson.MaxDepth + 1, CommentHandling = JsonCommentHandling.Disallow };
    private static readonly SearchValues<byte> Structural = SearchValues.Create("\"{}[]"u8);
    private static readonly SearchValues<byte> StringEnd = SearchValues.Create("\"\\"u8);

    private enum Expect
    {
        ArrayStart,     // before '['
        FirstItem,      // after '[': an item or ']'
        NextItem,       // after ',': an item
        CommaOrEnd,     // after an item: ',' or ']'
        InItem,         // inside an item
    }

    private Expect _expect = Expect.ArrayStart;
    private int _depth;             // nesting inside the item in progress
    private bool _inString, _escaped;
    private byte[] _join = new byte[64 << 10];
    private long _bufferStart;      // stream offset of the first byte the pipe still holds
    private long _scan;             // stream offset the scanner resumes at
    private long _itemStart = -1;   // stream offset of the item being read, or -1
    private bool _finished;

    /// <summary>Bytes of the body scanned so far.</summary>
    public long BytesRead => _scan;

    /// <summary>True once the closing <c>]</c> was read.</summary>
    public bool Finished => _finished;

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
        bool stop = false;
        long pos = _bufferStart;
        foreach (var memory in buffer)
        {
            long segmentEnd = pos + memory.Length;
            if (segmentEnd <= _scan)
            {
                pos = segmentEnd;
                continue;
            }
            var span = memory.Span;
            int i = (int)(_scan - pos);
            while (i < span.Length && !stop && !_finished)
            {
                if (_expect == Expect.InItem)
                {
                    int end = ScanItem(span, i);
                    if (end < 0)
                    {
                        i = span.Length;
                        break;
                    }
                    i = end + 1;
                    long itemEnd = pos + i;
                    stop = Item(buffer.Slice(_itemStart - _bufferStart, itemEnd - _itemStart), batch, full);
                    _itemStart = -1;
                    _expect = Expect.CommaOrEnd;
                    continue;
                }
                byte c = span[i];
                if (c is (byte)' ' or (byte)'\t' or (byte)'\r' or (byte)'\n')
                {
                    i++;
                    continue;
                }
                Between(c, pos + i);
                if (_expect == Expect.InItem)
                {
                    _itemStart = pos + i;
                    _depth = 1;
                }
                i++;
            }
            _scan = pos + i;
            pos = segmentEnd;
            if (stop || _finished)
                break;
        }
        if (_expect == Expect.ArrayStart && result.IsCompleted)
            throw ApiException.BadRequest(buffer.IsEmpty ? "The bulk insert body is empty; it must be a JSON array." : "The bulk insert body must be a JSON array.");
        if (_itemStart >= 0 && _scan - _itemStart > maxDocumentBytes + 4096L)
            throw ApiException.TooLarge($"A bulk insert item is over the limit of {maxDocumentBytes} bytes (MaxDocumentBytes).");
        if (result.IsCompleted && !_finished && !stop)
            throw ApiException.BadRequest($"The bulk insert stream ended after {_scan} bytes, inside the array (no closing ']').");
        long keep = _itemStart >= 0 ? _itemStart : _scan;
        var consumed = buffer.GetPosition(keep - _bufferStart);
        // Stopped early for a full batch: the rest is unread, so the next read must return at once.
        reader.AdvanceTo(consumed, stop ? consumed : buffer.End);
        _bufferStart = keep;
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
                throw ApiException.BadRequest($"The bulk insert body must be a JSON array of objects; found '{(char)c}' at byte {at}.");
            case Expect.FirstItem or Expect.NextItem when c == (byte)'{':
                _expect = Expect.InItem;
                return;
            case Expect.FirstItem or Expect.CommaOrEnd when c == (byte)']':
                _finished = true;
                return;
            case Expect.CommaOrEnd when c == (byte)',':
                _expect = Expect.NextItem;
                return;
            case Expect.CommaOrEnd:
                throw ApiException.BadRequest($"Invalid JSON in the bulk insert stream at byte {at}: expected ',' or ']' after an item, found '{(char)c}'.");
            default:
                throw ApiException.BadRequest($"The bulk insert body must be a JSON array of objects; found '{(char)c}' at byte {at}.");
        }
    }

    /// <summary>Scans the item in progress from <paramref name="i"/>; returns the index of its closing brace, or -1 when it goes on past <paramref name="span"/>.</summary>
    private int ScanItem(ReadOnlySpan<byte> span, int i)
    {
        while (i < span.Length)
        {
            if (_inString)
            {
                if (_escaped)
                {
                    _escaped = false;
                    i++;
                    continue;
                }
                int j = span[i..].IndexOfAny(StringEnd);
                if (j < 0)
                    return -1;
                i += j;
                if (span[i] == (byte)'\\')
                    _escaped = true;
                else
                    _inString = false;
                i++;
                continue;
            }
            int k = span[i..].IndexOfAny(Structural);
            if (k < 0)
                return -1;
            i += k;
            switch (span[i])
            {
                case (byte)'"':
                    _inString = true;
                    break;
                case (byte)'{' or (byte)'[':
                    _depth++;
                    break;
                default:
                    if (--_depth == 0)
                        return i;
                    break;
            }
            i++;
        }
        return -1;
    }

    /// <summary>Validates and prepares one item into the current batch; returns true when the batch is full.</summary>
    private bool Item(ReadOnlySequence<byte> bytes, Func<BulkInsertBatch> currentBatch, Func<BulkInsertBatch, bool> full)
    {
        if (bytes.Length > maxDocumentBytes + 4096L)
            throw ApiException.TooLarge($"A bulk insert item is over the limit of {maxDocumentBytes} bytes (MaxDocumentBytes).");
        // Parsed in place (the pipe holds the bytes until this returns); an item split across pipe segments is joined in a reused buffer.
        ReadOnlyMemory<byte> raw;
        if (bytes.IsSingleSegment)
        {
            raw = bytes.First;
        }
        else
        {
            if (_join.Length < bytes.Length)
                _join = new byte[Math.Max(bytes.Length, _join.Length * 2L)];
            bytes.CopyTo(_join);
            raw = _join.AsMemory(0, (int)bytes.Length);
        }
        if (!System.Text.Unicode.Utf8.IsValid(raw.Span))
            throw ApiException.BadRequest("Invalid bulk insert item: not valid UTF-8.");
        // One pass over the item: its keys, and the document validated and prepared straight into the batch's arena.
        var source = raw.Span;
        var r = new Utf8JsonReader(source, ItemOptions);
        var preparer = DocumentPreparer.Current;
        string? type = null, id = null, collection = null;
        int prefix = 0;
        BulkInsertBatch? batch = null;
        try
        {
            r.Read(); // the item's '{' (the stream tokenizer saw an object)
            preparer.BeginEnvelope();
            while (r.Read() && r.TokenType == JsonTokenType.PropertyName)
            {
                preparer.AddName(ref r);
                if (r.ValueTextEquals("Document"u8))
                {
                    r.Read();
                    if (r.TokenType != JsonTokenType.StartObject)
                        throw ApiException.BadRequest($"Bulk insert item '{id}' has no Document object.");
                    batch ??= currentBatch();
                    batch.Arena.BeginItem((int)bytes.Length + 64);
                    prefix = preparer.PrepareAt(ref r, source, batch.Arena, out collection);
                    continue;
                }
                bool isId = r.ValueTextEquals("Id"u8), isType = r.ValueTextEquals("Type"u8);
                r.Read();
                if (isId && r.TokenType == JsonTokenType.String)
                    id = r.GetString();
                else if (isType && r.TokenType == JsonTokenType.String)
                    type = r.GetString();
                preparer.SkipValue(ref r);
            }
            if (r.TokenType != JsonTokenType.EndObject)
                throw ApiException.BadRequest($"Invalid bulk insert item: unexpected {r.TokenType} where a property name belongs.");
            preparer.CloseObject();
        }
        catch (Exception e)
        {
            batch?.Arena.AbandonItem();
            if (e is JsonException j)
                throw ApiException.BadRequest("Invalid bulk insert item: " + DocumentPreparer.Invalid(j).Message);
            throw;
        }
        type ??= "PUT";
        if (type == "HeartBeat")
        {
            batch?.Arena.AbandonItem();
            return false;
        }
        try
        {
            if (type != "PUT")
                throw ApiException.BadRequest($"Bulk insert item Type '{type}' is not supported (PUT and HeartBeat are).");
            if (id == null)
                throw ApiException.BadRequest("A bulk insert item has no Id.");
            if (collection == null || batch == null)
                throw ApiException.BadRequest($"Bulk insert item '{id}' has no Document object.");
            documents.ValidateId(id.TrimEnd('/', '|').Length == 0 ? "" : id);
        }
        catch
        {
            batch?.Arena.AbandonItem();
            throw;
        }
        batch.Add(id, collection, batch.Arena.EndItem(), prefix, (int)bytes.Length);
        return full(batch);
    }
}
