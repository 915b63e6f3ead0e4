namespace RavenLite.Server.Http;

/// <summary>
/// Kestrel runs with inline scheduling (<see cref="Hosting.ServerHost"/>): a request starts on the
/// thread that read it, the socket engine thread, or the merger thread when a client sent the next
/// request before its previous answer arrived. Endpoints marked <see cref="StayOnReadingThread"/>
/// (single-document PUT and DELETE, whose handlers only validate the body and queue a command) stay
/// there. Every other request moves to the thread pool first, so a long request (a query, a big
/// listing, a database being opened or deleted) never holds the socket thread, and no request runs
/// on a merger thread whose database it could dispose (the merger would wait for itself).
/// Runs after routing (WebApplication matches the endpoint first), so the mark is known here.
/// </summary>
public sealed class ThreadPoolHop(RequestDelegate next)
{
    /// <summary>Endpoint metadata: the handler is short and may run on the thread that read the request.</summary>
    public static readonly object StayOnReadingThread = new Marker();

    /// <summary>Runs the rest of the pipeline here or on the thread pool.</summary>
    public Task InvokeAsync(HttpContext context) =>
        Thread.CurrentThread.IsThreadPoolThread || context.GetEndpoint()?.Metadata.GetMetadata<Marker>() != null ? next(context) : HopAsync(context);

    private async Task HopAsync(HttpContext context)
    {
        await Task.Yield(); // not on a thread-pool thread and no synchronization context: continues on the thread pool
        await next(context).ConfigureAwait(false);
    }

    private sealed class Marker;
}
