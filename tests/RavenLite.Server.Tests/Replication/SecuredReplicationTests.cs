using System.Security.Cryptography.X509Certificates;


namespace RavenLite.Server.Tests.Replication;

/// <summary>
/// Replication between two secured servers (docs/replication.md "Connection"): over TLS, the source presenting its server
/// certificate; the destination's permissions for that certificate decide, and a refused source reports why.
/// </summary>
public sealed class SecuredReplicationTests
{
    /// <summary>Registers <paramref name="other"/>'s server certificate (with its CA, as a PEM bundle) on <paramref name="on"/>.</summary>
    private static async Task Register(SecuredServer on, SecuredServer other, string name, string permissions)
    {
        var leaf = X509CertificateLoader.LoadPkcs12CollectionFromFile(other.ServerPfx, null).Single(c => c.HasPrivateKey);
        var body = new JsonObject
        {
            ["Name"] = name,
            ["Certificate"] = leaf.ExportCertificatePem() + "\n" + other.Ca.ExportCertificatePem(),
            ["SecurityClearance"] = "ValidUser",
            ["Permissions"] = JsonNode.Parse(permissions),
        };
        var r = await on.Client(on.Admin).PutAsync("/admin/certificates", TestServer.Json(body.ToJsonString(), contentType: true));
        Assert.True(r.StatusCode == HttpStatusCode.Created, $"register {name}: {(int)r.StatusCode} {await r.Content.ReadAsStringAsync()}");
    }

    [Fact]
    public async Task Secured_servers_replicate_over_tls_with_the_source_certificate_once_the_destination_grants_it_write_access()
    {
        await using var a = await SecuredServer.StartAsync();
        await using var b = await SecuredServer.StartAsync();
        await a.CreateDatabaseAsync("db");
        await b.CreateDatabaseAsync("db");
        // A trusts B's certificate (registered here); B does not yet know A's.
        await Register(a, b, "server b", "{}");
        var adminA = a.Client(a.Admin);
        var adminB = b.Client(b.Admin);
        await ReplicationSetup.PutAsync(adminA, "db", "users/1", """{"Name":"secret","@metadata":{"@collection":"Users"}}""");
        long taskId = await ReplicationSetup.ExternalAsync(adminA, "db", b.Url, "db");

        await Eventually.HoldsAsync(async () =>
            (await TestServer.ReadJson(await adminA.GetAsync($"/databases/db/tasks?key={taskId}&type=Replication"))).GetProperty("Error").GetString() is { } error
            && error.Contains("refused", StringComparison.OrdinalIgnoreCase) || false,
            "the refused source to report it", state: async () => await adminA.GetStringAsync($"/databases/db/tasks?key={taskId}&type=Replication"));
        Assert.Null(await ReplicationSetup.GetAsync(adminB, "db", "users/1"));

        // Read access is not enough: replication writes.
        await Register(b, a, "server a", """{"db":"Read"}""");
        await Eventually.HoldsAsync(async () =>
            (await TestServer.ReadJson(await adminA.GetAsync($"/databases/db/tasks?key={taskId}&type=Replication"))).GetProperty("Error").GetString() is { } error
            && error.Contains("AuthorizationFailed", StringComparison.Ordinal),
            "the source to report AuthorizationFailed", state: async () => await adminA.GetStringAsync($"/databases/db/tasks?key={taskId}&type=Replication"));

        await Register(b, a, "server a", """{"db":"ReadWrite"}""");
        await Eventually.HoldsAsync(async () => await ReplicationSetup.GetAsync(adminB, "db", "users/1") != null, "users/1 on b over TLS",
            state: async () => await adminA.GetStringAsync($"/databases/db/tasks?key={taskId}&type=Replication"));
        Assert.Equal("secret", (await ReplicationSetup.GetAsync(adminB, "db", "users/1"))!.Value.GetProperty("Name").GetString());
    }
}
