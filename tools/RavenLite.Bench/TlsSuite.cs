using System.Net;
using System.Security.Cryptography.X509Certificates;
using RavenLite.Cli;

namespace RavenLite.Bench;

/// <summary>
/// The cost of security: the `writes` suite's 64-client single-document PUTs against a secured server
/// (HTTPS, TLS 1.3, every client presenting a registered client certificate; connections kept alive) and against the
/// same server unsecured (plain HTTP), same machine, same run. Both servers run as child processes over fresh data
/// dirs; the runs alternate (plain, secured, plain, ...) <c>repeats</c> times and the medians are compared. The
/// secured rows are "ravenlite", the plain ones "plain-http", so the ratio reads secured / plain.
/// </summary>
internal sealed class TlsSuite(bool quick, string workDir, int repeats)
{
    private const int Clients = 64;

    // Kept whole: the rounds alternate plain and secured servers and the no-work floor inside one loop, so each
    // ratio compares runs of the same moment.
    public IEnumerable<BenchResult> Run()
    {
        var duration = TimeSpan.FromSeconds(quick ? 3 : 10);
        var docs = new OrderDocuments(20_000, seed: 7);
        string certs = Path.Combine(workDir, "certs");
        var (ca, client) = Certificates(certs);
        using var caOwner = ca;
        using var clientOwner = client;

        using var plain = ServerProcess.Start(Path.Combine(workDir, "plain"));
        using var secured = ServerProcess.Start(Path.Combine(workDir, "secured"),
            ["--ServerUrl", "https://127.0.0.1:0", "--Security:Certificate:Path", Path.Combine(certs, "server.pfx"), "--Security:WellKnownAdminCertificates", client.Thumbprint]);
        using var plainHttp = Client(plain.Url, null, ca);
        using var securedHttp = Client(secured.Url, client, ca);
        foreach (var http in new[] { plainHttp, securedHttp })
        {
            using var r = http.PutAsync("/admin/databases?name=bench", new StringContent("")).Result;
            if (r.StatusCode != HttpStatusCode.Created)
                throw new InvalidOperationException($"could not create the database: {(int)r.StatusCode} {r.Content.ReadAsStringAsync().Result}");
        }
        Console.WriteLine($"#   secured: {secured.Url} (TLS 1.3 expected, client certificate {client.Subject}); plain: {plain.Url}; {repeats} alternating runs of {duration.TotalSeconds:N0} s each");

        // The no-work server's answer is as long as ours (a PUT's answer body, header sizes alike).
        int answerBytes;
        using (var r = plainHttp.PutAsync("/databases/bench/docs?id=t/answer", new ReadOnlyMemoryContent(docs.Document(0))).Result)
            answerBytes = r.Content.ReadAsByteArrayAsync().Result.Length;
        var runs = new Dictionary<string, List<(long Ops, double Seconds, double P50, double P99, double CpuPerRequest)>> { ["plain-http"] = [], ["ravenlite"] = [] };
        var cost = new Dictionary<string, List<(double Server, double Client)>> { ["plain-http"] = [], ["ravenlite"] = [], ["kestrel-http"] = [], ["kestrel-https"] = [] };
        for (int round = 0; round < repeats; round++)
        {
            foreach (var (engine, server, http) in new[] { ("plain-http", plain, plainHttp), ("ravenlite", secured, securedHttp) })
            {
                long switches0 = server.ContextSwitches();
                double cpu0 = server.CpuSeconds(), clientCpu0 = System.Diagnostics.Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds;
                var (ops, seconds, p50, p99) = WritesSuite.Drive(Clients, duration, async (c, i) =>
                {
                    var body = new ReadOnlyMemoryContent(docs.Document((c * 7919 + i) % docs.Count));
                    using var r = await http.PutAsync($"/databases/bench/docs?id=t/{round}/{c}/{i}", body);
                    if (r.StatusCode != HttpStatusCode.Created)
                        throw new InvalidOperationException($"PUT answered {(int)r.StatusCode}");
                });
                double cpu = server.CpuSeconds() - cpu0, clientCpu = System.Diagnostics.Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds - clientCpu0;
                double switches = (server.ContextSwitches() - switches0) / (double)Math.Max(1, ops);
                runs[engine].Add((ops, seconds, p50, p99, cpu * 1e6 / Math.Max(1, ops)));
                cost[engine].Add((cpu * 1e6 / Math.Max(1, ops), clientCpu * 1e6 / Math.Max(1, ops)));
                Console.WriteLine($"#   round {round + 1} {engine}: {ops / seconds:N0} req/s, p50 {p50:F2} ms, p99 {p99:F2} ms, server CPU {cpu * 1e6 / Math.Max(1, ops):N0} µs per request, {switches:N1} server context switches per request, client (this process) CPU {clientCpu * 1e6 / Math.Max(1, ops):N0} µs per request");
            }
        }
        // The platform's floor: the same PUTs, clients and certificates against a server that does no work (the sink, Kestrel
        // with the server's transport and HTTPS settings), plain and HTTPS, alternating. What TLS adds per request there,
        // server and client CPU, is what Kestrel's HTTPS and HttpClient's TLS cost with no application at all.
        var noWork = new Dictionary<string, List<(long Ops, double Seconds, double P50, double P99)>> { ["kestrel-http"] = [], ["kestrel-https"] = [] };
        using (var sinkPlain = HttpSink.Start(inlineScheduling: true))
        using (var sinkSecured = HttpSink.Start(Path.Combine(certs, "server.pfx"), inlineScheduling: true))
        using (var sinkPlainHttp = Client(sinkPlain.Url, null, ca))
        using (var sinkSecuredHttp = Client(sinkSecured.Url, client, ca))
        {
            for (int round = 0; round < repeats; round++)
            {
                foreach (var (engine, sink, http) in new[] { ("kestrel-http", sinkPlain, sinkPlainHttp), ("kestrel-https", sinkSecured, sinkSecuredHttp) })
                {
                    double cpu0 = sink.CpuSeconds(), clientCpu0 = System.Diagnostics.Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds;
                    var (ops, seconds, p50, p99) = WritesSuite.Drive(Clients, duration, async (c, i) =>
                    {
                        var body = new ReadOnlyMemoryContent(docs.Document((c * 7919 + i) % docs.Count));
                        using var r = await http.PutAsync($"/put?answer={answerBytes}", body);
                        if (r.StatusCode != HttpStatusCode.Created)
                            throw new InvalidOperationException($"PUT answered {(int)r.StatusCode}");
                        await r.Content.ReadAsByteArrayAsync();
                    });
                    double server = (sink.CpuSeconds() - cpu0) * 1e6 / Math.Max(1, ops), clientSide = (System.Diagnostics.Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds - clientCpu0) * 1e6 / Math.Max(1, ops);
                    noWork[engine].Add((ops, seconds, p50, p99));
                    cost[engine].Add((server, clientSide));
                    Console.WriteLine($"#   round {round + 1} no-work Kestrel server {(engine == "kestrel-https" ? "over HTTPS" : "over plain HTTP")} ({answerBytes}-byte answers): {ops / seconds:N0} req/s, server CPU {server:N0} µs per request, client CPU {clientSide:N0} µs per request");
                }
            }
        }
        double Median(IEnumerable<double> values) => values.Order().ElementAt(values.Count() / 2);
        double Server(string engine) => Median(cost[engine].Select(c => c.Server));
        double ClientCpu(string engine) => Median(cost[engine].Select(c => c.Client));
        double platformAdds = Server("kestrel-https") - Server("kestrel-http") + ClientCpu("kestrel-https") - ClientCpu("kestrel-http");
        double oursAdds = Server("ravenlite") - Server("plain-http") + ClientCpu("ravenlite") - ClientCpu("plain-http");
        double oursPlain = Server("plain-http") + ClientCpu("plain-http");
        var c = System.Globalization.CultureInfo.InvariantCulture;
        Console.WriteLine(string.Create(c, $"#   no-work server HTTPS / plain: {Median(noWork["kestrel-https"].Select(r => r.Ops / r.Seconds)) / Median(noWork["kestrel-http"].Select(r => r.Ops / r.Seconds)):F2}; TLS adds (medians) {Server("kestrel-https") - Server("kestrel-http"):F1} µs server + {ClientCpu("kestrel-https") - ClientCpu("kestrel-http"):F1} µs client CPU per request there"));
        Console.WriteLine(string.Create(c, $"#   ours: TLS adds {Server("ravenlite") - Server("plain-http"):F1} µs server + {ClientCpu("ravenlite") - ClientCpu("plain-http"):F1} µs client on {oursPlain:F1} µs (server + client) per plain request; 0.8x allows {oursPlain / 0.8 - oursPlain:F1} µs in all"));
        Console.WriteLine(string.Create(c, $"#   with only the no-work server's {platformAdds:F1} µs added, ours would be at most {oursPlain / (oursPlain + platformAdds):F2}x (CPU-bound: both ends share the 2 cores); ours measured {oursPlain / (oursPlain + oursAdds):F2}x by CPU"));

        // The floor: the same exchange sizes over raw TCP and raw SslStream (no HTTP, no server), 64 connections.
        var floor = new Dictionary<string, double>();
        using (var serverCertificate = CertificateFactory.LoadPfx(Path.Combine(certs, "server.pfx"), null))
        {
            for (int round = 0; round < repeats; round++)
            {
                foreach (bool tls in new[] { false, true })
                {
                    double rate = EchoRate(tls, serverCertificate, client, duration);
                    floor[(tls ? "tls" : "tcp") + round] = rate;
                    Console.WriteLine($"#   round {round + 1} raw {(tls ? "SslStream" : "TCP")} exchanges (1,100 B request, 100 B answer, 64 connections, both ends in this process): {rate:N0}/s");
                }
            }
        }
        var ratios = Enumerable.Range(0, repeats).Select(r => floor["tls" + r] / floor["tcp" + r]).Order().ToList();
        Console.WriteLine($"#   raw SslStream / raw TCP exchange rate: {string.Join(", ", ratios.Select(r => r.ToString("F2", System.Globalization.CultureInfo.InvariantCulture)))} (the floor TLS sets on this machine)");

        foreach (var engine in new[] { "ravenlite", "plain-http" })
        {
            var median = runs[engine].OrderBy(r => r.Ops / r.Seconds).ElementAt(runs[engine].Count / 2);
            yield return new BenchResult("tls", $"put-{Clients}-clients", engine, "sync", median.Ops, median.Seconds, median.Ops / median.Seconds,
                null, null, null, null, null, median.P50, median.P99, (engine == "ravenlite" ? secured : plain).PeakRssBytes());
        }
        foreach (var engine in new[] { "kestrel-https", "kestrel-http" })
        {
            var median = noWork[engine].OrderBy(r => r.Ops / r.Seconds).ElementAt(noWork[engine].Count / 2);
            yield return new BenchResult("tls", $"no-work-put-{Clients}-clients", engine, "none", median.Ops, median.Seconds, median.Ops / median.Seconds,
                null, null, null, null, null, median.P50, median.P99, null);
        }
    }

    /// <summary>
    /// Request/answer exchanges per second over <see cref="Clients"/> loopback connections, each exchange a 1,100-byte
    /// request and a 100-byte answer, with both ends in this process; over TLS (1.2/1.3, the client presenting its
    /// certificate) when <paramref name="tls"/>.
    /// </summary>
    private static double EchoRate(bool tls, X509Certificate2 serverCertificate, X509Certificate2 clientCertificate, TimeSpan duration)
    {
        var listener = new System.Net.Sockets.TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        int port = ((IPEndPoint)listener.LocalEndpoint).Port;
        using var stop = new CancellationTokenSource();
        const int RequestBytes = 1100, AnswerBytes = 100;
        async Task<Stream> Wrap(System.Net.Sockets.TcpClient c, bool server)
        {
            c.NoDelay = true;
            Stream s = c.GetStream();
            if (!tls)
                return s;
#pragma warning disable CA5359 // a benchmark between two ends of this process
            var ssl = new System.Net.Security.SslStream(s, false, (_, _, _, _) => true);
#pragma warning restore CA5359
            if (server)
                await ssl.AuthenticateAsServerAsync(new System.Net.Security.SslServerAuthenticationOptions { ServerCertificate = serverCertificate, ClientCertificateRequired = true, EnabledSslProtocols = System.Security.Authentication.SslProtocols.Tls12 | System.Security.Authentication.SslProtocols.Tls13 });
            else
                await ssl.AuthenticateAsClientAsync(new System.Net.Security.SslClientAuthenticationOptions { TargetHost = "localhost", ClientCertificates = [clientCertificate] });
            return ssl;
        }
        var serve = Task.Run(async () =>
        {
            var connections = new List<Task>();
            for (int i = 0; i < Clients; i++)
            {
                var c = await listener.AcceptTcpClientAsync();
                connections.Add(Task.Run(async () =>
                {
                    using (c)
                    {
                        var stream = await Wrap(c, server: true);
                        var request = new byte[RequestBytes];
                        var answer = new byte[AnswerBytes];
                        try
                        {
                            while (true)
                            {
                                await stream.ReadExactlyAsync(request, stop.Token);
                                await stream.WriteAsync(answer, stop.Token);
                            }
                        }
                        catch (Exception e) when (e is OperationCanceledException or IOException or EndOfStreamException)
                        {
                            // the run ended
                        }
                    }
                }));
            }
            await Task.WhenAll(connections);
        });
        long exchanges = 0;
        var sw = System.Diagnostics.Stopwatch.StartNew();
        var clients = Enumerable.Range(0, Clients).Select(_ => Task.Run(async () =>
        {
            using var c = new System.Net.Sockets.TcpClient();
            await c.ConnectAsync(IPAddress.Loopback, port);
            var stream = await Wrap(c, server: false);
            var request = new byte[RequestBytes];
            var answer = new byte[AnswerBytes];
            while (sw.Elapsed < duration)
            {
                await stream.WriteAsync(request);
                await stream.ReadExactlyAsync(answer);
                Interlocked.Increment(ref exchanges);
            }
        })).ToArray();
        Task.WaitAll(clients);
        double seconds = sw.Elapsed.TotalSeconds;
        stop.Cancel();
        serve.Wait(TimeSpan.FromSeconds(10));
        listener.Stop();
        return exchanges / seconds;
    }

    /// <summary>A bench CA and a client certificate it issued (the caller disposes both), with a server certificate for localhost written to <c>{certs}/server.pfx</c>.</summary>
    internal static (X509Certificate2 Ca, X509Certificate2 Client) Certificates(string certs)
    {
        var now = DateTimeOffset.UtcNow;
        var ca = CertificateFactory.CreateCa("Bench CA", now.AddMinutes(-5), now.AddDays(1));
        using (var serverCert = CertificateFactory.CreateServer(ca, "localhost", ["localhost"], [IPAddress.Loopback], now.AddMinutes(-5), now.AddDays(1)))
            CertificateFactory.Write(serverCert, [ca], certs, "server", null);
        return (ca, CertificateFactory.CreateClient(ca, "bench", now.AddMinutes(-5), now.AddDays(1)));
    }

    /// <summary>A keep-alive client for 64 concurrent requests, trusting the bench CA, presenting <paramref name="certificate"/> when given.</summary>
    private static HttpClient Client(Uri url, X509Certificate2? certificate, X509Certificate2 ca)
    {
        var handler = new SocketsHttpHandler { MaxConnectionsPerServer = 256, PooledConnectionLifetime = TimeSpan.FromMinutes(10) };
        if (certificate != null)
            handler.SslOptions.ClientCertificates = [certificate];
        handler.SslOptions.RemoteCertificateValidationCallback = (_, presented, _, _) => presented != null
            && RavenLite.Server.Security.CertificateTrust.Chains(presented as X509Certificate2 ?? X509CertificateLoader.LoadCertificate(presented.GetRawCertData()), [ca], forClientAuthentication: false);
        return new HttpClient(handler) { BaseAddress = url, Timeout = TimeSpan.FromSeconds(60) };
    }
}
