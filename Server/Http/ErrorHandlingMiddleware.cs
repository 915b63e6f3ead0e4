namespace RavenLite.Server.Http;

/// <summary>
/// Turns every failure into the JSON error shape of docs/protocol.md §9 (<c>{Url, Type, Message, Error}</c>)
/// with the matching status, and gives empty answers an explicit <c>Content-Length: 0</c>.
/// </summary>
public sealed class ErrorHandlingMiddleware(RequestDelegate next, ILogger<ErrorHandlingMiddleware> logger)
{
    /// <summary>
    /// The RavenDB protocol version every answer names in <c>Raven-Server-Version</c>: the clients read it to
    /// decide what the server supports (from 5.2 on, the atomic guards of cluster-wide transactions).
    /// </summary>
    public const string ProtocolVersion = "7.2";

    /// <summary>Runs the rest of the pipeline.</summary>
    public async Task InvokeAsync(HttpContext context)
    {
        context.Response.Headers["Raven-Server-Version"] = ProtocolVersion;
        try
        {
            await next(context).ConfigureAwait(false);
            if (!context.Response.HasStarted && context.Response.ContentLength == null)
                context.Response.ContentLength = 0;
        }
        catch (Exception e) when (e is OperationCanceledException && context.RequestAborted.IsCancellationRequested)
        {
            // The client went away (before or during the answer): nothing to tell it, and nothing failed on our side.
        }
        catch (Exception e) when (!context.Response.HasStarted)
        {
            var (status, type, message) = Classify(e);
            if (e is not DomainException && status >= 500)
                Logging.Log.RequestFailed(logger, e, context.Request.Method, context.Request.Path); // the server's own failure: an error
            else
                Logging.Log.RequestRejected(logger, context.Request.Method, context.Request.Path, status, message);
            context.Response.Clear();
            RequestMemory.Release(context); // the failed answer's buffers are garbage; the error answer is small
            if (e is DatabaseMissingException missing)
                context.Response.Headers["Database-Missing"] = missing.Database;
            await WriteErrorAsync(context, status, type, message, e is DomainException ? message : e.ToString(), (e as DomainException)?.Extra).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Maps an exception to (status, client Type, message): ASP.NET Core's own request errors here, everything
    /// else through <see cref="ErrorMapping"/>.
    /// </summary>
    public static (int Status, string Type, string Message) Classify(Exception e) => e is BadHttpRequestException b
        ? (b.StatusCode, RavenExceptionTypes.BadRequest, b.Message)
        : ErrorMapping.Classify(e);

    /// <summary>Writes one JSON error answer.</summary>
    public static Task WriteErrorAsync(HttpContext context, int status, string type, string message, string error, IReadOnlyDictionary<string, string>? extra = null) =>
        JsonResponse.WriteAsync(context, status, w =>
        {
            w.WriteStartObject();
            w.WriteString("Url", context.Request.Path + context.Request.QueryString);
            w.WriteString("Type", type);
            w.WriteString("Message", message);
            w.WriteString("Error", error);
            foreach (var (k, v) in extra ?? new Dictionary<string, string>())
                w.WriteString(k, v);
            if (type == RavenExceptionTypes.RavenTimeout)
                w.WriteBoolean("FailImmediately", true);
            w.WriteEndObject();
        });
}
