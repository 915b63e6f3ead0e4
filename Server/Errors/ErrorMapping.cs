using RavenLite.Storage;

namespace RavenLite.Server.Errors;

/// <summary>
/// The one place that maps a failure to what the caller is told: the status code, RavenDB's exception type name
/// (the official clients raise the exception named by the last segment) and the message. HTTP answers, failed
/// operations and streamed errors all classify through here.
/// </summary>
public static class ErrorMapping
{
    /// <summary>Maps an exception to (status, client Type, message).</summary>
    public static (int Status, string Type, string Message) Classify(Exception e) => e switch
    {
        DomainException d => (StatusOf(d), d.ClientType, d.Message),
        JsonException j => (400, RavenExceptionTypes.BadRequest, "Invalid JSON: " + j.Message),
        InvalidOperationException r when IsInputJson(r) => (400, RavenExceptionTypes.BadRequest, "Invalid JSON: " + r.Message),
        StorageLimitException l => (413, RavenExceptionTypes.BadRequest, l.Message),
        _ when DiskFullException.IsDiskFull(e) => (507, RavenExceptionTypes.DiskFull, DiskFullMessage(e)),
        StorageFailedException f => (500, RavenExceptionTypes.RavenException, f.Message),
        TimeoutException t => (408, RavenExceptionTypes.Timeout, t.Message),
        _ => (500, RavenExceptionTypes.RavenException, e.Message),
    };

    /// <summary>
    /// System.Text.Json's readers throw <see cref="InvalidOperationException"/> (not <see cref="JsonException"/>) when
    /// well-formed JSON does not give what was asked of it: a string escaping a lone UTF-16 surrogate (<c>"\ud800"</c>,
    /// legal JSON that has no string value), invalid UTF-8 inside a string, a number where a string was read. The input's
    /// fault, not the server's (the writer's own failures come from other frames and stay 500s).
    /// </summary>
    public static bool IsInputJson(Exception e) =>
        e is InvalidOperationException && e.Source?.StartsWith("System.Text.Json", StringComparison.Ordinal) == true && e.StackTrace is { } stack
        && ReaderFrames.Any(f => stack.Contains(f, StringComparison.Ordinal));

    private static readonly string[] ReaderFrames =
        ["System.Text.Json.Utf8JsonReader.", "System.Text.Json.JsonElement.", "System.Text.Json.JsonDocument.", "System.Text.Json.JsonReaderHelper."];

    /// <summary>The status code of each kind of domain error.</summary>
    public static int StatusOf(DomainException e) => e switch
    {
        BadRequestException or InvalidQueryException or IndexCompilationException => 400,
        AccessDeniedException => 403,
        // RavenDB answers these with 500 and the exception's type: its clients read a 404 as "no such document" (a null
        // result), and raise the named exception only from an error answer.
        NotFoundException { ClientType: RavenExceptionTypes.IndexDoesNotExist or RavenExceptionTypes.SubscriptionDoesNotExist } => 500,
        NotFoundException => 404,
        ReplicationTimeoutException => 408,
        ConcurrencyException => 409,
        TooLargeException => 413,
        UnavailableException => 503,
        _ => 500,
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
}
