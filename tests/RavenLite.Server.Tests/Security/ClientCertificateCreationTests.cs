using System.IO.Compression;
using RavenLite.Cli;
using System.Security.Cryptography.X509Certificates;

namespace RavenLite.Server.Tests.Security;

/// <summary>
/// <c>POST /admin/certificates</c> (RavenDB's <c>CreateClientCertificateOperation</c>): the server makes a client
/// certificate, registers it with the clearance and permissions asked, and answers a zip (PFX, CRT, KEY); the
/// certificate then authenticates with exactly those rights.
/// </summary>
public sealed class ClientCertificateCreationTests
{
    [Fact]
    public async Task A_created_certificate_comes_as_a_zip_and_has_exactly_the_rights_asked()
    {
        await using var server = await SecuredServer.StartAsync();
        await server.CreateDatabaseAsync("db");
        await server.CreateDatabaseAsync("other");
        var admin = server.Client(server.Admin);
        var r = await admin.PostAsync("/admin/certificates", new StringContent("""{"Name":"reader","SecurityClearance":"ValidUser","Permissions":{"db":"Read"},"Password":"s3cret"}""", Encoding.UTF8, "application/json"));
        Assert.True(r.StatusCode == HttpStatusCode.Created, await r.Content.ReadAsStringAsync());
        byte[] zipBytes = await r.Content.ReadAsByteArrayAsync();
        using var zip = new ZipArchive(new MemoryStream(zipBytes), ZipArchiveMode.Read);
        Assert.Equal(["reader.crt", "reader.key", "reader.pfx"], zip.Entries.Select(e => e.Name).OrderBy(n => n, StringComparer.Ordinal));
        byte[] pfx;
        using (var s = zip.GetEntry("reader.pfx")!.Open())
        using (var ms = new MemoryStream())
        {
            await s.CopyToAsync(ms);
            pfx = ms.ToArray();
        }
        using var certificate = X509CertificateLoader.LoadPkcs12(pfx, "s3cret");
        Assert.True(certificate.HasPrivateKey);
        using (var crt = new StreamReader(zip.GetEntry("reader.crt")!.Open()))
            Assert.StartsWith("-----BEGIN CERTIFICATE-----", await crt.ReadToEndAsync(), StringComparison.Ordinal);

        // Registered: listed with its clearance and permissions.
        var listed = await TestServer.ReadJson(await admin.GetAsync($"/admin/certificates?thumbprint={certificate.Thumbprint}"));
        var definition = listed.GetProperty("Results")[0];
        Assert.Equal("reader", definition.GetProperty("Name").GetString());
        Assert.Equal("ValidUser", definition.GetProperty("SecurityClearance").GetString());
        Assert.Equal("Read", definition.GetProperty("Permissions").GetProperty("db").GetString());

        // It authenticates, with exactly those rights: reads of db, not writes, not another database, not administration.
        var reader = server.Client(certificate);
        Assert.Equal(HttpStatusCode.NotFound, (await reader.GetAsync("/databases/db/docs?id=nope")).StatusCode);
        var write = await reader.PutAsync("/databases/db/docs?id=x", new StringContent("{}"));
        Assert.Equal(HttpStatusCode.Forbidden, write.StatusCode);
        Assert.Contains("AuthorizationException", await write.Content.ReadAsStringAsync());
        Assert.Equal(HttpStatusCode.Forbidden, (await reader.GetAsync("/databases/other/docs?id=nope")).StatusCode);
        Assert.Equal(HttpStatusCode.Forbidden, (await reader.PostAsync("/admin/certificates", new StringContent("""{"Name":"escalate","SecurityClearance":"Operator"}""", Encoding.UTF8, "application/json"))).StatusCode);

        // Bad input: no name.
        Assert.Equal(HttpStatusCode.BadRequest, (await admin.PostAsync("/admin/certificates", new StringContent("""{"SecurityClearance":"ValidUser"}""", Encoding.UTF8, "application/json"))).StatusCode);
    }
    [Fact]
    public async Task The_server_certificate_is_replaced_without_a_restart_and_a_bad_one_is_refused()
    {
        await using var server = await SecuredServer.StartAsync();
        X509Certificate2? seen = null;
        var admin = server.Client(server.Admin, c => seen = c);
        Assert.Equal(HttpStatusCode.OK, (await admin.GetAsync("/databases")).StatusCode);
        string before = seen!.Thumbprint;

        var now = DateTimeOffset.UtcNow;
        using var replacement = CertificateFactory.CreateServer(server.Ca, "localhost", ["localhost"], [System.Net.IPAddress.Loopback, System.Net.IPAddress.IPv6Loopback], now.AddMinutes(-5), now.AddDays(20));
        // A renewal comes with its chain (the issuer of the clients' certificates stays trusted through it).
        var chain = new X509Certificate2Collection { replacement, X509CertificateLoader.LoadCertificate(server.Ca.RawData) };
        string body = new JsonObject { ["Name"] = "renewed", ["Certificate"] = Convert.ToBase64String(chain.Export(X509ContentType.Pkcs12, "pw")!), ["Password"] = "pw" }.ToJsonString();
        var r = await admin.PostAsync("/admin/certificates/replace-cluster-cert?replaceImmediately=true", new StringContent(body, Encoding.UTF8, "application/json"));
        Assert.True(r.StatusCode == HttpStatusCode.OK, await r.Content.ReadAsStringAsync());

        // A new connection gets the new certificate (no restart); the admin still authenticates.
        var fresh = server.Client(server.Admin, c => seen = c);
        Assert.Equal(HttpStatusCode.OK, (await fresh.GetAsync("/databases")).StatusCode);
        Assert.Equal(replacement.Thumbprint, seen!.Thumbprint);
        Assert.NotEqual(before, seen.Thumbprint);

        // Not a certificate, or one without its key: RavenDB's "Unable to load the provided certificate", nothing changed.
        foreach (string bad in new[] { Convert.ToBase64String(Encoding.UTF8.GetBytes("not a pfx")), Convert.ToBase64String(replacement.Export(X509ContentType.Cert)) })
        {
            var refused = await fresh.PostAsync("/admin/certificates/replace-cluster-cert", new StringContent(new JsonObject { ["Certificate"] = bad }.ToJsonString(), Encoding.UTF8, "application/json"));
            Assert.Equal(HttpStatusCode.BadRequest, refused.StatusCode);
            Assert.Contains("Unable to load the provided certificate", await refused.Content.ReadAsStringAsync());
        }
        var last = server.Client(server.Admin, c => seen = c);
        Assert.Equal(HttpStatusCode.OK, (await last.GetAsync("/databases")).StatusCode);
        Assert.Equal(replacement.Thumbprint, seen!.Thumbprint);
    }
}
