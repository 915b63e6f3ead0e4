namespace RavenLite.Server.Http;

/// <summary>
/// One log line per request at Debug level (category <c>RavenLite.Server.Http.RequestLog</c>): method, path, status
/// and duration, with the request's trace id (ASP.NET Core's logging scope, shown in JSON logs). Costs one check
/// per request when Debug is off.
/// </summary>
public sealed partial class RequestLog(RequestDelegate next, ILogger<RequestLog> logger)
{
    public Task InvokeAsync(HttpContext context)
    {
        if (!logger.IsEnabled(LogLevel.Debug))
            return next(context);
        return Logged(context);
    }

    private async Task Logged(HttpContext context)
    {
        long start = Stopwatch.GetTimestamp();
        try
        {
            await next(context).ConfigureAwait(false);
        }
        finally
        {
            Request(logger, context.Request.Method, context.Request.Path + context.Request.QueryString, context.Response.StatusCode,
                Stopwatch.GetElapsedTime(start).TotalMilliseconds, Activity.Current?.TraceId.ToString() ?? context.TraceIdentifier);
        }
    }

    [LoggerMessage(100, LogLevel.Debug, "{Method} {Path} {Status} in {ElapsedMs:0.###} ms (trace {TraceId})")]
    private static partial void Request(ILogger logger, string method, string path, int status, double elapsedMs, string traceId);
}
