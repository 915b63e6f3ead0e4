using Microsoft.AspNetCore.Diagnostics.HealthChecks;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Security;

namespace RavenLite.Server.Hosting;

/// <summary>
/// ASP.NET Core health checks: <c>GET /healthz</c> answers 200 "Healthy" while the process serves requests (liveness);
/// <c>GET /readyz</c> is 200 "Healthy" when the data directory is writable and every database opens and has not stopped
/// after an I/O error (readiness), 200 "Degraded: disk full: ..." while writes are refused for want of space, else 503
/// "Unhealthy: reason". <c>RavenLite.Server healthcheck</c>
/// asks <c>/readyz</c> of the running server (the container's HEALTHCHECK: the image needs no curl).
/// </summary>
public static class Health
{
    private const string Live = "live", Ready = "ready";

    /// <summary>Registers the checks.</summary>
    public static void AddServices(IServiceCollection services) =>
        services.AddHealthChecks()
            .AddCheck("process", () => HealthCheckResult.Healthy(), tags: [Live])
            .AddCheck<StorageReadiness>("storage", tags: [Ready]);

    /// <summary>Maps <c>/healthz</c> and <c>/readyz</c>.</summary>
    public static void Map(WebApplication app)
    {
        app.MapHealthChecks("/healthz", new HealthCheckOptions { Predicate = c => c.Tags.Contains(Live) }).Requires(Access.Anonymous);
        app.MapHealthChecks("/readyz", new HealthCheckOptions { Predicate = c => c.Tags.Contains(Ready), ResponseWriter = WriteAsync }).Requires(Access.Anonymous);
    }

    /// <summary>
    /// <c>healthcheck</c> command: GET <c>/readyz</c> of the server the configuration describes (its ServerUrl, with a
    /// wildcard host asked on 127.0.0.1); exit code 0 when ready, 1 otherwise.
    /// </summary>
    public static async Task<int> ProbeAsync(ServerOptions options)
    {
        var url = new UriBuilder(options.ServerUrl);
        if (url.Host is "0.0.0.0" or "*" or "+" or "[::]" or "::")
            url.Host = "127.0.0.1";
        url.Path = "/readyz";
        using var handler = new SocketsHttpHandler();
        if (options.Security.Secured)
        {
            // A secured server: /readyz needs no client certificate, and the server must present the very certificate
            // its settings name (the probe runs beside it, with the same settings).
            byte[] expected = Security.ServerCertificate.LoadCurrent(options.Security.Certificate).RawData;
            handler.SslOptions.RemoteCertificateValidationCallback = (_, presented, _, _) => presented != null && presented.GetRawCertData().AsSpan().SequenceEqual(expected);
        }
        using var http = new HttpClient(handler, disposeHandler: false) { Timeout = TimeSpan.FromSeconds(5) };
        try
        {
            var r = await http.GetAsync(url.Uri).ConfigureAwait(false);
            Console.WriteLine($"{url.Uri}: {(int)r.StatusCode} {await r.Content.ReadAsStringAsync().ConfigureAwait(false)}");
            return r.IsSuccessStatusCode ? 0 : 1;
        }
        catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
        {
            Console.WriteLine($"{url.Uri}: {e.Message}");
            return 1;
        }
    }

    /// <summary>
    /// Readiness: the data directory takes a file, and every database opens and has not stopped after an I/O error
    /// (Unhealthy, 503, otherwise). A full disk is Degraded (200: reads and queries still answer, writes get 507) and
    /// says "disk full" and where.
    /// </summary>
    private sealed class StorageReadiness(DatabaseRegistry registry, ServerOptions options) : IHealthCheck
    {
        public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
        {
            var full = new List<string>();
            try
            {
                string probe = Path.Combine(Path.GetFullPath(options.DataDir), $".readyz-{Environment.ProcessId}");
                File.WriteAllText(probe, "ok");
                File.Delete(probe);
            }
            catch (Exception e) when (Storage.DiskFullException.IsDiskFull(e))
            {
                full.Add($"disk full: the data directory '{options.DataDir}' takes no new file ({e.Message})");
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                return Task.FromResult(HealthCheckResult.Unhealthy($"The data directory '{options.DataDir}' is not writable: {e.Message}"));
            }
            foreach (string name in registry.Names)
            {
                Database db;
                try
                {
                    db = registry.Acquire(name);
                }
                catch (Exception e) when (e is not OutOfMemoryException)
                {
                    return Task.FromResult(HealthCheckResult.Unhealthy($"Database '{name}' does not open: {e.Message}"));
                }
                try
                {
                    if (db.Environment.Failure is Storage.StorageCorruptionException damaged)
                        return Task.FromResult(HealthCheckResult.Unhealthy($"Database '{name}' is damaged: {damaged.Message}"));
                    if (db.Environment.Failure is { } failure)
                        return Task.FromResult(HealthCheckResult.Unhealthy($"Database '{name}' stopped after a storage failure and is being reopened: {failure.Message}"));
                    if (db.Environment.DiskFull is { } diskFull)
                        full.Add($"disk full: database '{name}' refuses writes until space is freed ({diskFull.Message})");
                    foreach (var index in db.Indexes.All)
                        if (index.DiskFull)
                            full.Add($"disk full: index '{index.Name}' of database '{name}' is paused until space is freed");
                }
                finally
                {
                    db.Release();
                }
            }
            return Task.FromResult(full.Count > 0 ? HealthCheckResult.Degraded(string.Join("; ", full)) : HealthCheckResult.Healthy());
        }
    }

    /// <summary>The answer: the status, then what is wrong when something is ("Degraded: disk full: ...").</summary>
    private static Task WriteAsync(HttpContext context, HealthReport report)
    {
        context.Response.ContentType = "text/plain; charset=utf-8";
        var problems = report.Entries.Values.Where(e => e.Status != HealthStatus.Healthy && e.Description != null).Select(e => e.Description);
        string text = report.Status.ToString();
        if (problems.Any())
            text += ": " + string.Join("; ", problems);
        byte[] body = System.Text.Encoding.UTF8.GetBytes(text);
        context.Response.ContentLength = body.Length;
        return context.Response.Body.WriteAsync(body).AsTask();
    }
}
