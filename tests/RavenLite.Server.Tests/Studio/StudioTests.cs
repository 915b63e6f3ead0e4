using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using System.Diagnostics;

namespace RavenLite.Server.Tests.Studio;

/// <summary>
/// The Studio end to end: Studio/e2e/studio.e2e.mjs starts the built server (a child process with a
/// temporary data dir), drives Debian's Chromium with playwright-core through every screen — databases, documents
/// (edit, create, clone, delete, select many), a 20,000-document grid scrolled end to end, queries (grid, JSON,
/// parameters, completion, a malformed query), an index (a compile error shown at its line, then built and up to
/// date, reset, deleted), tasks (an export downloaded and imported into another database, a subscription added, disabled, enabled, deleted, expiration and revisions saved, a backup restored into a new database, a periodic backup run), the dashboard and the storage view — runs axe-core on each (no serious or critical
/// violations), checks the message shown once the server is stopped, and writes the screenshots to docs/studio/.
/// </summary>
public sealed class StudioTests(ITestOutputHelper output)
{
    [Fact]
    public async Task Studio_screens_work_end_to_end_in_chromium()
    {
        string root = RepositoryRoot();
        // The server this test project was built with: its output has the Studio (Server.csproj builds and copies it).
        var bin = new DirectoryInfo(AppContext.BaseDirectory); // tests/RavenLite.Server.Tests/bin/{Configuration}/{tfm}/
        string server = Path.Combine(root, "Server", "bin", bin.Parent!.Name, bin.Name, "RavenLite.Server.dll");
        Assert.True(File.Exists(server), "no server build at " + server);
        Assert.True(File.Exists(Path.Combine(Path.GetDirectoryName(server)!, "studio", "index.html")), "the server was built without the Studio (BuildStudio=false?)");
        Assert.True(File.Exists("/usr/bin/chromium"), "Debian's chromium is missing: run ./test.sh (it installs it with apt-get)");
        var psi = new ProcessStartInfo("node") { WorkingDirectory = Path.Combine(root, "Studio"), RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (string a in new[] { "e2e/studio.e2e.mjs", "--server", server, "--screenshots", Path.Combine(root, "docs", "studio") })
            psi.ArgumentList.Add(a);
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromMinutes(8));
        await p.WaitForExitAsync(cts.Token);
        output.WriteLine(await stdout);
        output.WriteLine(await stderr);
        Assert.True(p.ExitCode == 0, $"studio.e2e.mjs exited {p.ExitCode}:\n{await stdout}\n{await stderr}");
        Assert.Contains("studio: ok", await stdout, StringComparison.Ordinal);
    }

    /// <summary>
    /// How the server serves the Studio: a browser's <c>GET /</c> is redirected to <c>/studio/</c> and an API client's is
    /// not; the app's own routes answer index.html, never cached; hashed assets are cached for a year; a missing asset
    /// is a 404; responses are compressed.
    /// </summary>
    [Fact]
    public async Task The_server_serves_the_studio_with_the_right_caching()
    {
        await using var server = await TestServer.StartAsync();
        using var http = new HttpClient(new SocketsHttpHandler { AllowAutoRedirect = false, AutomaticDecompression = System.Net.DecompressionMethods.None }) { BaseAddress = server.Url };
        var browser = new HttpRequestMessage(HttpMethod.Get, "/");
        browser.Headers.Accept.ParseAdd("text/html,application/xhtml+xml");
        var redirect = await http.SendAsync(browser);
        Assert.Equal(System.Net.HttpStatusCode.Found, redirect.StatusCode);
        Assert.Equal("/studio/", redirect.Headers.Location?.ToString());
        Assert.Equal(System.Net.HttpStatusCode.BadRequest, (await http.GetAsync("/")).StatusCode);
        foreach (string route in new[] { "/studio/", "/studio/db/shop/query", "/studio/dashboard" })
        {
            var page = await http.GetAsync(route);
            Assert.Equal(System.Net.HttpStatusCode.OK, page.StatusCode);
            Assert.Equal("text/html", page.Content.Headers.ContentType?.MediaType);
            Assert.True(page.Headers.CacheControl?.NoCache, route + " must not be cached");
            Assert.Contains("<div id=\"app\">", await page.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        }
        string html = await (await http.GetAsync("/studio/")).Content.ReadAsStringAsync();
        string asset = System.Text.RegularExpressions.Regex.Match(html, "/studio/assets/[^\"]+\\.js").Value;
        var request = new HttpRequestMessage(HttpMethod.Get, asset);
        request.Headers.AcceptEncoding.ParseAdd("gzip");
        var js = await http.SendAsync(request);
        Assert.Equal(System.Net.HttpStatusCode.OK, js.StatusCode);
        Assert.Equal("public, max-age=31536000, immutable", js.Headers.CacheControl?.ToString());
        Assert.Contains("gzip", js.Content.Headers.ContentEncoding);
        Assert.Equal(System.Net.HttpStatusCode.NotFound, (await http.GetAsync("/studio/assets/missing-123.js")).StatusCode);
        var escape = await http.GetAsync("/studio/%2e%2e/RavenLite.Server.deps.json");
        Assert.NotEqual(System.Net.HttpStatusCode.OK, escape.StatusCode);
    }

    /// <summary>
    /// A server built without the Studio (no npm on the machine, or BuildStudio=false) still runs: a browser asking for
    /// <c>/studio/</c> gets a page saying how to get the Studio, an API client RavenDB's JSON error.
    /// </summary>
    [Fact]
    public async Task A_server_built_without_the_studio_answers_a_page_saying_how_to_get_it()
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        RavenLite.Server.Endpoints.StudioFiles.AddServices(builder.Services);
        await using var app = builder.Build();
        RavenLite.Server.Endpoints.StudioFiles.Map(app, Path.Combine(Path.GetTempPath(), "ravenlite-no-studio-" + Guid.NewGuid().ToString("N")));
        await app.StartAsync();
        using var http = new HttpClient { BaseAddress = new Uri(app.Urls.First()) };
        var browser = new HttpRequestMessage(HttpMethod.Get, "/studio/");
        browser.Headers.Accept.ParseAdd("text/html,application/xhtml+xml");
        var page = await http.SendAsync(browser);
        Assert.Equal(System.Net.HttpStatusCode.NotFound, page.StatusCode);
        Assert.Equal("text/html", page.Content.Headers.ContentType?.MediaType);
        string text = await page.Content.ReadAsStringAsync();
        Assert.Contains("The Studio is not built", text, StringComparison.Ordinal);
        Assert.Contains("apt-get install nodejs npm", text, StringComparison.Ordinal);
        var api = await http.GetAsync("/studio/");
        Assert.Equal(System.Net.HttpStatusCode.NotFound, api.StatusCode);
        Assert.Equal("application/json", api.Content.Headers.ContentType?.MediaType);
        Assert.Contains("npm ci && npm run build", await api.Content.ReadAsStringAsync(), StringComparison.Ordinal);
    }

    private static string RepositoryRoot()
    {
        for (var dir = new DirectoryInfo(AppContext.BaseDirectory); dir != null; dir = dir.Parent)
            if (File.Exists(Path.Combine(dir.FullName, "Studio", "e2e", "studio.e2e.mjs")))
                return dir.FullName;
        throw new InvalidOperationException("Studio/e2e not found above " + AppContext.BaseDirectory);
    }
}
