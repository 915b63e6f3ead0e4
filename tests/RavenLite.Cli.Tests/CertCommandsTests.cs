using System.Security.Cryptography.X509Certificates;
using RavenLite.TestKit;

namespace RavenLite.Cli.Tests;

public class CertCommandsTests
{
    [Fact]
    public void Certs_ca_server_and_client_write_loadable_chained_certificates_with_private_key_files_kept_private()
    {
        using var dir = new TempDirectory("ravenlite-certs");
        var output = new StringWriter();
        var d = new DirectoryInfo(dir.Path);
        Assert.Equal(0, CertCommands.Ca(d, "Test CA", 30, null, output));
        var caPfx = new FileInfo(Path.Combine(dir.Path, "ca.pfx"));
        Assert.Equal(0, CertCommands.Server(caPfx, null, d, "server", ["localhost", "db.example"], ["127.0.0.1", "::1"], 10, "pw-1", output));
        Assert.Equal(0, CertCommands.Client(caPfx, null, d, "alice", 10, null, output));
        Assert.Equal(2, CertCommands.Client(new FileInfo(Path.Combine(dir.Path, "missing.pfx")), null, d, "bob", 10, null, output));
        Assert.Contains("error:", output.ToString(), StringComparison.Ordinal);

        var ca = X509CertificateLoader.LoadCertificateFromFile(Path.Combine(dir.Path, "ca.pem"));
        Assert.True(ca.Extensions.OfType<X509BasicConstraintsExtension>().Single().CertificateAuthority);

        // The server PFX (password protected) holds the key and the CA; its names are the ones asked for.
        var serverAll = X509CertificateLoader.LoadPkcs12CollectionFromFile(Path.Combine(dir.Path, "server.pfx"), "pw-1");
        var server = serverAll.Single(c => c.HasPrivateKey);
        Assert.Contains(serverAll, c => c.Thumbprint == ca.Thumbprint);
        string names = server.Extensions.OfType<X509SubjectAlternativeNameExtension>().Single().Format(false);
        Assert.Contains("db.example", names, StringComparison.Ordinal);
        Assert.Contains("127.0.0.1", names, StringComparison.Ordinal);
        Assert.Contains(server.Extensions.OfType<X509EnhancedKeyUsageExtension>().Single().EnhancedKeyUsages.Cast<System.Security.Cryptography.Oid>(), o => o.Value == "1.3.6.1.5.5.7.3.1");
        Assert.Contains(server.Extensions.OfType<X509EnhancedKeyUsageExtension>().Single().EnhancedKeyUsages.Cast<System.Security.Cryptography.Oid>(), o => o.Value == "1.3.6.1.5.5.7.3.2"); // it replicates as a client
        Assert.Throws<System.Security.Cryptography.CryptographicException>(() => X509CertificateLoader.LoadPkcs12CollectionFromFile(Path.Combine(dir.Path, "server.pfx"), "wrong"));
        // The PEM pair loads (encrypted key with the password) and is the same certificate.
        using var fromPem = X509Certificate2.CreateFromEncryptedPemFile(Path.Combine(dir.Path, "server.pem"), "pw-1", Path.Combine(dir.Path, "server.key.pem"));
        Assert.Equal(server.Thumbprint, fromPem.Thumbprint);

        // The client certificate: for client authentication, chained to the CA, thumbprint printed.
        using var client = X509Certificate2.CreateFromPemFile(Path.Combine(dir.Path, "alice.pem"), Path.Combine(dir.Path, "alice.key.pem"));
        Assert.Contains(client.Extensions.OfType<X509EnhancedKeyUsageExtension>().Single().EnhancedKeyUsages.Cast<System.Security.Cryptography.Oid>(), o => o.Value == "1.3.6.1.5.5.7.3.2");
        using var chain = new X509Chain();
        chain.ChainPolicy.TrustMode = X509ChainTrustMode.CustomRootTrust;
        chain.ChainPolicy.CustomTrustStore.Add(ca);
        chain.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
        Assert.True(chain.Build(client));
        Assert.Contains(client.Thumbprint, output.ToString(), StringComparison.Ordinal);

        if (!OperatingSystem.IsWindows())
        {
            foreach (string f in new[] { "ca.pfx", "ca.key.pem", "server.pfx", "server.key.pem", "alice.pfx", "alice.key.pem" })
                Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(Path.Combine(dir.Path, f)));
        }
    }
}
