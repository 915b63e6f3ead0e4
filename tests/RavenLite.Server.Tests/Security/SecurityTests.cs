using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using RavenLite.Server.Security;

namespace RavenLite.Server.Tests.Security;

/// <summary>A secured server: HTTPS only, client certificates, the access rule of every route.</summary>
public sealed class SecurityTests(ITestOutputHelper output)
{
    private static StringContent Json(string json) => new(json, Encoding.UTF8, "application/json");

    /// <summary>Who calls, in the authorization matrix.</summary>
    private sealed record Principal(string Name, X509Certificate2? Certificate, bool Registered, string? Clearance, string? AuthzAccess);

    /// <summary>What the matrix expects: the test's own reading of the rules in docs/security.md, not the server's code.</summary>
    private static int? Expected(Principal p, Access access)
    {
        if (access == Access.Anonymous)
            return null;
        if (p.Certificate == null)
            return 401;
        if (!p.Registered)
            return 403;
        bool admin = p.Clearance is "ClusterAdmin" or "Operator";
        bool allowed = access switch
        {
            Access.ValidUser => true,
            Access.Operator => admin,
            Access.ClusterAdmin => p.Clearance == "ClusterAdmin",
            Access.DatabaseRead => admin || p.AuthzAccess is "Read" or "ReadWrite" or "Admin",
            Access.DatabaseReadWrite => admin || p.AuthzAccess is "ReadWrite" or "Admin",
            Access.DatabaseAdmin => admin || p.AuthzAccess is "Admin",
            _ => false,
        };
        return allowed ? null : 403;
    }

    /// <summary>What a 403's message must name: the thing the caller lacks.</summary>
    private static string Missing(Principal p, Access access) =>
        !p.Registered ? "is not registered on this server"
        : access == Access.Operator ? "needs Operator or ClusterAdmin clearance"
        : access == Access.ClusterAdmin ? "needs ClusterAdmin clearance"
        : p.AuthzAccess == null ? "has no access to database 'authz'"
        : $"has {p.AuthzAccess} access to database 'authz'; ";

    // Kept whole: the matrix of every route by every principal against one secured server, checked cell by
    // cell.
    [Fact]
    public async Task Every_route_answers_each_clearance_and_database_permission_as_its_rule_says()
    {
        await using var s = await SecuredServer.StartAsync();
        await s.CreateDatabaseAsync("authz");
        await s.CreateDatabaseAsync("other");
        var principals = new List<Principal>
        {
            new("no certificate", null, false, null, null),
            new("unregistered", s.NewClient("stranger"), false, null, null),
            new("ValidUser Read", s.NewClient("reader"), true, "ValidUser", "Read"),
            new("ValidUser ReadWrite", s.NewClient("writer"), true, "ValidUser", "ReadWrite"),
            new("ValidUser Admin", s.NewClient("dbadmin"), true, "ValidUser", "Admin"),
            new("ValidUser ReadWrite on another database", s.NewClient("elsewhere"), true, "ValidUser", null),
            new("Operator", s.NewClient("operator"), true, "Operator", null),
            new("ClusterAdmin", s.NewClient("clusteradmin"), true, "ClusterAdmin", null),
        };
        foreach (var p in principals.Where(p => p.Registered))
            await s.RegisterAsync(p.Certificate!, p.Name, p.Clearance!, p.AuthzAccess != null ? $$"""{"authz":"{{p.AuthzAccess}}"}""" : p.Clearance == "ValidUser" ? """{"other":"ReadWrite"}""" : "{}");

        // Every route of the route table names its rule: a new route without one fails here.
        var endpoints = s.Services.GetRequiredService<EndpointDataSource>().Endpoints.OfType<RouteEndpoint>().ToList();
        var withoutRule = endpoints.Where(e => AccessPolicy.RuleOf(e) == null).Select(e => e.RoutePattern.RawText).ToList();
        Assert.True(withoutRule.Count == 0, "routes without an access rule: " + string.Join(", ", withoutRule));

        // Independently of the rules: a route that can change a database is never open to Read access.
        string[] readOnlyPosts = ["/docs", "/queries", "/multi_get", "/streams/queries", "/subscriptions/try", "/smuggler/export", "/attachments", "/indexes/has-changed"];
        foreach (var e in endpoints.Where(e => e.RoutePattern.RawText!.StartsWith("/databases/{db}/", StringComparison.Ordinal)))
        {
            string rest = e.RoutePattern.RawText!["/databases/{db}".Length..];
            var methods = e.Metadata.GetMetadata<HttpMethodMetadata>()?.HttpMethods ?? ["GET"];
            if (methods.Any(m => m is not ("GET" or "HEAD")) && AccessPolicy.RuleOf(e) is Access.DatabaseRead or Access.ValidUser or Access.Anonymous)
                Assert.True(methods.SequenceEqual(["POST"]) && readOnlyPosts.Contains(rest), $"{string.Join(",", methods)} {e.RoutePattern.RawText} is open to Read access");
        }

        var clients = principals.ToDictionary(p => p.Name, p => s.Client(p.Certificate));
        var failures = new List<string>();
        int cells = 0, allowedCells = 0;
        foreach (var e in endpoints.OrderBy(e => e.RoutePattern.RawText, StringComparer.Ordinal))
        {
            var access = AccessPolicy.RuleOf(e)!.Value;
            string path = "/" + string.Join("/", e.RoutePattern.RawText!.TrimStart('/').Split('/').Select(seg => seg switch
            {
                "{db}" => "authz",
                "{documentName}.json" => "v1.json",
                "{**path}" => "index.html",
                _ when seg.StartsWith("{*", StringComparison.Ordinal) => "no/such/route", // the fallback
                _ => seg,
            }));
            if (path == "/")
                path = "/";
            foreach (string method in e.Metadata.GetMetadata<HttpMethodMetadata>()?.HttpMethods ?? ["GET"])
            {
                foreach (var p in principals)
                {
                    cells++;
                    // ?name= is the database of the routes that take it there (and ignored by the others).
                    using var request = new HttpRequestMessage(new HttpMethod(method), path + "?name=authz");
                    if (method is not ("GET" or "HEAD" or "DELETE"))
                        request.Content = Json("");
                    int status;
                    string? refusal = null;
                    try
                    {
                        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(20));
                        using var response = await clients[p.Name].SendAsync(request, HttpCompletionOption.ResponseHeadersRead, cts.Token);
                        status = (int)response.StatusCode;
                        if (status == 403 && method != "HEAD") // HEAD answers carry no body
                            refusal = await response.Content.ReadAsStringAsync(cts.Token);
                    }
                    catch (Exception ex) when (ex is HttpRequestException or TaskCanceledException)
                    {
                        failures.Add($"{method} {path} as {p.Name}: {ex.GetType().Name} {ex.Message}");
                        continue;
                    }
                    var expected = Expected(p, access);
                    if (expected == null)
                    {
                        allowedCells++;
                        if (status is 401 or 403)
                            failures.Add($"{method} {path} ({access}) as {p.Name}: {status}, expected it allowed");
                    }
                    else if (status != expected)
                    {
                        failures.Add($"{method} {path} ({access}) as {p.Name}: {status}, expected {expected}");
                    }
                    else if (refusal != null && !refusal.Contains(Missing(p, access), StringComparison.Ordinal))
                    {
                        failures.Add($"{method} {path} ({access}) as {p.Name}: 403 without naming what is missing ('{Missing(p, access)}'): {refusal}");
                    }
                }
            }
        }
        output.WriteLine($"authorization matrix: {endpoints.Count} routes, {principals.Count} principals, {cells} cells ({allowedCells} allowed, {cells - allowedCells} refused)");
        Assert.True(failures.Count == 0, string.Join("\n", failures));
    }

    [Fact]
    public async Task Read_access_cannot_write_through_any_route_and_nothing_changes()
    {
        await using var s = await SecuredServer.StartAsync();
        await s.CreateDatabaseAsync("db");
        var reader = s.NewClient("reader");
        await s.RegisterAsync(reader, "reader", "ValidUser", """{"db":"Read"}""");
        var admin = s.Client(s.Admin);
        Assert.Equal(HttpStatusCode.Created, (await admin.PutAsync("/databases/db/docs?id=users/0", Json("""{"Name":"Ann","@metadata":{"@collection":"Users"}}"""))).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await admin.PutAsync("/databases/db/indexes", Json("""{"Indexes":[{"Name":"Users/ByName","Maps":["from u in docs.Users select new { u.Name }"]}]}"""))).StatusCode);
        string before = await admin.GetStringAsync("/databases/db/docs?id=users/0");
        string statsBefore = await admin.GetStringAsync("/databases/db/stats");

        var r = s.Client(reader);
        (string Method, string Path, string? Body)[] writes =
        [
            ("PUT", "/databases/db/docs?id=users/1", """{"Name":"Bob"}"""),
            ("DELETE", "/databases/db/docs?id=users/0", null),
            ("PATCH", "/databases/db/docs?id=users/0", """{"Patch":{"Script":"this.Name = 'X'"}}"""),
            ("POST", "/databases/db/bulk_docs", """{"Commands":[{"Type":"PUT","Id":"users/2","Document":{"Name":"C"}}]}"""),
            ("POST", "/databases/db/bulk_insert?id=1", """[{"Id":"users/3","Type":"PUT","Document":{"Name":"D"}}]"""),
            ("PATCH", "/databases/db/queries", """{"Query":{"Query":"from Users update { this.Name = 'Y' }"}}"""),
            ("DELETE", "/databases/db/queries", """{"Query":"from Users"}"""),
            ("PUT", "/databases/db/indexes", """{"Indexes":[{"Name":"Evil","Maps":["from u in docs.Users select new { u.Name }"]}]}"""),
            ("DELETE", "/databases/db/indexes?name=Users/ByName", null),
            ("POST", "/databases/db/smuggler/import", "{}"),
            ("PUT", "/databases/db/cmpxchg?key=k&index=0", """{"Object":1}"""),
            ("POST", "/databases/db/counters", """{"Documents":[]}"""),
            ("PUT", "/databases/db/attachments?id=users/0&name=a.txt", "abc"),
            ("POST", "/databases/db/multi_get", """{"Requests":[{"Url":"/databases/db/docs","Method":"PUT","Query":"?id=users/4","Content":{"Name":"E"}}]}"""),
        ];
        foreach (var (method, path, body) in writes)
        {
            using var request = new HttpRequestMessage(new HttpMethod(method), path);
            if (body != null)
                request.Content = Json(body);
            using var response = await r.SendAsync(request);
            string text = await response.Content.ReadAsStringAsync();
            if (path.Contains("multi_get", StringComparison.Ordinal))
            {
                Assert.Equal(HttpStatusCode.OK, response.StatusCode);
                Assert.Contains("\"StatusCode\":403", text.Replace(" ", "", StringComparison.Ordinal));
            }
            else
            {
                Assert.True(response.StatusCode == HttpStatusCode.Forbidden, $"{method} {path}: {(int)response.StatusCode} {text}");
                Assert.Contains("has Read access to database 'db'", text);
            }
        }
        // Reads work, and nothing changed.
        Assert.Equal(HttpStatusCode.OK, (await r.GetAsync("/databases/db/docs?id=users/0")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await r.PostAsync("/databases/db/queries", Json("""{"Query":"from Users"}"""))).StatusCode);
        Assert.Equal(before, await admin.GetStringAsync("/databases/db/docs?id=users/0"));
        var stats = await TestServer.ReadJson(await admin.GetAsync("/databases/db/stats"));
        var statsWas = System.Text.Json.JsonDocument.Parse(statsBefore).RootElement;
        Assert.Equal(statsWas.GetProperty("CountOfDocuments").GetInt64(), stats.GetProperty("CountOfDocuments").GetInt64());
        Assert.Equal(statsWas.GetProperty("CountOfIndexes").GetInt64(), stats.GetProperty("CountOfIndexes").GetInt64());
        Assert.Equal(HttpStatusCode.NotFound, (await admin.GetAsync("/databases/db/docs?id=users/4")).StatusCode);
    }

    [Fact]
    public async Task Hostile_tls_input_is_refused_and_the_server_keeps_serving()
    {
        await using var s = await SecuredServer.StartAsync();
        await s.CreateDatabaseAsync("db");
        var admin = s.Client(s.Admin);
        async Task StillServes() => Assert.Equal(HttpStatusCode.OK, (await admin.GetAsync("/databases")).StatusCode);

        // Plain HTTP to the HTTPS port: no HTTP answer, the connection is closed.
        using (var tcp = new TcpClient())
        {
            await tcp.ConnectAsync(IPAddress.Loopback, s.Url.Port);
            var stream = tcp.GetStream();
            await stream.WriteAsync(Encoding.ASCII.GetBytes("GET /databases HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
            var buffer = new byte[4096];
            int n;
            try
            {
                n = await stream.ReadAsync(buffer).AsTask().WaitAsync(TimeSpan.FromSeconds(20));
            }
            catch (IOException)
            {
                n = 0;
            }
            Assert.DoesNotContain("HTTP/1.1 200", Encoding.ASCII.GetString(buffer, 0, n), StringComparison.Ordinal);
        }
        await StillServes();

        // A truncated handshake: a TLS record header promising more than is sent, then silence; the server gives up on it.
        using (var tcp = new TcpClient())
        {
            await tcp.ConnectAsync(IPAddress.Loopback, s.Url.Port);
            var stream = tcp.GetStream();
            await stream.WriteAsync(new byte[] { 0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03 });
            await StillServes(); // while it hangs
            var buffer = new byte[64];
            int n;
            try
            {
                n = await stream.ReadAsync(buffer).AsTask().WaitAsync(TimeSpan.FromSeconds(30));
            }
            catch (IOException)
            {
                n = 0;
            }
            Assert.Equal(0, n); // closed by the handshake timeout, not answered
        }
        await StillServes();

        // An expired client certificate, even one registered (put straight into the registry: the endpoint refuses expired ones).
        var expired = s.NewClient("expired", notBefore: DateTimeOffset.UtcNow.AddDays(-30), notAfter: DateTimeOffset.UtcNow.AddDays(-1));
        s.Services.GetRequiredService<CertificateRegistry>().Put(new CertificateDefinition
        {
            Name = "expired", Thumbprint = expired.Thumbprint, Certificate = Convert.ToBase64String(expired.RawData), SecurityClearance = SecurityClearance.ClusterAdmin,
        });
        var r = await s.Client(expired).GetAsync("/databases");
        string text = await r.Content.ReadAsStringAsync();
        Assert.True(r.StatusCode == HttpStatusCode.Forbidden, text);
        Assert.Contains("expired", text, StringComparison.Ordinal);
        var register = await admin.PutAsync("/admin/certificates", Json($$"""{"Name":"x","Certificate":"{{Convert.ToBase64String(expired.RawData)}}","SecurityClearance":"ValidUser"}"""));
        Assert.Equal(HttpStatusCode.BadRequest, register.StatusCode);
        Assert.Contains("expired", await register.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        await StillServes();

        // A certificate from another CA with the subject name of a registered one.
        var registered = s.NewClient("alice");
        await s.RegisterAsync(registered, "alice", "Operator");
        var otherCa = Cli.CertificateFactory.CreateCa("Other CA", DateTimeOffset.UtcNow.AddMinutes(-5), DateTimeOffset.UtcNow.AddDays(30));
        var impostor = s.NewClient("alice", otherCa);
        Assert.Equal(registered.Subject, impostor.Subject);
        r = await s.Client(impostor).GetAsync("/databases");
        text = await r.Content.ReadAsStringAsync();
        Assert.True(r.StatusCode == HttpStatusCode.Forbidden, text);
        Assert.Contains("does not chain to an issuer this server trusts", text, StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.OK, (await s.Client(registered).GetAsync("/databases")).StatusCode);
        await StillServes();
    }

    [Fact]
    public async Task Certificates_are_registered_listed_edited_deleted_and_kept_across_a_restart()
    {
        using var dir = new RavenLite.TestKit.TempDirectory("ravenlite-certs");
        X509Certificate2 op, user, foreign, otherCa;
        await using (var s = await SecuredServer.StartAsync(dir.Path))
        {
            await s.CreateDatabaseAsync("db");
            op = s.NewClient("op");
            user = s.NewClient("user");
            await s.RegisterAsync(op, "op", "Operator");
            var operatorClient = s.Client(op);

            // An Operator registers ValidUsers but not ClusterAdmins.
            var r = await operatorClient.PutAsync("/admin/certificates", Json($$"""{"Name":"user","Certificate":"{{Convert.ToBase64String(user.RawData)}}","SecurityClearance":"ClusterAdmin"}"""));
            Assert.Equal(HttpStatusCode.Forbidden, r.StatusCode);
            Assert.Contains("only a ClusterAdmin may register a ClusterAdmin certificate", await r.Content.ReadAsStringAsync(), StringComparison.Ordinal);
            r = await operatorClient.PutAsync("/admin/certificates", Json($$$"""{"Name":"user","Certificate":"{{{Convert.ToBase64String(user.RawData)}}}","SecurityClearance":"ValidUser","Permissions":{"db":"Read"}}"""));
            Assert.Equal(HttpStatusCode.Created, r.StatusCode);

            var userClient = s.Client(user);
            var who = await TestServer.ReadJson(await userClient.GetAsync("/certificates/whoami"));
            Assert.Equal("user", who.GetProperty("Name").GetString());
            Assert.Equal("Read", who.GetProperty("Permissions").GetProperty("db").GetString());
            Assert.Equal(HttpStatusCode.Forbidden, (await userClient.PutAsync("/databases/db/docs?id=a", Json("{}"))).StatusCode);
            // Its database list holds the databases it can reach.
            await s.CreateDatabaseAsync("hidden");
            var list = await TestServer.ReadJson(await userClient.GetAsync("/databases?namesOnly=true"));
            Assert.Equal(["db"], list.GetProperty("Databases").EnumerateArray().Select(d => d.GetString()!).ToArray());

            // Edit: ReadWrite now.
            r = await operatorClient.PostAsync("/admin/certificates/edit", Json($$$"""{"Thumbprint":"{{{user.Thumbprint}}}","Name":"user2","SecurityClearance":"ValidUser","Permissions":{"db":"ReadWrite"}}"""));
            Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
            Assert.Equal(HttpStatusCode.Created, (await userClient.PutAsync("/databases/db/docs?id=a", Json("{}"))).StatusCode);

            // A certificate of a CA the server does not know: refused alone, accepted with its issuer, then it authenticates.
            otherCa = Cli.CertificateFactory.CreateCa("Partner CA", DateTimeOffset.UtcNow.AddMinutes(-5), DateTimeOffset.UtcNow.AddDays(30));
            foreign = s.NewClient("partner", otherCa);
            r = await operatorClient.PutAsync("/admin/certificates", Json($$$"""{"Name":"partner","Certificate":"{{{Convert.ToBase64String(foreign.RawData)}}}","SecurityClearance":"ValidUser","Permissions":{"db":"Read"}}"""));
            Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
            Assert.Contains("does not trust", await r.Content.ReadAsStringAsync(), StringComparison.Ordinal);
            string bundle = (foreign.ExportCertificatePem() + "\n" + otherCa.ExportCertificatePem()).Replace("\n", "\\n", StringComparison.Ordinal);
            r = await operatorClient.PutAsync("/admin/certificates", Json($$$"""{"Name":"partner","Certificate":"{{{bundle}}}","SecurityClearance":"ValidUser","Permissions":{"db":"Read"}}"""));
            Assert.Equal(HttpStatusCode.Created, r.StatusCode);
            Assert.Equal(HttpStatusCode.OK, (await s.Client(foreign).GetAsync("/databases/db/docs?id=a")).StatusCode);

            var all = await TestServer.ReadJson(await operatorClient.GetAsync("/admin/certificates?metadataOnly=true"));
            Assert.Equal(["op", "partner", "user2"], all.GetProperty("Results").EnumerateArray().Select(c => c.GetProperty("Name").GetString()!).Order(StringComparer.Ordinal).ToArray());
            Assert.False(all.GetProperty("Results")[0].TryGetProperty("Certificate", out _));
        }
        await using (var s = await SecuredServer.StartAsync(dir.Path))
        {
            // Kept in the server's storage across the restart, then deleted.
            Assert.Equal(HttpStatusCode.OK, (await s.Client(user).GetAsync("/databases/db/docs?id=a")).StatusCode);
            Assert.Equal(HttpStatusCode.OK, (await s.Client(foreign).GetAsync("/databases/db/docs?id=a")).StatusCode);
            var operatorClient = s.Client(op);
            Assert.Equal(HttpStatusCode.NoContent, (await operatorClient.DeleteAsync($"/admin/certificates?thumbprint={user.Thumbprint}")).StatusCode);
            var r = await s.Client(user).GetAsync("/databases/db/docs?id=a");
            Assert.Equal(HttpStatusCode.Forbidden, r.StatusCode);
            Assert.Contains("is not registered", await r.Content.ReadAsStringAsync(), StringComparison.Ordinal);
            Assert.Equal(HttpStatusCode.NotFound, (await operatorClient.DeleteAsync($"/admin/certificates?thumbprint={user.Thumbprint}")).StatusCode);
            Assert.True(File.Exists(Path.Combine(dir.Path, "data", "System", "storage", "headers")));
        }
    }

    [Fact]
    public async Task The_server_certificate_is_reloaded_when_its_file_changes()
    {
        await using var s = await SecuredServer.StartAsync();
        var first = s.Services.GetRequiredService<ServerCertificate>().Current.Thumbprint;
        string? seen = null;
        Assert.Equal(HttpStatusCode.OK, (await s.Client(s.Admin, c => seen = c.Thumbprint).GetAsync("/databases")).StatusCode);
        Assert.Equal(first, seen);

        var now = DateTimeOffset.UtcNow;
        using var next = Cli.CertificateFactory.CreateServer(s.Ca, "localhost", ["localhost"], [IPAddress.Loopback], now.AddMinutes(-5), now.AddDays(10));
        string staging = Path.Combine(s.Dir, "staging");
        Cli.CertificateFactory.Write(next, [s.Ca], staging, "server", null);
        File.Move(Path.Combine(staging, "server.pfx"), s.ServerPfx, overwrite: true);

        // New connections get the new certificate without a restart.
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (seen != next.Thumbprint && DateTime.UtcNow < deadline)
        {
            await Task.Delay(200);
            Assert.Equal(HttpStatusCode.OK, (await s.Client(s.Admin, c => seen = c.Thumbprint).GetAsync("/databases")).StatusCode);
        }
        Assert.Equal(next.Thumbprint, seen);

        // A file that does not load keeps the certificate in use.
        await File.WriteAllTextAsync(s.ServerPfx, "not a certificate");
        Assert.False(s.Services.GetRequiredService<ServerCertificate>().Reload());
        Assert.Equal(next.Thumbprint, s.Services.GetRequiredService<ServerCertificate>().Current.Thumbprint);
    }

    [Fact]
    public async Task Settings_never_mix_http_and_https_and_never_show_secrets()
    {
        using var dir = new RavenLite.TestKit.TempDirectory("ravenlite-secure-settings");
        const string password = "Pfx-Pa55word-never-logged";
        var logs = new CapturedLogs(LogLevel.Debug);
        await using (var s = await SecuredServer.StartAsync(dir.Path, password, logs))
        {
            Assert.Equal("https", s.Url.Scheme);
            Assert.Equal(HttpStatusCode.OK, (await s.Client(s.Admin).GetAsync("/databases")).StatusCode);
            // The container's health check (`RavenLite.Server healthcheck`) reaches /readyz over HTTPS without a client certificate.
            var settings = s.Services.GetRequiredService<Configuration.ServerOptions>();
            var probe = new Configuration.ServerOptions { ServerUrl = s.Url.ToString(), Security = settings.Security };
            Assert.Equal(0, await RavenLite.Server.Hosting.Health.ProbeAsync(probe));
        }
        Assert.Contains(logs.Entries, e => e.Contains("Security:Certificate:Password=(set)", StringComparison.Ordinal));
        Assert.DoesNotContain(logs.Entries, e => e.Contains(password, StringComparison.Ordinal));

        string pfx = Path.Combine(dir.Path, "certs", "server.pfx");
        var plain = Assert.Throws<InvalidOperationException>(() => RavenLite.Server.Hosting.ServerHost.Build(["--DataDir", Path.Combine(dir.Path, "d2"), "--ServerUrl", "http://127.0.0.1:0", "--Security:Certificate:Path", pfx, "--Security:Certificate:Password", password]));
        Assert.Contains("https:// only", plain.Message, StringComparison.Ordinal);
        var noCert = Assert.Throws<InvalidOperationException>(() => RavenLite.Server.Hosting.ServerHost.Build(["--DataDir", Path.Combine(dir.Path, "d2"), "--ServerUrl", "https://127.0.0.1:0"]));
        Assert.Contains("no server certificate", noCert.Message, StringComparison.Ordinal);
        var wrong = Assert.Throws<InvalidOperationException>(() => RavenLite.Server.Hosting.ServerHost.Build(["--DataDir", Path.Combine(dir.Path, "d2"), "--ServerUrl", "https://127.0.0.1:0", "--Security:Certificate:Path", pfx, "--Security:Certificate:Password", password + "-wrong"]));
        Assert.Contains("cannot be loaded", wrong.Message, StringComparison.Ordinal);
        Assert.DoesNotContain(password, wrong.ToString(), StringComparison.Ordinal);

        // Unsecured on a non-loopback address: refused unless allowed, and then a warning at every start (built, never started here).
        var refused = Assert.Throws<InvalidOperationException>(() => RavenLite.Server.Hosting.ServerHost.Build(["--DataDir", Path.Combine(dir.Path, "d3"), "--ServerUrl", "http://0.0.0.0:0"]));
        Assert.Contains("not a loopback address", refused.Message, StringComparison.Ordinal);
        var warnings = new CapturedLogs();
        await using (var app = RavenLite.Server.Hosting.ServerHost.Build(["--DataDir", Path.Combine(dir.Path, "d3"), "--ServerUrl", "http://0.0.0.0:0", "--AllowUnsecuredNonLoopback", "true"], null, l => l.AddProvider(warnings)))
        {
            Assert.Contains(warnings.Entries, e => e.Contains("UNSECURED", StringComparison.Ordinal));
        }
    }
}
