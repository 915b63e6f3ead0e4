using Microsoft.AspNetCore.ResponseCompression;
using Microsoft.AspNetCore.StaticFiles;
using Microsoft.Extensions.FileProviders;
using Microsoft.Net.Http.Headers;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Serves the Studio (the web UI built from <c>Studio/</c> into <c>studio/</c> beside the server's assembly) at
/// <c>/studio/</c>: hashed assets (<c>/studio/assets/*</c>) with a year-long immutable cache, every other path
/// (the app's own routes) with <c>index.html</c>, never cached, so a new server version is picked up at once.
/// <c>GET /</c> from a browser (<c>Accept: text/html</c>) is redirected there; API clients are unaffected.
/// Responses are compressed (gzip or Brotli, ASP.NET Core's response compression) for the Studio only.
/// </summary>
public static class StudioFiles
{
    private static readonly FileExtensionContentTypeProvider ContentTypes = new();

    /// <summary>The folder the Studio is served from.</summary>
    public static string Folder => Path.Combine(AppContext.BaseDirectory, "studio");

    /// <summary>Registers response compression (used for the Studio's paths only).</summary>
    public static void AddServices(IServiceCollection services)
    {
        services.AddResponseCompression(o =>
        {
            o.EnableForHttps = true;
            o.Providers.Add<BrotliCompressionProvider>();
            o.Providers.Add<GzipCompressionProvider>();
        });
        // The Studio's files are few and cached by the browser: compress them well rather than fast.
        services.Configure<BrotliCompressionProviderOptions>(o => o.Level = System.IO.Compression.CompressionLevel.Optimal);
        services.Configure<GzipCompressionProviderOptions>(o => o.Level = System.IO.Compression.CompressionLevel.SmallestSize);
    }

    /// <summary>Adds compression for the Studio's paths and maps its routes.</summary>
    public static void Map(WebApplication app) => Map(app, Folder);

    /// <summary>The same, serving the Studio built into <paramref name="folder"/> (none there: a page saying how to build it).</summary>
    internal static void Map(WebApplication app, string folder)
    {
        app.UseWhen(c => c.Request.Path.StartsWithSegments("/studio", StringComparison.Ordinal), b => b.UseResponseCompression());
        var files = Directory.Exists(folder) ? new PhysicalFileProvider(folder) : null;
        string[] getOrHead = ["GET", "HEAD"];
        app.MapMethods("/", getOrHead, context =>
        {
            if (!AcceptsHtml(context.Request))
                return ErrorHandlingMiddleware.WriteErrorAsync(context, 400, RavenExceptionTypes.RouteNotFound, "There is no handler for GET /.", "There is no handler for GET /.");
            context.Response.Redirect("/studio/");
            return Task.CompletedTask;
        }).Requires(Access.Anonymous); // the Studio's files hold no data; its API calls carry the browser's certificate
        app.MapMethods("/studio/{**path}", getOrHead, context =>
        {
            if (context.Request.Path.Value == "/studio")
            {
                context.Response.Redirect("/studio/");
                return Task.CompletedTask;
            }
            return Serve(context, files, (string?)context.Request.RouteValues["path"] ?? "");
        }).Requires(Access.Anonymous);
    }

    private const string NotBuilt =
        "The Studio is not built: build the server with Node.js and npm installed (it runs npm ci and the Vite build in Studio/), or run `npm ci && npm run build` in Studio/.";

    private const string NotBuiltPage = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>RavenLite — Studio not built</title></head>
        <body style="font-family: system-ui, sans-serif; max-width: 42rem; margin: 3rem auto; line-height: 1.5">
        <h1>The Studio is not built</h1>
        <p>This server is running and answers RavenDB's clients, but it was built without the Studio, its web UI:
        the build found no Node.js/npm (or was run with <code>-p:BuildStudio=false</code>).</p>
        <p>To get it, install Node.js 20 or later with npm (Debian/Ubuntu: <code>apt-get install nodejs npm</code>) and
        build the server again — <code>dotnet run -c Release --project Server</code> builds the Studio into it — or run
        <code>npm ci &amp;&amp; npm run build</code> in <code>Studio/</code> and restart the server.</p>
        </body></html>
        """;

    private static bool AcceptsHtml(HttpRequest request) =>
        request.Headers.Accept.Any(a => a != null && a.Contains("text/html", StringComparison.OrdinalIgnoreCase));

    private static async Task Serve(HttpContext context, PhysicalFileProvider? files, string path)
    {
        if (files == null || !files.GetFileInfo("index.html").Exists)
        {
            if (AcceptsHtml(context.Request))
            {
                // A browser gets a page: this is where a user who started the server without Node.js looks first.
                context.Response.StatusCode = 404;
                context.Response.ContentType = "text/html; charset=utf-8";
                context.Response.Headers.CacheControl = "no-store";
                await context.Response.WriteAsync(NotBuiltPage, context.RequestAborted).ConfigureAwait(false);
                return;
            }
            await ErrorHandlingMiddleware.WriteErrorAsync(context, 404, RavenExceptionTypes.RouteNotFound, NotBuilt, "Studio not built").ConfigureAwait(false);
            return;
        }
        var file = path.Length == 0 ? null : files.GetFileInfo(path);
        bool asset = path.StartsWith("assets/", StringComparison.Ordinal);
        if (file is not { Exists: true, IsDirectory: false })
        {
            if (asset || Path.HasExtension(path))
            {
                await ErrorHandlingMiddleware.WriteErrorAsync(context, 404, RavenExceptionTypes.DocumentDoesNotExist, $"There is no Studio file '{path}'.", "Not found").ConfigureAwait(false);
                return;
            }
            file = files.GetFileInfo("index.html"); // one of the app's own routes: the app shows it
            path = "index.html";
        }
        context.Response.ContentType = ContentTypes.TryGetContentType(path, out var type) ? type : "application/octet-stream";
        context.Response.Headers.CacheControl = asset ? "public, max-age=31536000, immutable" : "no-cache";
        context.Response.Headers[HeaderNames.XContentTypeOptions] = "nosniff";
        await context.Response.SendFileAsync(file).ConfigureAwait(false);
    }
}
