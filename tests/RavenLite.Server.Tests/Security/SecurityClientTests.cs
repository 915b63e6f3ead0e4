using System.Security.Cryptography.X509Certificates;
using RavenLite.Cli;
using RavenLite.Client;
using RavenLite.Client.Certificates;
using RavenLite.Client.Exceptions;
using RavenLite.Client.Linq;
using RavenLite.Client.Subscriptions;
using RavenLite.Server.Tests.Compatibility;

namespace RavenLite.Server.Tests.Security;

/// <summary>The .NET client (<see cref="DocumentStore.Certificate"/>) and RavenDB's Node client against a secured server.</summary>
public sealed class SecurityClientTests(ITestOutputHelper output)
{
    private sealed class Order
    {
        public string? Id { get; set; }
        public string Company { get; set; } = "";
        public int Freight { get; set; }
    }

    private static DocumentStore Store(SecuredServer s, X509Certificate2? certificate, string database = "db")
    {
        var store = new DocumentStore
        {
            Urls = [s.Url.ToString()],
            Database = database,
            Certificate = certificate,
            ServerCertificateValidation = (_, presented, _, _) => s.TrustsServer(presented as X509Certificate2),
        };
        return store.Initialize();
    }

    [Fact]
    public async Task Dotnet_client_authenticates_with_its_certificate_for_requests_and_subscriptions()
    {
        await using var s = await SecuredServer.StartAsync();
        var reader = s.NewClient("reader");
        var outsider = s.NewClient("outsider");
        using var admin = Store(s, s.Admin);
        await admin.Maintenance.Server.SendAsync(new Client.Operations.CreateDatabaseOperation("db"));
        await admin.Maintenance.Server.SendAsync(new PutClientCertificateOperation("reader", reader, SecurityClearance.ValidUser, new Dictionary<string, DatabaseAccess> { ["db"] = DatabaseAccess.Read }));
        await admin.Maintenance.Server.SendAsync(new PutClientCertificateOperation("outsider", outsider, SecurityClearance.ValidUser, new Dictionary<string, DatabaseAccess> { ["elsewhere"] = DatabaseAccess.Admin }));
        var listed = await admin.Maintenance.Server.SendAsync(new GetCertificatesOperation());
        Assert.Equal(["outsider", "reader"], listed.Select(c => c.Name).ToArray());
        var me = await admin.Maintenance.Server.SendAsync(new WhoAmIOperation());
        Assert.Equal(SecurityClearance.ClusterAdmin, me.SecurityClearance);

        using (var session = admin.OpenAsyncSession())
        {
            for (int i = 1; i <= 20; i++)
                await session.StoreAsync(new Order { Company = "companies/" + (i % 3), Freight = i }, "orders/" + i);
            await session.SaveChangesAsync();
        }
        await using (var bulk = admin.BulkInsert())
        {
            for (int i = 21; i <= 520; i++)
                await bulk.StoreAsync(new Order { Company = "companies/" + (i % 3), Freight = i }, "orders/" + i);
        }

        using var readerStore = Store(s, reader);
        using (var session = readerStore.OpenAsyncSession())
        {
            Assert.Equal(7, (await session.LoadAsync<Order>("orders/7"))!.Freight);
            Assert.Equal(500, await session.Query<Order>().Where(o => o.Freight > 20).CountAsync());
            await session.StoreAsync(new Order { Company = "x" }, "orders/new");
            var refused = await Assert.ThrowsAsync<AuthorizationException>(() => session.SaveChangesAsync());
            Assert.Contains("has Read access to database 'db'", refused.Message, StringComparison.Ordinal);
        }
        await Assert.ThrowsAsync<AuthorizationException>(() => readerStore.Maintenance.Server.SendAsync(new Client.Operations.CreateDatabaseOperation("db2")));

        // A subscription over the TLS TCP port: the Read certificate may consume; a certificate without access to the database may not.
        string name = await admin.Subscriptions.CreateAsync(new SubscriptionCreationOptions { Query = "from Orders where Freight > 500" });
        var seen = new HashSet<string>();
        await using (var worker = readerStore.Subscriptions.GetSubscriptionWorker<Order>(new SubscriptionWorkerOptions(name) { CloseWhenNoDocsLeft = true }))
        {
            // CloseWhenNoDocsLeft: the run ends after the last batch.
            await worker.Run(batch =>
            {
                foreach (var item in batch.Items)
                    seen.Add(item.Id);
            }).WaitAsync(TimeSpan.FromSeconds(60));
        }
        Assert.Equal(20, seen.Count);
        using var outsiderStore = Store(s, outsider);
        await using (var worker = outsiderStore.Subscriptions.GetSubscriptionWorker<Order>(new SubscriptionWorkerOptions(name) { CloseWhenNoDocsLeft = true }))
        {
            var e = await Assert.ThrowsAsync<AuthorizationException>(() => worker.Run(_ => { }).WaitAsync(TimeSpan.FromSeconds(60)));
            Assert.Contains("no access to database 'db'", e.Message, StringComparison.Ordinal);
        }

        // Without a certificate: 401, the client's AuthenticationException.
        using var anonymous = Store(s, null);
        await Assert.ThrowsAsync<AuthenticationException>(() => anonymous.Maintenance.Server.SendAsync(new Client.Operations.GetDatabaseNamesOperation()));
        Assert.Throws<InvalidOperationException>(() => new DocumentStore { Urls = ["http://127.0.0.1:1"], Certificate = s.Admin }.Initialize());
    }

    [Fact]
    public async Task Official_node_client_runs_session_query_index_bulk_insert_and_subscription_flow_secured()
    {
        await using var s = await SecuredServer.StartAsync();
        string certs = Path.Combine(s.Dir, "certs");
        using (var reader = s.NewClient("reader"))
            CertificateFactory.Write(reader, [s.Ca], certs, "reader", null);
        var (code, stdout, stderr) = await NodeClientTests.RunScriptAsync(output, ["secured.mjs", s.Url.ToString().TrimEnd('/'), "secured", certs],
            new Dictionary<string, string> { ["NODE_EXTRA_CA_CERTS"] = Path.Combine(certs, "ca.pem") });
        Assert.True(code == 0, $"secured.mjs exited {code}:\n{stdout}\n{stderr}");
        Assert.Contains("secured: ok", stdout, StringComparison.Ordinal);
    }
}
