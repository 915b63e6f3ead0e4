using System.Buffers;
using System.IO.Pipelines;
using System.Text.Json;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;

namespace RavenLite.Server.BulkInsert;

/// <summary>
/// Incremental parser of a bulk-insert body (PROTOCOL.md §7): one JSON array of
/// <c>{"Id":..,"Type":"PUT","Document":{..}}</c> items (and <c>{"Type":"HeartBeat"}</c>), read from a
/// <see cref="PipeReader"/> as it arrives, never buffered whole. One <see cref="Utf8JsonReader"/>
/// state runs over the whole stream, so each byte is tokenized once however the chunks fall; the
/// pipe keeps only the bytes of the item in progress. Returns at the array's closing <c>]</c>
/// without waiting for the end of the body (the Node client never ends it). Not thread-safe.
/// </summary>
public sealed class BulkInsertReader(PipeReader reader, DocumentsStorage documents, int maxDocumentBytes)
{
    private static readonly JsonReaderOptions ReaderOptions = new() { MaxDepth = DocumentJson.MaxDepth + 3, CommentHandling = JsonCommentHandling.Disallow };
    private static readonly JsonDocumentOptions ItemOptions = DocumentJson.ParseOptions(2);

    private JsonReaderState _state = new(ReaderOptions);
    private byte[] _join = new byte[64 << 10];
    private long _bufferStart;      // stream offset of the first byte the pipe still holds
    private long _scan;             // stream offset the tokenizer resumes at
    private long _itemStart = -1;   // stream offset of the item being read, or -1
    private bool _started, _finished;

    /// <summary>Bytes of the body tokenized so far.</summary>
    public long BytesRead => _scan;

    /// <summary>True once the closing <c>]</c> was read.</summary>
    public bool Finished => _finished;

    /// <summary>
    /// Parses what is complete in <paramref name="result"/>: each document is validated, prepared
    /// (<see cref="DocumentJson.Prepare"/>) into the batch <paramref name="batch"/> returns (asked per
    /// item, so a new batch can take over between two items) and added to it, then the pipe advances.
    /// Stops early when <paramref name="full"/> says the batch is full; the rest is parsed by the next call.
    /// 400 for anything that is not a well-formed array of items; 413 for an item over the limit.
    /// </summary>
    public void Consume(ReadResult result, Func<BulkInsertBatch> batch, Func<BulkInsertBatch, bool> full)
    {
        var buffer = result.Buffer;
        bool stop = false;
        // Never a final block: the end of the body is judged below, so a cut-off stream gets a message saying so.
        var r = new Utf8JsonReader(buffer.Slice(_scan - _bufferStart), isFinalBlock: false, _state);
        try
        {
            while (!_finished && !stop && r.Read())
            {
                switch (r.TokenType)
                {
                    case JsonTokenType.StartArray when r.CurrentDepth == 0:
                        _started = true;
                        break;
                    case JsonTokenType.StartObject when r.CurrentDepth == 1:
                        _itemStart = _scan + r.TokenStartIndex;
                        break;
                    case JsonTokenType.EndObject when r.CurrentDepth == 1:
                        long end = _scan + r.BytesConsumed;
                        var item = buffer.Slice(_itemStart - _bufferStart, end - _itemStart);
                        stop = Item(item, batch, full);
                        _itemStart = -1;
                        break;
                    case JsonTokenType.EndArray when r.CurrentDepth == 0:
                        _finished = true;
                        break;
                    default:
                        if (r.CurrentDepth == 0 || (r.CurrentDepth == 1 && _itemStart < 0))
                            throw ApiException.BadRequest($"The bulk insert body must be a JSON array of objects; found {r.TokenType} at byte {_scan + r.TokenStartIndex}.");
                        break;
                }
            }
        }
        catch (JsonException e)
        {
            throw ApiException.BadRequest($"Invalid JSON in the bulk insert stream near byte {_scan + r.BytesConsumed}: {e.Message}");
        }
        if (!_started && result.IsCompleted)
            throw ApiException.BadRequest(buffer.IsEmpty ? "The bulk insert body is empty; it must be a JSON array." : "The bulk insert body must be a JSON array.");
        _scan += r.BytesConsumed;
        _state = r.CurrentState;
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
        JsonDocument doc;
        try
        {
            doc = JsonDocument.Parse(raw, ItemOptions);
        }
        catch (JsonException e)
        {
            throw ApiException.BadRequest("Invalid bulk insert item: " + e.Message);
        }
        using (doc)
        {
            var root = doc.RootElement;
            string type = root.TryGetProperty("Type", out var t) && t.ValueKind == JsonValueKind.String ? t.GetString()! : "PUT";
            if (type == "HeartBeat")
                return false;
            if (type != "PUT")
                throw ApiException.BadRequest($"Bulk insert item Type '{type}' is not supported (PUT and HeartBeat are).");
            string id = root.TryGetProperty("Id", out var i) && i.ValueKind == JsonValueKind.String ? i.GetString()! : throw ApiException.BadRequest("A bulk insert item has no Id.");
            if (!root.TryGetProperty("Document", out var d) || d.ValueKind != JsonValueKind.Object)
                throw ApiException.BadRequest($"Bulk insert item '{id}' has no Document object.");
            documents.ValidateId(id.TrimEnd('/', '|').Length == 0 ? "" : id);
            string collection = DocumentJson.CollectionOf(d);
            var batch = currentBatch();
            batch.Arena.BeginItem((int)bytes.Length + 64);
            int prefix;
            try
            {
                prefix = DocumentJson.Prepare(d, batch.Arena);
            }
            catch
            {
                batch.Arena.AbandonItem();
                throw;
            }
            batch.Add(id, collection, batch.Arena.EndItem(), prefix, (int)bytes.Length);
            return full(batch);
        }
    }
}
