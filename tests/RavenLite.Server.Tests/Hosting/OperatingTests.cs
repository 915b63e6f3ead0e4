namespace RavenLite.Server.Tests.Hosting;

/// <summary>
/// Operating the server: the OpenAPI document lists the routes that exist (each answers something other
/// than "no handler"), the Prometheus metrics carry the instruments docs/deployment.md names, and /healthz and /readyz
/// answer.
/// </summary>
public sealed class OperatingTests
{
    [Fact]
    public async Task The_openapi_document_lists_the_routes_that_exist()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        // These are ASP.NET Core's own endpoints (chunked answers, not RavenDB's protocol): a plain client.
        using var http = new HttpClient { BaseAddress = server.Url };
        var document = await TestServer.ReadJson(await http.GetAsync("/openapi/v1.json"));
        Assert.StartsWith("3.", document.GetProperty("openapi").GetString(), StringComparison.Ordinal);
        var operations = document.GetProperty("paths").EnumerateObject()
            .SelectMany(p => p.Value.EnumerateObject().Select(m => (Path: p.Name, Method: m.Name.ToUpperInvariant()))).ToList();
        foreach (var expected in new[] { ("/databases/{db}/docs", "PUT"), ("/databases/{db}/queries", "POST"), ("/databases/{db}/queries", "PATCH"),
            ("/databases/{db}/bulk_docs", "POST"), ("/databases/{db}/admin/indexes", "PUT"), ("/admin/databases", "PUT"), ("/healthz", "GET"), ("/readyz", "GET"),
            ("/metrics", "GET"), ("/studio-api/storage", "GET") })
            Assert.Contains(expected, operations);
        Assert.True(operations.Count > 40, $"{operations.Count} operations");
        // Every documented operation is routed: it never gets the "no handler" answer of unknown routes.
        foreach (var (path, method) in operations.Where(o => o.Method != "DELETE" || !o.Path.StartsWith("/admin", StringComparison.Ordinal)))
        {
            string url = path.Replace("{db}", "db", StringComparison.Ordinal).Replace("{path}", "x", StringComparison.Ordinal);
            var request = new HttpRequestMessage(new HttpMethod(method), url);
            if (method is "POST" or "PUT" or "PATCH" or "DELETE")
                request.Content = TestServer.Json("{}");
            if (path == "/")
                request.Headers.Accept.ParseAdd("text/html"); // `/` is the Studio's, for browsers
            var r = await http.SendAsync(request);
            string body = method == "HEAD" ? "" : await r.Content.ReadAsStringAsync();
            Assert.False(body.Contains("RouteNotFoundException", StringComparison.Ordinal) && body.Contains("There is no handler", StringComparison.Ordinal), $"{method} {url}: {body}");
        }
        var unknown = await TestServer.ReadJson(await http.GetAsync("/no/such/route"));
        Assert.Contains("There is no handler", unknown.GetProperty("Message").GetString(), StringComparison.Ordinal);
        Assert.DoesNotContain(operations, o => o.Path == "/no/such/route");
    }

    [Fact]
    public async Task Metrics_health_and_readiness_answer()
    {
        // OpenTelemetry subscribes to meters by name, so in this process (many test servers) /metrics also shows the
        // other servers' databases: this one has a name no other test uses.
        const string database = "metrics-test";
        await using var server = await TestServer.StartWithDatabaseAsync(database);
        using var http = new HttpClient { BaseAddress = server.Url };
        for (int i = 0; i < 5; i++)
            Assert.Equal(HttpStatusCode.Created, (await http.PutAsync($"/databases/{database}/docs?id=things/{i}", TestServer.Json("""{"N":1,"@metadata":{"@collection":"Things"}}"""))).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await http.PostAsync($"/databases/{database}/queries", TestServer.Json("""{"Query":"from Things where N = 1","WaitForNonStaleResults":true}"""))).StatusCode);
        Assert.Equal("Healthy", await http.GetStringAsync("/healthz"));
        var ready = await http.GetAsync("/readyz");
        Assert.True(ready.StatusCode == HttpStatusCode.OK, $"/readyz: {(int)ready.StatusCode} {await ready.Content.ReadAsStringAsync()}");
        Assert.Equal("Healthy", await ready.Content.ReadAsStringAsync());
        string metrics = await http.GetStringAsync("/metrics");
        foreach (string name in new[] { "http_server_request_duration_seconds_bucket", "ravenlite_documents_written_total{", "ravenlite_merger_batch_size_bucket",
            "ravenlite_merger_transactions_total", "ravenlite_storage_commits_total", "ravenlite_storage_journal_bytes_total", "ravenlite_storage_flush_lag",
            "ravenlite_storage_journal_fsync_duration_seconds_bucket", "ravenlite_index_lag{", "ravenlite_index_documents_total{", "dotnet_gc_collections_total" })
            Assert.True(metrics.Contains(name, StringComparison.Ordinal), $"{name} is not in /metrics:\n{metrics}");
        var written = metrics.Split('\n').Single(l => l.StartsWith("ravenlite_documents_written_total{", StringComparison.Ordinal) && l.Contains($"database=\"{database}\"", StringComparison.Ordinal));
        Assert.EndsWith(" 5", written.Split(' ', 3)[0] + " " + written.Split(' ')[1], StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_server_keeps_its_metrics_when_another_server_in_the_process_stops()
    {
        // Two servers in one process (as in these tests, or an application embedding two): OpenTelemetry merged
        // instruments of the same name from both servers' meters into one stream, and removed that stream when either
        // meter was disposed, so one server stopping took the other's gauges off its /metrics (a fresh-clone CI run
        // failed DiskFullTests so: "/metrics shows the index paused for want of space").
        const string database = "metrics-survivor";
        await using var survivor = await TestServer.StartWithDatabaseAsync(database);
        using var http = new HttpClient { BaseAddress = survivor.Url };
        Assert.Equal(HttpStatusCode.Created, (await http.PutAsync($"/databases/{database}/docs?id=things/1", TestServer.Json("""{"N":1,"@metadata":{"@collection":"Things"}}"""))).StatusCode);
        string Series(string metrics, string name) => string.Join("\n", metrics.Split('\n').Where(l => l.StartsWith(name, StringComparison.Ordinal) && l.Contains($"database=\"{database}\"", StringComparison.Ordinal)));
        Assert.NotEmpty(Series(await http.GetStringAsync("/metrics"), "ravenlite_storage_disk_full{"));
        await (await TestServer.StartWithDatabaseAsync("metrics-other")).DisposeAsync();
        // The exporter caches a scrape for a moment: the next ones must still show this server's series.
        for (int i = 0; i < 3; i++)
        {
            await Task.Delay(1000);
            string metrics = await http.GetStringAsync("/metrics");
            Assert.True(Series(metrics, "ravenlite_storage_disk_full{").Length > 0, $"this server's gauge left /metrics after another server stopped:\n{metrics}");
            Assert.True(Series(metrics, "ravenlite_documents_written_total{").EndsWith(" 1", StringComparison.Ordinal), $"this server's counter:\n{metrics}");
        }
    }
}
