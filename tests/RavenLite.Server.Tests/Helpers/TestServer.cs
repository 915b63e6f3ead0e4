using System.Net.Http.Headers;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Logging;
using RavenLite.Server.Configuration;
using RavenLite.Server.Hosting;

namespace RavenLite.Server.Tests.Helpers;

/// <summary>
/// A real RavenLite server (Kestrel on 127.0.0.1, port 0) over a temp data dir, plus an HttpClient
/// that checks every answer carries Content-Length (docs/protocol.md §1.2).
/// </summary>
public sealed class TestServer : IAsyncDisposable
{
    private readonly TempDirectory? _ownedDir;
    private readonly WebApplication _app;

    private TestServer(WebApplication app, string dataDir, TempDirectory? ownedDir)
    {
        _app = app;
        DataDir = dataDir;
        _ownedDir = ownedDir;
        Url = new Uri(ServerHost.Addresses(app)[0]);
        Http = new HttpClient(new ContentLengthCheck(new SocketsHttpHandler())) { BaseAddress = Url, Timeout = TimeSpan.FromSeconds(60) };
    }

    /// <summary>Base address.</summary>
    public Uri Url { get; }

    /// <summary>Data directory.</summary>
    public string DataDir { get; }

    /// <summary>Client bound to <see cref="Url"/>.</summary>
    public HttpClient Http { get; }

    /// <summary>The running app's services.</summary>
    public IServiceProvider Services => _app.Services;

    /// <summary>
    /// Starts a server; a fresh temp data dir unless <paramref name="dataDir"/> is given. With
    /// <paramref name="logs"/>, every warning and error the server (Kestrel included) logs is kept there too.
    /// </summary>
    public static async Task<TestServer> StartAsync(string? dataDir = null, Action<ServerOptions>? configure = null, CapturedLogs? logs = null)
    {
        TempDirectory? owned = dataDir == null ? new TempDirectory("ravenlite-server") : null;
        dataDir ??= owned!.Path;
        var app = ServerHost.Build(["--DataDir", dataDir, "--ServerUrl", "http://127.0.0.1:0", "--Logging:LogLevel:Default", "Warning"], configure,
            logs == null ? null : (Action<ILoggingBuilder>)(l => l.AddProvider(logs)));
        await app.StartAsync();
        return new TestServer(app, dataDir, owned);
    }

    /// <summary>Starts a server and creates database <paramref name="database"/>.</summary>
    public static async Task<TestServer> StartWithDatabaseAsync(string database = "db", Action<ServerOptions>? configure = null, string? dataDir = null)
    {
        var server = await StartAsync(dataDir, configure);
        var r = await server.Http.PutAsync($"/admin/databases?name={database}", Json($"{{\"DatabaseName\":\"{database}\"}}"));
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        return server;
    }

    /// <summary>A JSON body (no Content-Type, as the Python client sends it, unless asked).</summary>
    public static ByteArrayContent Json(string json, bool contentType = false)
    {
        var c = new ByteArrayContent(Encoding.UTF8.GetBytes(json));
        if (contentType)
            c.Headers.ContentType = new MediaTypeHeaderValue("application/json");
        return c;
    }

    /// <summary>Parses an answer's body.</summary>
    public static async Task<JsonElement> ReadJson(HttpResponseMessage r)
    {
        string s = await r.Content.ReadAsStringAsync();
        using var doc = JsonDocument.Parse(s);
        return doc.RootElement.Clone();
    }

    /// <summary>Stops Kestrel and closes every database (graceful shutdown).</summary>
    public async Task StopAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        Http.Dispose();
        try
        {
            await StopAsync();
        }
        catch (ObjectDisposedException)
        {
        }
        _ownedDir?.Dispose();
    }

    private sealed class ContentLengthCheck(HttpMessageHandler inner) : DelegatingHandler(inner)
    {
        protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            var r = await base.SendAsync(request, cancellationToken);
            // Streams (/streams/*) and exports are sent while they are produced, chunked, as RavenDB sends them; their errors before output are not.
            string path = request.RequestUri!.AbsolutePath;
            bool streamed = r.IsSuccessStatusCode && (path.Contains("/streams/", StringComparison.Ordinal) || path.EndsWith("/smuggler/export", StringComparison.Ordinal));
            if (r.StatusCode != HttpStatusCode.NotModified && r.StatusCode != HttpStatusCode.NoContent && !streamed)
                Assert.True(r.Content.Headers.ContentLength != null, $"{request.Method} {request.RequestUri} answered {(int)r.StatusCode} without Content-Length");
            return r;
        }
    }
}
