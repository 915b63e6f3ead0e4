using RavenLite.Server.Formatting;

namespace RavenLite.Server.Documents;

/// <summary>
/// Request bodies that wrap documents (parsed strictly: depth, duplicate keys, UTF-8) and the stored
/// form of a document (docs/architecture.md): <c>@metadata</c> keeps every client key verbatim
/// (<c>Raven-Node-Type</c>, <c>@nested-object-types</c>, ...) while the server owns <c>@id</c>,
/// <c>@collection</c> (absent for <c>@empty</c>), <c>@change-vector</c>, <c>@last-modified</c> and the
/// extension keys of <see cref="DocumentExtras"/>. Documents themselves are
/// validated and prepared by <see cref="DocumentPreparer"/>. Thread-safe (no state).
/// </summary>
public static class DocumentJson
{
    /// <summary>Documents nest at most this deep (docs/reliability.md I1).</summary>
    public const int MaxDepth = 64;

    /// <summary>Parsing options for a request body that wraps documents <paramref name="envelopeDepth"/> levels deep.</summary>
    private static JsonDocumentOptions ParseOptions(int envelopeDepth) => new()
    {
        MaxDepth = MaxDepth + envelopeDepth,
        AllowDuplicateProperties = false,
        CommentHandling = JsonCommentHandling.Disallow,
        AllowTrailingCommas = false,
    };

    /// <summary>Parses a request body; invalid UTF-8, malformed JSON, duplicate keys or excess depth are a 400 naming the problem.</summary>
    public static JsonDocument Parse(ReadOnlyMemory<byte> body, int envelopeDepth)
    {
        // JsonDocument checks UTF-8 lazily (when a string is read); check all of it up front.
        if (!System.Text.Unicode.Utf8.IsValid(body.Span))
            throw new BadRequestException("Invalid JSON: the body is not valid UTF-8.");
        try
        {
            return JsonDocument.Parse(body, ParseOptions(envelopeDepth));
        }
        catch (JsonException e) when (e.Message.Contains("maximum configured depth", StringComparison.Ordinal))
        {
            throw new BadRequestException($"Invalid JSON: it nests deeper than allowed (documents may nest at most {MaxDepth} levels). {e.Message}");
        }
        catch (JsonException e)
        {
            throw new BadRequestException("Invalid JSON: " + e.Message);
        }
        catch (ArgumentException e)
        {
            throw new BadRequestException("Invalid JSON: " + e.Message);
        }
    }

    /// <summary>The writer <see cref="WriteStored"/> uses for the server's metadata keys; reuse one per thread.</summary>
    public static Utf8JsonWriter CreateMetadataWriter() =>
        new(new ArrayBufferWriter<byte>(1), new JsonWriterOptions { SkipValidation = true, Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping });

    /// <summary>
    /// Writes the stored JSON of a document prepared by <see cref="DocumentPreparer"/> (<paramref name="prepared"/>,
    /// whose first <paramref name="prefixLength"/> bytes are the prefix) to <paramref name="output"/>: its
    /// properties in order, then <c>@metadata</c> with the server's four keys, the document's <paramref name="extras"/>
    /// (<c>@flags</c>, <c>@counters</c>, <c>@attachments</c>) and the client's others.
    /// <paramref name="metadataWriter"/> (from <see cref="CreateMetadataWriter"/>) is reset onto <paramref name="output"/>.
    /// </summary>
    public static void WriteStored(IBufferWriter<byte> output, Utf8JsonWriter metadataWriter, ReadOnlySpan<byte> prepared, int prefixLength,
        string id, string collection, string changeVector, DateTime lastModified, DocumentExtras? extras = null)
    {
        output.Write(prepared[..prefixLength]);
        metadataWriter.Reset(output);
        metadataWriter.WriteStartObject();
        // A document without a collection has no @collection, as in RavenDB; it is counted under @empty.
        if (!string.Equals(collection, Collections.Empty, StringComparison.Ordinal))
            metadataWriter.WriteString("@collection"u8, collection);
        metadataWriter.WriteString("@id"u8, id);
        metadataWriter.WriteString("@change-vector"u8, changeVector);
        Span<byte> date = stackalloc byte[JsonDates.DateLength];
        metadataWriter.WriteString("@last-modified"u8, date[..JsonDates.FormatDate(lastModified, date)]);
        extras?.Write(metadataWriter);
        metadataWriter.Flush();
        output.Write(prepared[prefixLength..]);
    }
}
