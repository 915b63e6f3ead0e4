namespace RavenLite.Server.Http;

/// <summary>
/// Writes every answer with an explicit <c>Content-Length</c> (the Node client needs it, docs/protocol.md
/// §1.2): the JSON is built into a buffer first, then sent in one write.
/// </summary>
public static class JsonResponse
{
    private static readonly JsonWriterOptions WriterOptions = new() { SkipValidation = false, Indented = false, Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping };

    /// <summary>Builds a JSON body with <paramref name="write"/> and sends it with <paramref name="status"/>.</summary>
    public static async Task WriteAsync(HttpContext context, int status, Action<Utf8JsonWriter> write)
    {
        using var buffer = new RequestMemory.Writer(context);
        using (var writer = new Utf8JsonWriter(buffer, WriterOptions))
            write(writer);
        var response = Start(context, status, buffer.Length);
        buffer.CopyTo(response.BodyWriter); // one flush (one send) for all the segments
        await response.BodyWriter.FlushAsync(context.RequestAborted).ConfigureAwait(false);
    }

    /// <summary>Sends already-serialized JSON.</summary>
    public static async Task SendAsync(HttpContext context, int status, ReadOnlyMemory<byte> json)
    {
        await Start(context, status, json.Length).Body.WriteAsync(json, context.RequestAborted).ConfigureAwait(false);
    }

    private static HttpResponse Start(HttpContext context, int status, long length)
    {
        var response = context.Response;
        response.StatusCode = status;
        response.ContentType = "application/json; charset=utf-8";
        response.ContentLength = length;
        return response;
    }

    /// <summary>An answer with no body and <c>Content-Length: 0</c>.</summary>
    public static Task EmptyAsync(HttpContext context, int status)
    {
        context.Response.StatusCode = status;
        context.Response.ContentLength = 0;
        return Task.CompletedTask;
    }
}
