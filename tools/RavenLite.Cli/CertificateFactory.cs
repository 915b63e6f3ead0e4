using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace RavenLite.Cli;

/// <summary>
/// Makes the certificates a secured RavenLite needs (docs/security.md) with .NET's <see cref="CertificateRequest"/>:
/// a self-signed CA, server certificates (serverAuth, DNS/IP names) and client certificates (clientAuth), all ECDSA
/// P-256 with SHA-256, signed by the CA. Used by <c>ravenlite certs</c> and by the tests.
/// </summary>
public static class CertificateFactory
{
    private static readonly Oid ServerAuth = new("1.3.6.1.5.5.7.3.1");
    private static readonly Oid ClientAuth = new("1.3.6.1.5.5.7.3.2");

    /// <summary>A self-signed CA that may sign end-entity certificates only (path length 0).</summary>
    public static X509Certificate2 CreateCa(string name, DateTimeOffset notBefore, DateTimeOffset notAfter)
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest(new X500DistinguishedName("CN=" + name), key, HashAlgorithmName.SHA256);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(true, true, 0, true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.KeyCertSign | X509KeyUsageFlags.CrlSign, true));
        request.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(request.PublicKey, false));
        return request.CreateSelfSigned(notBefore, notAfter);
    }

    /// <summary>
    /// A server certificate for the given DNS names and IP addresses, signed by <paramref name="ca"/>: for server and
    /// client authentication both, as RavenDB's are — a server presents it as the client when it replicates to another.
    /// </summary>
    public static X509Certificate2 CreateServer(X509Certificate2 ca, string commonName, IEnumerable<string> dnsNames, IEnumerable<IPAddress> addresses, DateTimeOffset notBefore, DateTimeOffset notAfter)
    {
        var names = new SubjectAlternativeNameBuilder();
        foreach (string dns in dnsNames)
            names.AddDnsName(dns);
        foreach (var ip in addresses)
            names.AddIpAddress(ip);
        return CreateSigned(ca, commonName, [ServerAuth, ClientAuth], notBefore, notAfter, names.Build());
    }

    /// <summary>A client certificate signed by <paramref name="ca"/>.</summary>
    public static X509Certificate2 CreateClient(X509Certificate2 ca, string commonName, DateTimeOffset notBefore, DateTimeOffset notAfter) =>
        CreateSigned(ca, commonName, [ClientAuth], notBefore, notAfter, null);

    private static X509Certificate2 CreateSigned(X509Certificate2 ca, string commonName, Oid[] usages, DateTimeOffset notBefore, DateTimeOffset notAfter, X509Extension? names)
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest(new X500DistinguishedName("CN=" + commonName), key, HashAlgorithmName.SHA256);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(false, false, 0, true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.DigitalSignature | X509KeyUsageFlags.KeyAgreement, true));
        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([.. usages], false));
        request.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(request.PublicKey, false));
        request.CertificateExtensions.Add(X509AuthorityKeyIdentifierExtension.CreateFromCertificate(ca, includeKeyIdentifier: true, includeIssuerAndSerial: false));
        if (names != null)
            request.CertificateExtensions.Add(names);
        // The certificate may not outlive its CA.
        if (notAfter > ca.NotAfter)
            notAfter = ca.NotAfter;
        byte[] serial = RandomNumberGenerator.GetBytes(16);
        serial[0] &= 0x7F;
        using var publicOnly = request.Create(ca, notBefore, notAfter, serial);
        return publicOnly.CopyWithPrivateKey(key);
    }

    /// <summary>
    /// Writes <c>{name}.pfx</c> (certificate, key and <paramref name="chain"/>), <c>{name}.pem</c> (certificate, then
    /// <paramref name="chain"/>) and <c>{name}.key.pem</c> (the PKCS#8 key, encrypted when a password is given). Files
    /// holding a key are made readable by the owner only. Returns the paths.
    /// </summary>
    public static IReadOnlyList<string> Write(X509Certificate2 certificate, IEnumerable<X509Certificate2> chain, string directory, string name, string? password)
    {
        Directory.CreateDirectory(directory);
        var issuers = chain.ToList();
        string pfx = Path.Combine(directory, name + ".pfx");
        string pem = Path.Combine(directory, name + ".pem");
        string keyPem = Path.Combine(directory, name + ".key.pem");
        var bundle = new X509Certificate2Collection { certificate };
        foreach (var c in issuers)
            bundle.Add(X509CertificateLoader.LoadCertificate(c.RawData));
        WritePrivate(pfx, bundle.Export(X509ContentType.Pkcs12, password)!);
        File.WriteAllText(pem, string.Concat(new[] { certificate }.Concat(issuers).Select(c => c.ExportCertificatePem() + "\n")));
        using var key = certificate.GetECDsaPrivateKey() ?? throw new InvalidOperationException("The certificate has no ECDSA private key.");
        string keyText = string.IsNullOrEmpty(password)
            ? key.ExportPkcs8PrivateKeyPem()
            : key.ExportEncryptedPkcs8PrivateKeyPem(password, new PbeParameters(PbeEncryptionAlgorithm.Aes256Cbc, HashAlgorithmName.SHA256, 100_000));
        WritePrivate(keyPem, System.Text.Encoding.ASCII.GetBytes(keyText + "\n"));
        return [pfx, pem, keyPem];
    }

    /// <summary>Loads a PFX written by <see cref="Write"/>: the certificate with its key (the first one with a key).</summary>
    public static X509Certificate2 LoadPfx(string path, string? password) =>
        X509CertificateLoader.LoadPkcs12CollectionFromFile(path, password, X509KeyStorageFlags.Exportable).First(c => c.HasPrivateKey);

    private static void WritePrivate(string path, byte[] bytes)
    {
        File.Delete(path);
        var options = new FileStreamOptions { Mode = FileMode.CreateNew, Access = FileAccess.Write };
        if (!OperatingSystem.IsWindows())
            options.UnixCreateMode = UnixFileMode.UserRead | UnixFileMode.UserWrite;
        using var f = new FileStream(path, options);
        f.Write(bytes);
    }
}
