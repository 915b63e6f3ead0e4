using System.Net.Http.Headers;
using System.Security.Cryptography;
using RavenLite.Server.Hosting;
using RavenLite.TestKit;

namespace RavenLite.Server.Tests.Security;

/// <summary>
/// Encrypted databases with RavenDB's workflow (docs/security.md "Encryption at rest"): a key generated, distributed,
/// then a database created with <c>Encrypted: true</c> on a secured server with a master key. Nothing its documents,
/// ids, counters, time series, attachments or index terms hold shows in any file under the data directory; it opens
/// again after a restart with the same master key, not with another, and the master key rotates without the data
/// being touched.
/// </summary>
public sealed class EncryptedDatabaseTests(ITestOutputHelper output)
{
    private const string Marker = "MARKER-e2c9-never-on-disk";

    private static string WriteMasterKey(string dir, string name = "master.key", UnixFileMode mode = UnixFileMode.UserRead | UnixFileMode.UserWrite)
    {
        string path = Path.Combine(dir, name);
        File.WriteAllText(path, Convert.ToBase64String(RandomNumberGenerator.GetBytes(32)));
        if (!OperatingSystem.IsWindows())
            File.SetUnixFileMode(path, mode);
        return path;
    }

    private static async Task<HttpResponseMessage> Send(HttpClient http, HttpMethod method, string path, string? json, HttpStatusCode expect)
    {
        using var request = new HttpRequestMessage(method, path) { Content = json == null ? null : new StringContent(json, Encoding.UTF8, "application/json") };
        var r = await http.SendAsync(request);
        Assert.True(r.StatusCode == expect, $"{method} {path}: {(int)r.StatusCode} {await r.Content.ReadAsStringAsync()}");
        return r;
    }

    private static void AssertNoMarker(string dir)
    {
        var marker = Encoding.UTF8.GetBytes(Marker);
        foreach (string file in Directory.GetFiles(dir, "*", SearchOption.AllDirectories))
        {
            byte[] bytes;
            try
            {
                bytes = File.ReadAllBytes(file);
            }
            catch (IOException)
            {
                continue; // deleted meanwhile (a merged Lucene file)
            }
            Assert.True(bytes.AsSpan().IndexOf(marker) < 0, $"'{file}' holds the marker in plain text");
        }
    }

    [Fact]
    public async Task An_encrypted_database_leaves_nothing_readable_on_disk_and_opens_again_only_with_its_master_key()
    {
        using var dir = new TempDirectory("ravenlite-encrypted-db");
        string masterKey = WriteMasterKey(dir.Path);
        string data = Path.Combine(dir.Path, "data");
        await using (var server = await SecuredServer.StartAsync(dir.Path, extraArgs: ["--Security:MasterKey:Path", masterKey]))
        {
            var admin = server.Client(server.Admin);
            string key = await (await Send(admin, HttpMethod.Get, "/admin/secrets/generate", null, HttpStatusCode.OK)).Content.ReadAsStringAsync();
            Assert.Equal(32, Convert.FromBase64String(key).Length);
            // Without its key on this node, the database is refused and nothing is created.
            var refused = await Send(admin, HttpMethod.Put, "/admin/databases", """{"DatabaseName":"vault","Encrypted":true}""", HttpStatusCode.BadRequest);
            Assert.Contains("holds no key", await refused.Content.ReadAsStringAsync(), StringComparison.Ordinal);
            using (var bad = new StringContent("bm90IGEga2V5", Encoding.UTF8, "text/plain"))
                Assert.Equal(HttpStatusCode.BadRequest, (await admin.PostAsync("/admin/secrets/distribute?name=vault&node=A", bad)).StatusCode);
            using (var content = new StringContent(key, Encoding.UTF8, "text/plain"))
                Assert.Equal(HttpStatusCode.Created, (await admin.PostAsync("/admin/secrets/distribute?name=vault&node=A", content)).StatusCode);
            using (var again = new StringContent(key, Encoding.UTF8, "text/plain"))
                Assert.Equal(HttpStatusCode.Conflict, (await admin.PostAsync("/admin/secrets?name=vault", again)).StatusCode); // never overwritten by accident
            await Send(admin, HttpMethod.Put, "/admin/databases", """{"DatabaseName":"vault","Encrypted":true}""", HttpStatusCode.Created);
            var record = await TestServer.ReadJson(await admin.GetAsync("/admin/databases?name=vault"));
            Assert.True(record.GetProperty("Encrypted").GetBoolean());

            // The marker in documents and ids, a counter's name, a time series' tag, an attachment's content and index terms.
            string bio = string.Concat(Enumerable.Repeat(Marker, 200));
            for (int i = 0; i < 50; i++)
                await Send(admin, HttpMethod.Put, $"/databases/vault/docs?id=people/{Marker}-{i}", $$$"""{"Name":"{{{Marker}}}-{{{i}}}","Bio":"{{{bio}}}","@metadata":{"@collection":"People"}}""", HttpStatusCode.Created);
            await Send(admin, HttpMethod.Post, "/databases/vault/counters", $$"""{"Documents":[{"DocumentId":"people/{{Marker}}-1","Operations":[{"Type":"Increment","CounterName":"{{Marker}}-likes","Delta":3}]}]}""", HttpStatusCode.OK);
            await Send(admin, HttpMethod.Post, $"/databases/vault/timeseries?docId=people/{Marker}-1", $$"""{"Name":"Heart","Appends":[{"Timestamp":"2026-01-01T00:00:00Z","Values":[60],"Tag":"{{Marker}}-watch"}]}""", HttpStatusCode.NoContent);
            using (var attachment = new ByteArrayContent(Encoding.UTF8.GetBytes(string.Concat(Enumerable.Repeat(Marker, 1000)))))
            {
                attachment.Headers.ContentType = new MediaTypeHeaderValue("text/plain");
                Assert.Equal(HttpStatusCode.Created, (await admin.PutAsync($"/databases/vault/attachments?id=people/{Marker}-1&name=notes.txt", attachment)).StatusCode);
            }
            await Send(admin, HttpMethod.Put, "/databases/vault/admin/indexes", """{"Indexes":[{"Name":"People/ByName","Maps":["from p in docs.People select new { p.Name }"]}]}""", HttpStatusCode.Created);
            await Eventually.HoldsAsync(async () =>
            {
                var q = await TestServer.ReadJson(await Send(admin, HttpMethod.Post, "/databases/vault/queries", $$"""{"Query":"from index 'People/ByName' where Name = '{{Marker}}-7'"}""", HttpStatusCode.OK));
                return !q.GetProperty("IsStale").GetBoolean() && q.GetProperty("TotalResults").GetInt32() == 1;
            }, "the index to find the document by its encrypted term");
            AssertNoMarker(data); // while open: journal records, the data file and its seals, Lucene files
        }
        AssertNoMarker(data); // after the final flush and close

        // Restarted with its master key: everything reads back, the index finds the term.
        await using (var server = await SecuredServer.StartAsync(dir.Path, extraArgs: ["--Security:MasterKey:Path", masterKey]))
        {
            var admin = server.Client(server.Admin);
            var doc = await TestServer.ReadJson(await Send(admin, HttpMethod.Get, $"/databases/vault/docs?id=people/{Marker}-7", null, HttpStatusCode.OK));
            Assert.Equal($"{Marker}-7", doc.GetProperty("Results")[0].GetProperty("Name").GetString());
            var q = await TestServer.ReadJson(await Send(admin, HttpMethod.Post, "/databases/vault/queries", $$"""{"Query":"from index 'People/ByName' where Name = '{{Marker}}-7'"}""", HttpStatusCode.OK));
            Assert.Equal(1, q.GetProperty("TotalResults").GetInt32());
            Assert.Equal(string.Concat(Enumerable.Repeat(Marker, 1000)), await admin.GetStringAsync($"/databases/vault/attachments?id=people/{Marker}-1&name=notes.txt"));
        }

        // Another master key: the server refuses to start and says why; with the old one named as previous, it rotates.
        string other = WriteMasterKey(dir.Path, "other.key");
        var e = await Assert.ThrowsAnyAsync<Exception>(async () => await (await SecuredServer.StartAsync(dir.Path, extraArgs: ["--Security:MasterKey:Path", other])).DisposeAsync());
        Assert.Contains("not the key", e.ToString(), StringComparison.Ordinal);
        await using (var server = await SecuredServer.StartAsync(dir.Path, extraArgs: ["--Security:MasterKey:Path", other, "--Security:MasterKey:PreviousPath", masterKey]))
        {
            var doc = await TestServer.ReadJson(await Send(server.Client(server.Admin), HttpMethod.Get, $"/databases/vault/docs?id=people/{Marker}-3", null, HttpStatusCode.OK));
            Assert.Equal($"{Marker}-3", doc.GetProperty("Results")[0].GetProperty("Name").GetString());
        }
        await using (var server = await SecuredServer.StartAsync(dir.Path, extraArgs: ["--Security:MasterKey:Path", other]))
            await Send(server.Client(server.Admin), HttpMethod.Get, $"/databases/vault/docs?id=people/{Marker}-3", null, HttpStatusCode.OK);
        AssertNoMarker(data);
    }

    [Fact]
    public async Task Encryption_needs_a_secured_server_and_a_master_key_only_its_user_reads()
    {
        await using (var plain = await TestServer.StartAsync())
        {
            var r = await plain.Http.PutAsync("/admin/databases", TestServer.Json("""{"DatabaseName":"vault","Encrypted":true}"""));
            Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
            Assert.Contains("is encrypted and requires a node which supports SSL", await r.Content.ReadAsStringAsync(), StringComparison.Ordinal);
            Assert.Equal(HttpStatusCode.ServiceUnavailable, (await plain.Http.GetAsync("/databases/vault/docs?id=x")).StatusCode); // nothing was created
        }
        using var dir = new TempDirectory("ravenlite-encrypted-db");
        string readable = WriteMasterKey(dir.Path, mode: UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.GroupRead | UnixFileMode.OtherRead);
        var e = Assert.ThrowsAny<Exception>(() => ServerHost.Build(["--DataDir", Path.Combine(dir.Path, "data"), "--Security:MasterKey:Path", readable]).Services.GetService(typeof(RavenLite.Server.Databases.DatabaseRegistry)));
        Assert.Contains("chmod 600", e.ToString(), StringComparison.Ordinal);
    }

    private static async Task<JsonElement> Operation(HttpClient http, string stateUrl)
    {
        JsonElement state = default;
        await Eventually.HoldsAsync(async () =>
        {
            state = await TestServer.ReadJson(await http.GetAsync(stateUrl));
            return state.GetProperty("Status").GetString() != "InProgress";
        }, "the operation to end: " + stateUrl, TimeSpan.FromSeconds(60));
        return state;
    }

    [Theory]
    [InlineData("Snapshot")]
    [InlineData("Backup")]
    public async Task Backups_of_an_encrypted_database_are_encrypted_and_restore_only_with_its_key(string type)
    {
        using var dir = new TempDirectory("ravenlite-encrypted-backup");
        string masterKey = WriteMasterKey(dir.Path);
        string backups = Path.Combine(dir.Path, "backups");
        await using var server = await SecuredServer.StartAsync(dir.Path, extraArgs: ["--Security:MasterKey:Path", masterKey]);
        var admin = server.Client(server.Admin);
        string key = await admin.GetStringAsync("/admin/secrets/generate");
        using (var content = new StringContent(key, Encoding.UTF8, "text/plain"))
            Assert.Equal(HttpStatusCode.Created, (await admin.PostAsync("/admin/secrets/distribute?name=vault&node=A", content)).StatusCode);
        await Send(admin, HttpMethod.Put, "/admin/databases", """{"DatabaseName":"vault","Encrypted":true}""", HttpStatusCode.Created);
        for (int i = 0; i < 30; i++)
            await Send(admin, HttpMethod.Put, $"/databases/vault/docs?id=people/{i}", $$$"""{"Name":"{{{Marker}}}-{{{i}}}","@metadata":{"@collection":"People"}}""", HttpStatusCode.Created);
        await Send(admin, HttpMethod.Put, "/databases/vault/admin/indexes", """{"Indexes":[{"Name":"People/ByName","Maps":["from p in docs.People select new { p.Name }"]}]}""", HttpStatusCode.Created);
        await Eventually.HoldsAsync(async () => !(await TestServer.ReadJson(await Send(admin, HttpMethod.Post, "/databases/vault/queries", """{"Query":"from index 'People/ByName'"}""", HttpStatusCode.OK))).GetProperty("IsStale").GetBoolean(), "the index");

        var started = await TestServer.ReadJson(await Send(admin, HttpMethod.Post, "/databases/vault/admin/backup", $$$"""{"BackupType":"{{{type}}}","LocalSettings":{"FolderPath":"{{{backups}}}"}}""", HttpStatusCode.OK));
        var backup = await Operation(admin, $"/databases/vault/operations/state?id={started.GetProperty("OperationId").GetInt64()}");
        Assert.True(backup.GetProperty("Status").GetString() == "Completed", backup.ToString());
        AssertNoMarker(backups);
        string folder = Directory.GetDirectories(backups).Single();

        // Without the key (a name this server holds none for, none given): refused, saying what it needs.
        var refused = await admin.PostAsync("/admin/restore/database", new StringContent($$"""{"DatabaseName":"nokey","BackupLocation":"{{folder}}"}""", Encoding.UTF8, "application/json"));
        string why = await refused.Content.ReadAsStringAsync();
        if (refused.StatusCode == HttpStatusCode.OK)
            why = (await Operation(admin, $"/operations/state?id={JsonDocument.Parse(why).RootElement.GetProperty("OperationId").GetInt64()}")).ToString();
        Assert.True(why.Contains("needs its key", StringComparison.Ordinal), why);
        // With another key: refused as not the backup's (a snapshot says so before anything is written; a dump fails to open).
        string wrong = await admin.GetStringAsync("/admin/secrets/generate");
        var other = await admin.PostAsync("/admin/restore/database", new StringContent($$"""{"DatabaseName":"wrongkey","BackupLocation":"{{folder}}","EncryptionKey":"{{wrong}}"}""", Encoding.UTF8, "application/json"));
        string otherWhy = await other.Content.ReadAsStringAsync();
        if (other.StatusCode == HttpStatusCode.OK)
            otherWhy = (await Operation(admin, $"/operations/state?id={JsonDocument.Parse(otherWhy).RootElement.GetProperty("OperationId").GetInt64()}")).ToString();
        Assert.Matches("not the key|does not authenticate", otherWhy);

        // With its key: an encrypted database again, everything there.
        var restore = await TestServer.ReadJson(await Send(admin, HttpMethod.Post, "/admin/restore/database", $$"""{"DatabaseName":"vault2","BackupLocation":"{{folder}}","EncryptionKey":"{{key}}"}""", HttpStatusCode.OK));
        var restored = await Operation(admin, $"/operations/state?id={restore.GetProperty("OperationId").GetInt64()}");
        Assert.True(restored.GetProperty("Status").GetString() == "Completed", restored.ToString());
        Assert.True((await TestServer.ReadJson(await admin.GetAsync("/admin/databases?name=vault2"))).GetProperty("Encrypted").GetBoolean());
        var doc = await TestServer.ReadJson(await Send(admin, HttpMethod.Get, "/databases/vault2/docs?id=people/7", null, HttpStatusCode.OK));
        Assert.Equal($"{Marker}-7", doc.GetProperty("Results")[0].GetProperty("Name").GetString());
        await Eventually.HoldsAsync(async () =>
        {
            var q = await TestServer.ReadJson(await Send(admin, HttpMethod.Post, "/databases/vault2/queries", $$"""{"Query":"from index 'People/ByName' where Name = '{{Marker}}-7'"}""", HttpStatusCode.OK));
            return !q.GetProperty("IsStale").GetBoolean() && q.GetProperty("TotalResults").GetInt32() == 1;
        }, "the restored index");
        AssertNoMarker(Path.Combine(dir.Path, "data"));
    }

    [Fact]
    public async Task Both_clients_create_and_use_an_encrypted_database_over_https()
    {
        using var dir = new TempDirectory("ravenlite-encrypted-clients");
        string masterKey = WriteMasterKey(dir.Path);
        await using var server = await SecuredServer.StartAsync(dir.Path, extraArgs: ["--Security:MasterKey:Path", masterKey]);

        // The .NET client.
        using (var store = new RavenLite.Client.DocumentStore
        {
            Urls = [server.Url.ToString()],
            Database = "dotnet",
            Certificate = server.Admin,
            ServerCertificateValidation = (_, presented, _, _) => server.TrustsServer(presented as System.Security.Cryptography.X509Certificates.X509Certificate2),
        }.Initialize())
        {
            string key = await store.Maintenance.Server.SendAsync(new RavenLite.Client.Operations.GenerateSecretKeyOperation());
            await store.Maintenance.Server.SendAsync(new RavenLite.Client.Operations.DistributeSecretKeyOperation("dotnet", key, "A"));
            await store.Maintenance.Server.SendAsync(new RavenLite.Client.Operations.CreateDatabaseOperation("dotnet", encrypted: true));
            using (var session = store.OpenAsyncSession())
            {
                await session.StoreAsync(new Account { Name = Marker }, "accounts/1");
                await session.SaveChangesAsync();
            }
            using (var session = store.OpenAsyncSession())
                Assert.Equal(Marker, (await session.LoadAsync<Account>("accounts/1"))!.Name);
        }
        Assert.True((await TestServer.ReadJson(await server.Client(server.Admin).GetAsync("/admin/databases?name=dotnet"))).GetProperty("Encrypted").GetBoolean());

        // RavenDB's Node client.
        string certs = Path.Combine(server.Dir, "certs");
        var (code, stdout, stderr) = await Compatibility.NodeClientTests.RunScriptAsync(output, ["encryption.mjs", server.Url.ToString().TrimEnd('/'), "node", certs], new Dictionary<string, string>());
        Assert.True(code == 0, $"encryption.mjs exited {code}:\n{stdout}\n{stderr}");
        Assert.Contains("encryption: ok", stdout, StringComparison.Ordinal);
        AssertNoMarker(Path.Combine(dir.Path, "data"));
    }

    private sealed class Account
    {
        public string Name { get; set; } = "";
    }

    [Fact]
    public async Task A_database_whose_key_is_wrong_does_not_open_and_says_so_while_the_others_serve()
    {
        using var dir = new TempDirectory("ravenlite-encrypted-wrong-key");
        string masterKey = WriteMasterKey(dir.Path);
        string[] args = ["--Security:MasterKey:Path", masterKey];
        string key;
        await using (var server = await SecuredServer.StartAsync(dir.Path, extraArgs: args))
        {
            var admin = server.Client(server.Admin);
            key = await admin.GetStringAsync("/admin/secrets/generate");
            using (var content = new StringContent(key, Encoding.UTF8, "text/plain"))
                Assert.Equal(HttpStatusCode.Created, (await admin.PostAsync("/admin/secrets/distribute?name=vault&node=A", content)).StatusCode);
            await Send(admin, HttpMethod.Put, "/admin/databases", """{"DatabaseName":"vault","Encrypted":true}""", HttpStatusCode.Created);
            await Send(admin, HttpMethod.Put, "/admin/databases", """{"DatabaseName":"open"}""", HttpStatusCode.Created);
            await Send(admin, HttpMethod.Put, "/databases/vault/docs?id=a/1", """{"V":1}""", HttpStatusCode.Created);
            await Send(admin, HttpMethod.Put, "/databases/open/docs?id=a/1", """{"V":1}""", HttpStatusCode.Created);
            // The stored key replaced on purpose (overwrite) with another: the open database keeps its own until closed.
            string other = await admin.GetStringAsync("/admin/secrets/generate");
            using (var content = new StringContent(other, Encoding.UTF8, "text/plain"))
                Assert.Equal(HttpStatusCode.Created, (await admin.PostAsync("/admin/secrets?name=vault&overwrite=true", content)).StatusCode);
        }
        await using (var server = await SecuredServer.StartAsync(dir.Path, extraArgs: args))
        {
            var admin = server.Client(server.Admin);
            var refused = await admin.GetAsync("/databases/vault/docs?id=a/1");
            Assert.Equal(HttpStatusCode.ServiceUnavailable, refused.StatusCode);
            string why = await refused.Content.ReadAsStringAsync();
            Assert.Contains("DatabaseLoadFailureException", why, StringComparison.Ordinal);
            Assert.Contains("not the key", why, StringComparison.Ordinal);
            await Send(admin, HttpMethod.Get, "/databases/open/docs?id=a/1", null, HttpStatusCode.OK); // the others serve
            // Its own key back: it opens, as it was (the refusal changed nothing).
            using (var content = new StringContent(key, Encoding.UTF8, "text/plain"))
                Assert.Equal(HttpStatusCode.Created, (await admin.PostAsync("/admin/secrets?name=vault&overwrite=true", content)).StatusCode);
            await Send(admin, HttpMethod.Get, "/databases/vault/docs?id=a/1", null, HttpStatusCode.OK);
        }
    }
}
