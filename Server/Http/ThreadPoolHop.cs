namespace RavenLite.Server.Http;

/// <summary>
/// Kestrel runs with inline scheduling (<see cref="Hosting.ServerHost"/>): a request starts on the
/// thread that read it, the socket engine thread, or the merger thread when a client sent the next
/// request before its previous answer arrived. Single-document PUT and DELETE stay there: their
/// handlers only validate the body and queue a command. Every other request moves to the thread
/// pool first, so a long request (a query, a big listing, a database being opened or deleted) never
/// holds the socket thread, and no request runs on a merger thread whose database it could dispose
/// (the merger would wait for itself).
/// </summary>
public sealed class ThreadPoolHop(RequestDelegate next)
{
    /// <summary>Runs the rest of the pipeline here or on the thread pool.</summary>
    public Task InvokeAsync(HttpContext context) =>
        Thread.CurrentThread.IsThreadPoolThread || StaysInline(context.Request) ? next(context) : HopAsync(context);

    private async Task HopAsync(HttpContext context)
    {
        await Task.Yield(); // not on a thread-pool thread and no synchronization context: continues on the thread pool
        await next(context).ConfigureAwait(false);
    }

    /// <summary>PUT or DELETE of <c>/databases/{db}/docs</c>.</summary>
    internal static bool StaysInline(HttpRequest request)
    {
        if (!HttpMethods.IsPut(request.Method) && !HttpMethods.IsDelete(request.Method))
            return false;
        var path = request.Path.Value.AsSpan();
        const string Prefix = "/databases/", Suffix = "/docs";
        return path.Length > Prefix.Length + Suffix.Length
            && path.StartsWith(Prefix, StringComparison.OrdinalIgnoreCase)
            && path.EndsWith(Suffix, StringComparison.OrdinalIgnoreCase)
            && path[Prefix.Length..^Suffix.Length].IndexOf('/') < 0;
    }
}
