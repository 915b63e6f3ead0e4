using System.IO.Compression;
using System.IO.Pipelines;

namespace RavenLite.Server.Http;

/// <summary>Reads whole (non-streaming) request bodies under a byte limit, undoing gzip/deflate content encoding.</summary>
public static class RequestBody
{
    /// <summary>The request body as bytes; 413 once it passes <paramref name="limit"/> (decompressed), 400 for a broken gzip stream.</summary>
    public static async Task<ReadOnlyMemory<byte>> ReadAsync(HttpContext context, long limit, string limitName = "MaxRequestBodyBytes")
    {
        var stream = Decode(context.Request);
        // A plain (not compressed) body of declared length is read into an array of exactly that size: one allocation per request.
        long? exact = ReferenceEquals(stream, context.Request.Body) && context.Request.ContentLength is > 0 and var n0 ? n0 : null;
        if (exact > limit)
            throw new TooLargeException($"Request body is over the limit of {limit} bytes ({limitName}).");
        var buffer = new ArrayBufferWriter<byte>(exact is { } size ? (int)size : 4096);
        try
        {
            while (buffer.WrittenCount != exact) // Kestrel ends the body at Content-Length: no read for the end needed
            {
                int n = await stream.ReadAsync(buffer.GetMemory(exact == null ? 4096 : 1), context.RequestAborted).ConfigureAwait(false);
                if (n == 0)
                    break;
                buffer.Advance(n);
                if (buffer.WrittenCount > limit)
                    throw new TooLargeException($"Request body is over the limit of {limit} bytes ({limitName}).");
            }
        }
        catch (InvalidDataException e)
        {
            throw new BadRequestException("Request body is not valid for its Content-Encoding: " + e.Message);
        }
        return buffer.WrittenMemory;
    }

    /// <summary>
    /// The body parsed as JSON (depth ≤ 64) under <c>MaxRequestBodyBytes</c>; 400 naming
    /// <paramref name="what"/> when it is not JSON. The caller disposes the document.
    /// </summary>
    public static async Task<System.Text.Json.JsonDocument> ReadJsonAsync(HttpContext context, string what)
    {
        var options = context.RequestServices.GetRequiredService<Configuration.ServerOptions>();
        var body = await ReadAsync(context, options.MaxRequestBodyBytes).ConfigureAwait(false);
        try
        {
            return System.Text.Json.JsonDocument.Parse(body, new System.Text.Json.JsonDocumentOptions { MaxDepth = 64 });
        }
        catch (System.Text.Json.JsonException e)
        {
            throw new BadRequestException($"The {what} request body is not valid JSON: " + e.Message);
        }
    }

    /// <summary>
    /// The body as a pipe: Kestrel's own body reader when it is not compressed (no second buffer or
    /// copy), else a pipe over the decompressing stream of <see cref="Decode"/>. The caller must not
    /// complete it (the server owns Kestrel's reader).
    /// </summary>
    public static PipeReader DecodeToPipe(HttpRequest request) =>
        Decode(request) is var stream && ReferenceEquals(stream, request.Body)
            ? request.BodyReader
            : PipeReader.Create(stream, new StreamPipeReaderOptions(minimumReadSize: 64 << 10, leaveOpen: true));

    /// <summary>The body stream, decompressed when <c>Content-Encoding</c> says gzip or deflate; 400 for other encodings.</summary>
    public static Stream Decode(HttpRequest request)
    {
        string? encoding = request.Headers.ContentEncoding;
        if (string.IsNullOrEmpty(encoding) || encoding.Equals("identity", StringComparison.OrdinalIgnoreCase))
            return request.Body;
        if (encoding.Equals("gzip", StringComparison.OrdinalIgnoreCase))
            return new GZipStream(request.Body, CompressionMode.Decompress, leaveOpen: true);
        if (encoding.Equals("deflate", StringComparison.OrdinalIgnoreCase))
            return new ZLibStream(request.Body, CompressionMode.Decompress, leaveOpen: true);
        throw new BadRequestException($"Content-Encoding '{encoding}' is not supported (use gzip, deflate or none).");
    }
}
