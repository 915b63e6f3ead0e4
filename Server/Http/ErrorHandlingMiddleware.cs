using System.Text.Json;
using RavenLite.Storage;

namespace RavenLite.Server.Http;

/// <summary>
/// Turns every failure into the JSON error shape of PROTOCOL.md §9 (<c>{Url, Type, Message, Error}</c>)
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
            if (e is not ApiException)
                Hosting.Log.RequestFailed(logger, e, context.Request.Method, context.Request.Path);
            else
                Hosting.Log.RequestRejected(logger, context.Request.Method, context.Request.Path, status, message);
            context.Response.Clear();
            MemoryBudget.Release(context); // the failed answer's buffers are garbage; the error answer is small
            if (e is DatabaseMissingException missing)
                context.Response.Headers["Database-Missing"] = missing.Database;
            await WriteErrorAsync(context, status, type, message, e is ApiException ? message : e.ToString(), (e as ApiException)?.Extra).ConfigureAwait(false);
        }
    }

    /// <summary>Maps an exception to (status, client Type, message).</summary>
    public static (int Status, string Type, string Message) Classify(Exception e) => e switch
    {
        ApiException a => (a.StatusCode, a.ClientType, a.Message),
        BadHttpRequestException b => (b.StatusCode, RavenExceptionTypes.BadRequest, b.Message),
        JsonException j => (400, RavenExceptionTypes.BadRequest, "Invalid JSON: " + j.Message),
        StorageLimitException l => (413, RavenExceptionTypes.BadRequest, l.Message),
        _ when DiskFullException.IsDiskFull(e) => (507, RavenExceptionTypes.DiskFull, DiskFullMessage(e)),
        StorageFailedException f => (500, RavenExceptionTypes.RavenException, f.Message),
        TimeoutException t => (408, RavenExceptionTypes.Timeout, t.Message),
        _ => (500, RavenExceptionTypes.RavenException, e.Message),
    };

    /// <summary>
    /// The answer to a write refused for want of disk space (507, RavenDB's DiskFullException): what happened to the
    /// write, that nothing else is affected, and what to do.
    /// </summary>
    private static string DiskFullMessage(Exception e) => e is StorageFailedException
        ? "The disk is full, and the database's storage stopped on it; the database reopens by itself, recovering from its journal. " +
          "This write may or may not have been applied: read before retrying. Everything acknowledged before is intact. " + e.Message
        : "The disk is full: this write was not applied (nothing of it is stored) and may be retried; " +
          "everything acknowledged before is intact and reads go on. Free space on the data directory's volume and writes resume by themselves. " + e.Message;

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
            w.WriteEndObject();
        });
}
