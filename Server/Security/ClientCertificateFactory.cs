using System.IO.Compression;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace RavenLite.Server.Security;

/// <summary>
/// Makes a client certificate for <c>POST /admin/certificates</c> (RavenDB's <c>CreateClientCertificateOperation</c>): a
/// self-signed RSA 2048 certificate for client authentication, valid for five years, answered as a zip of
/// <c>{name}.pfx</c> (with the given password, or none), <c>{name}.crt</c> and <c>{name}.key</c> (PEM), as RavenDB's is.
/// A self-signed certificate is its own trust anchor here (<see cref="CertificateTrust"/>), so the server needs no CA.
/// </summary>
public static class ClientCertificateFactory
{
    /// <summary>The certificate (with its private key) and the zip the client gets.</summary>
    public static (X509Certificate2 Certificate, byte[] Zip) Create(string name, string? password)
    {
        using var key = RSA.Create(2048);
        var request = new CertificateRequest(new X500DistinguishedName("CN=" + name.Replace(",", "\\,", StringComparison.Ordinal)), key, HashAlgorithmName.SHA256, RSASignaturePadding.Pkcs1);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(false, false, 0, true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.DigitalSignature | X509KeyUsageFlags.KeyEncipherment, true));
        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([new Oid("1.3.6.1.5.5.7.3.2")], false));
        var now = DateTimeOffset.UtcNow;
        using var created = request.CreateSelfSigned(now.AddDays(-1), now.AddYears(5));
        byte[] pfx = created.Export(X509ContentType.Pkcs12, password);
        var certificate = X509CertificateLoader.LoadPkcs12(pfx, password, X509KeyStorageFlags.Exportable);
        string file = string.Concat(name.Select(c => char.IsLetterOrDigit(c) || c is '-' or '_' or '.' ? c : '_'));
        using var zip = new MemoryStream();
        using (var archive = new ZipArchive(zip, ZipArchiveMode.Create, leaveOpen: true))
        {
            Add(archive, file + ".pfx", pfx);
            Add(archive, file + ".crt", Encoding.ASCII.GetBytes(certificate.ExportCertificatePem()));
            Add(archive, file + ".key", Encoding.ASCII.GetBytes(key.ExportPkcs8PrivateKeyPem()));
        }
        return (certificate, zip.ToArray());
    }

    private static void Add(ZipArchive archive, string name, byte[] content)
    {
        using var entry = archive.CreateEntry(name).Open();
        entry.Write(content);
    }
}
