using System.Buffers;
using System.Runtime.InteropServices;
using System.Text.Json;
using RavenLite.Server.Http;

namespace RavenLite.Server.Documents;

/// <summary>
/// Validates incoming document JSON and writes the stored form (DESIGN.md "Documents"): an object,
/// depth ≤ 64, no duplicate keys, valid UTF-8; <c>@metadata</c> keeps every client key verbatim
/// (<c>Raven-Node-Type</c>, <c>@nested-object-types</c>, ...) while the server owns <c>@id</c>,
/// <c>@collection</c>, <c>@change-vector</c> and <c>@last-modified</c>.
/// Thread-safe (no state).
/// </summary>
public static class DocumentJson
{
    /// <summary>Documents nest at most this deep (RELIABILITY.md I1).</summary>
    public const int MaxDepth = 64;

    /// <summary>Parsing options for a request body that wraps documents <paramref name="envelopeDepth"/> levels deep.</summary>
    public static JsonDocumentOptions ParseOptions(int envelopeDepth) => new()
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
            throw ApiException.BadRequest("Invalid JSON: the body is not valid UTF-8.");
        try
        {
            return JsonDocument.Parse(body, ParseOptions(envelopeDepth));
        }
        catch (JsonException e) when (e.Message.Contains("maximum configured depth", StringComparison.Ordinal))
        {
            throw ApiException.BadRequest($"Invalid JSON: it nests deeper than allowed (documents may nest at most {MaxDepth} levels). {e.Message}");
        }
        catch (JsonException e)
        {
            throw ApiException.BadRequest("Invalid JSON: " + e.Message);
        }
        catch (ArgumentException e)
        {
            throw ApiException.BadRequest("Invalid JSON: " + e.Message);
        }
    }

    /// <summary>The collection named by <c>@metadata.@collection</c>, or <c>@empty</c>. 400 when it is not a usable string.</summary>
    public static string CollectionOf(JsonElement document)
    {
        if (document.ValueKind != JsonValueKind.Object)
            throw ApiException.BadRequest($"A document must be a JSON object, not {document.ValueKind}.");
        if (!document.TryGetProperty("@metadata", out var meta))
            return Collections.Empty;
        if (meta.ValueKind != JsonValueKind.Object)
            throw ApiException.BadRequest("@metadata must be a JSON object.");
        if (!meta.TryGetProperty("@collection", out var c) || c.ValueKind == JsonValueKind.Null)
            return Collections.Empty;
        if (c.ValueKind != JsonValueKind.String)
            throw ApiException.BadRequest("@metadata.@collection must be a string.");
        string name = c.GetString()!;
        if (name.Length == 0)
            return Collections.Empty;
        Collections.Validate(name);
        return name;
    }

    /// <summary>The writer <see cref="WriteStored"/> uses for the server's metadata keys; reuse one per thread.</summary>
    public static Utf8JsonWriter CreateMetadataWriter() =>
        new(new ArrayBufferWriter<byte>(1), new JsonWriterOptions { SkipValidation = true, Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping });

    /// <summary>
    /// Writes the stored JSON of <paramref name="document"/> minus the server's metadata values, in two
    /// parts back to back: the prefix <c>{...document properties...,"@metadata":</c> and the suffix
    /// <c>,...client metadata properties...}}</c> (or <c>}}</c>); returns the prefix's length.
    /// <see cref="WriteStored"/> later puts the server's keys between them. Property names and values are
    /// copied as raw bytes (the document was parsed: valid UTF-8 within the depth limit), never
    /// re-encoded, so a prepared document outlives the parsed one (bulk insert keeps only these bytes).
    /// </summary>
    public static int Prepare(JsonElement document, IBufferWriter<byte> output)
    {
        int written = 0;
        Write(output, "{"u8, ref written);
        bool first = true;
        JsonElement meta = default;
        bool hasMeta = false;
        foreach (var p in document.EnumerateObject())
        {
            if (p.NameEquals("@metadata"))
            {
                meta = p.Value;
                hasMeta = p.Value.ValueKind == JsonValueKind.Object;
                continue;
            }
            WriteRawProperty(output, p, ref first, ref written);
        }
        if (!first)
            Write(output, ","u8, ref written);
        Write(output, "\"@metadata\":"u8, ref written);
        int prefix = written;
        if (hasMeta)
        {
            bool metaFirst = false; // the server's keys come first
            foreach (var p in meta.EnumerateObject())
            {
                if (p.NameEquals("@collection") || p.NameEquals("@id") || p.NameEquals("@change-vector") || p.NameEquals("@last-modified"))
                    continue;
                WriteRawProperty(output, p, ref metaFirst, ref written);
            }
        }
        Write(output, "}}"u8, ref written);
        return prefix;
    }

    /// <summary>
    /// Writes the stored JSON of a document prepared by <see cref="Prepare"/> (<paramref name="prepared"/>,
    /// whose first <paramref name="prefixLength"/> bytes are the prefix) to <paramref name="output"/>: its
    /// properties in order, then <c>@metadata</c> with the server's four keys and the client's others.
    /// <paramref name="metadataWriter"/> (from <see cref="CreateMetadataWriter"/>) is reset onto <paramref name="output"/>.
    /// </summary>
    public static void WriteStored(IBufferWriter<byte> output, Utf8JsonWriter metadataWriter, ReadOnlySpan<byte> prepared, int prefixLength,
        string id, string collection, string changeVector, DateTime lastModified)
    {
        output.Write(prepared[..prefixLength]);
        metadataWriter.Reset(output);
        metadataWriter.WriteStartObject();
        metadataWriter.WriteString("@collection"u8, collection);
        metadataWriter.WriteString("@id"u8, id);
        metadataWriter.WriteString("@change-vector"u8, changeVector);
        Span<byte> date = stackalloc byte[JsonResponse.DateLength];
        metadataWriter.WriteString("@last-modified"u8, date[..JsonResponse.FormatDate(lastModified, date)]);
        metadataWriter.Flush();
        output.Write(prepared[prefixLength..]);
    }

    /// <summary>Writes and counts (<see cref="Prepare"/> returns where its prefix ends).</summary>
    private static void Write(IBufferWriter<byte> output, ReadOnlySpan<byte> bytes, ref int written)
    {
        output.Write(bytes);
        written += bytes.Length;
    }

    private static void WriteRawProperty(IBufferWriter<byte> output, JsonProperty p, ref bool first, ref int written)
    {
        if (!first)
            Write(output, ","u8, ref written);
        first = false;
        Write(output, "\""u8, ref written);
        Write(output, JsonMarshal.GetRawUtf8PropertyName(p), ref written);
        Write(output, "\":"u8, ref written);
        Write(output, JsonMarshal.GetRawUtf8Value(p.Value), ref written);
    }
}
