using System.Globalization;
using System.Net;

namespace RavenLite.Cli;

/// <summary><c>ravenlite certs ca|server|client</c>: the certificates of a secured server (docs/security.md). Each returns the exit code.</summary>
internal static class CertCommands
{
    public static int Ca(DirectoryInfo output, string name, int days, string? password, TextWriter log) => Guard(log, () =>
    {
        var now = DateTimeOffset.UtcNow;
        using var ca = CertificateFactory.CreateCa(name, now.AddMinutes(-5), now.AddDays(days));
        Report(log, ca, CertificateFactory.Write(ca, [], output.FullName, "ca", password));
        log.WriteLine("Keep ca.pfx / ca.key.pem private: whoever holds them can issue certificates this CA vouches for.");
        return 0;
    });

    public static int Server(FileInfo caPfx, string? caPassword, DirectoryInfo output, string name, string[] dns, string[] ips, int days, string? password, TextWriter log) => Guard(log, () =>
    {
        using var ca = CertificateFactory.LoadPfx(caPfx.FullName, caPassword);
        var addresses = ips.Select(ip => IPAddress.TryParse(ip, out var a) ? a : throw new ArgumentException($"--ip '{ip}' is not an IP address.")).ToList();
        var now = DateTimeOffset.UtcNow;
        using var server = CertificateFactory.CreateServer(ca, dns.FirstOrDefault() ?? ips.FirstOrDefault() ?? "localhost", dns, addresses, now.AddMinutes(-5), now.AddDays(days));
        Report(log, server, CertificateFactory.Write(server, [ca], output.FullName, name, password));
        log.WriteLine($"Start the server with: --ServerUrl https://{(ips.FirstOrDefault() is { } ip ? (ip.Contains(':', StringComparison.Ordinal) ? "[" + ip + "]" : ip) : dns.FirstOrDefault() ?? "127.0.0.1")}:8443 --Security:Certificate:Path {Path.Combine(output.FullName, name + ".pfx")}{(password != null ? " --Security:Certificate:Password ..." : "")}");
        return 0;
    });

    public static int Client(FileInfo caPfx, string? caPassword, DirectoryInfo output, string name, int days, string? password, TextWriter log) => Guard(log, () =>
    {
        using var ca = CertificateFactory.LoadPfx(caPfx.FullName, caPassword);
        var now = DateTimeOffset.UtcNow;
        using var client = CertificateFactory.CreateClient(ca, name, now.AddMinutes(-5), now.AddDays(days));
        Report(log, client, CertificateFactory.Write(client, [ca], output.FullName, name, password));
        log.WriteLine($"Register it (PUT /admin/certificates), or make it the first admin with --Security:WellKnownAdminCertificates {client.Thumbprint}");
        return 0;
    });

    private static void Report(TextWriter log, System.Security.Cryptography.X509Certificates.X509Certificate2 c, IReadOnlyList<string> files)
    {
        log.WriteLine($"{c.Subject}  thumbprint {c.Thumbprint}  valid {c.NotBefore.ToUniversalTime().ToString("u", CultureInfo.InvariantCulture)} .. {c.NotAfter.ToUniversalTime().ToString("u", CultureInfo.InvariantCulture)}");
        foreach (string f in files)
            log.WriteLine("  wrote " + f);
    }

    private static int Guard(TextWriter log, Func<int> body)
    {
        try
        {
            return body();
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or ArgumentException or System.Security.Cryptography.CryptographicException or InvalidOperationException)
        {
            log.WriteLine($"error: {e.Message}");
            return 2;
        }
    }
}
