using System.Diagnostics;
using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using System.Text.Json;
using RavenLite.Cli;

namespace RavenLite.Bench;

/// <summary>
/// docs/benchmarks.md "Encryption": one secured server with a master key, plain and encrypted databases
/// loaded with the same 1,000,000 orders through bulk insert (100,000 with --quick), then the same simple-map index
/// built on each; the encrypted rows against the plain ones (same server, same TLS), in two rounds of opposite order.
/// </summary>
internal sealed class EncryptionSuite(bool quick, string workDir)
{
    public IEnumerable<BenchResult> Run()
    {
        int count = quick ? 100_000 : 1_000_000;
        var docs = new OrderDocuments(count);
        Console.WriteLine($"# {count:N0} orders, {docs.TotalBytes / 1048576.0:N0} MB of JSON");
        string certs = Path.Combine(workDir, "certs");
        var (ca, client) = TlsSuite.Certificates(certs);
        using var caOwner = ca;
        using var clientOwner = client;
        string masterKey = Path.Combine(workDir, "master.key");
        File.WriteAllText(masterKey, Convert.ToBase64String(RandomNumberGenerator.GetBytes(32)));
        if (!OperatingSystem.IsWindows())
            File.SetUnixFileMode(masterKey, UnixFileMode.UserRead | UnixFileMode.UserWrite);
        using var server = ServerProcess.Start(Path.Combine(workDir, "encryption"),
            ["--ServerUrl", "https://127.0.0.1:0", "--Security:Certificate:Path", Path.Combine(certs, "server.pfx"), "--Security:WellKnownAdminCertificates", client.Thumbprint,
             "--Security:MasterKey:Path", masterKey]);
        var handler = new SocketsHttpHandler();
        handler.SslOptions.ClientCertificates = [client];
        handler.SslOptions.RemoteCertificateValidationCallback = (_, presented, _, _) => presented != null
            && RavenLite.Server.Security.CertificateTrust.Chains(presented as X509Certificate2 ?? X509CertificateLoader.LoadCertificate(presented.GetRawCertData()), [ca], forClientAuthentication: false);
        using var http = new HttpClient(handler) { BaseAddress = server.Url, Timeout = TimeSpan.FromMinutes(30) };
        string key = http.GetStringAsync("/admin/secrets/generate").Result;
        foreach (string sealedDb in new[] { "sealed", "sealed2" })
            Check(http.PostAsync($"/admin/secrets/distribute?name={sealedDb}&node=A", new StringContent(key, Encoding.UTF8, "text/plain")).Result, HttpStatusCode.Created);
        // Two rounds in opposite orders (plain, encrypted, then encrypted, plain): whichever runs first also warms the server.
        foreach (var (db, encrypted) in new[] { ("plain", false), ("sealed", true), ("sealed2", true), ("plain2", false) })
        {
            Check(http.PutAsync("/admin/databases", new StringContent(JsonSerializer.Serialize(new { DatabaseName = db, Encrypted = encrypted }), Encoding.UTF8, "application/json")).Result, HttpStatusCode.Created);
            string engine = encrypted ? "ravenlite-encrypted" : "ravenlite";
            var sw = Stopwatch.StartNew();
            Check(http.PostAsync($"/databases/{db}/bulk_insert?id=1", new BulkInsertSuite.BulkContent(docs)).Result, HttpStatusCode.Created);
            sw.Stop();
            yield return new BenchResult("encryption", "bulk-insert-orders", engine, "sync", count, sw.Elapsed.TotalSeconds, count / sw.Elapsed.TotalSeconds,
                null, null, null, null, null, null, null, server.PeakRssBytes());
            sw.Restart();
            string body = $"{{\"Indexes\":[{{\"Name\":\"Orders/Simple\",\"Maps\":[{JsonSerializer.Serialize(IndexingSuite.SimpleMap)}]}}]}}";
            Check(http.PutAsync($"/databases/{db}/admin/indexes", new StringContent(body, Encoding.UTF8, "application/json")).Result, HttpStatusCode.Created);
            long entries;
            while (true)
            {
                using var json = JsonDocument.Parse(http.GetStringAsync($"/databases/{db}/indexes/stats?name=Orders%2FSimple").Result);
                var s = json.RootElement.GetProperty("Results")[0];
                if (!s.GetProperty("IsStale").GetBoolean())
                {
                    entries = s.GetProperty("EntriesCount").GetInt64();
                    break;
                }
                Thread.Sleep(20);
            }
            sw.Stop();
            if (entries != count)
                throw new InvalidOperationException($"{db}: {entries} index entries for {count} orders");
            yield return new BenchResult("encryption", "index-simple-map", engine, "-", count, sw.Elapsed.TotalSeconds, count / sw.Elapsed.TotalSeconds,
                null, null, null, null, null, null, null, server.PeakRssBytes());
        }
    }

    private static void Check(HttpResponseMessage r, HttpStatusCode expected)
    {
        if (r.StatusCode != expected)
            throw new InvalidOperationException($"{r.RequestMessage?.Method} {r.RequestMessage?.RequestUri}: {(int)r.StatusCode} {r.Content.ReadAsStringAsync().Result}");
    }
}
