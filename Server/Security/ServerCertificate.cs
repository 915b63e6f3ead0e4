using System.Net.Security;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using RavenLite.Server.Configuration;
using RavenLite.Server.Logging;

namespace RavenLite.Server.Security;

/// <summary>
/// The server certificate of a secured server: loaded from <see cref="CertificateSettings"/> at start-up (a file that
/// cannot be loaded stops the start with the reason) and again whenever its files change, without a restart: new
/// connections get the new certificate, a file that no longer loads keeps the old one and logs why. The other
/// certificates in the file (its issuers) are trusted as issuers of client certificates. Passwords are never logged.
/// </summary>
public sealed class ServerCertificate : IDisposable
{
    private readonly CertificateSettings _settings;
    private readonly List<FileSystemWatcher> _watchers = [];
    private readonly Timer _debounce;
    private volatile Loaded _current;

    private sealed record Loaded(X509Certificate2 Certificate, X509Certificate2Collection Issuers, SslStreamCertificateContext Context);

    /// <summary>Loads the certificate; throws <see cref="InvalidOperationException"/> naming the file and the reason when it cannot.</summary>
    public ServerCertificate(CertificateSettings settings)
    {
        _settings = settings;
        _current = Load(settings);
        _debounce = new Timer(_ => Reload());
        foreach (string? path in new[] { settings.Path, settings.KeyPath }.Distinct())
        {
            if (string.IsNullOrEmpty(path))
                continue;
            string full = System.IO.Path.GetFullPath(path);
            var watcher = new FileSystemWatcher(System.IO.Path.GetDirectoryName(full)!, System.IO.Path.GetFileName(full))
            {
                NotifyFilter = NotifyFilters.LastWrite | NotifyFilters.FileName | NotifyFilters.Size | NotifyFilters.CreationTime,
            };
            watcher.Changed += (_, _) => _debounce.Change(300, Timeout.Infinite);
            watcher.Created += (_, _) => _debounce.Change(300, Timeout.Infinite);
            watcher.Renamed += (_, _) => _debounce.Change(300, Timeout.Infinite);
            watcher.EnableRaisingEvents = true;
            _watchers.Add(watcher);
        }
    }

    /// <summary>Where reloads are logged (set once the host's logging exists; loading happens before, to fail the start early).</summary>
    public ILogger Logger { get; set; } = Microsoft.Extensions.Logging.Abstractions.NullLogger.Instance;

    /// <summary>The certificate the settings name, loaded once without watching its files (the health probe's check); throws as the constructor does.</summary>
    public static X509Certificate2 LoadCurrent(CertificateSettings settings) => Load(settings).Certificate;

    /// <summary>The certificate new connections are given.</summary>
    public X509Certificate2 Current => _current.Certificate;

    /// <summary>The certificate with its issuers, for TLS listeners other than Kestrel's (the subscription port).</summary>
    public SslStreamCertificateContext Context => _current.Context;

    /// <summary>The issuers that came with the certificate (trusted as issuers of client certificates).</summary>
    public X509Certificate2Collection Issuers => _current.Issuers;

    /// <summary>Raised after a reload changed the certificate.</summary>
    public event Action? Changed;

    /// <summary>Loads the files again now (the file watcher calls this); false when they do not load (the old certificate stays).</summary>
    public bool Reload()
    {
        try
        {
            var loaded = Load(_settings);
            if (loaded.Certificate.Thumbprint == _current.Certificate.Thumbprint)
                return true;
            _current = loaded;
            Log.CertificateReloaded(Logger, loaded.Certificate.Subject, loaded.Certificate.Thumbprint, loaded.Certificate.NotAfter);
            Changed?.Invoke();
            return true;
        }
        catch (InvalidOperationException e)
        {
            Log.CertificateReloadFailed(Logger, e.Message);
            return false;
        }
    }

    /// <summary>
    /// Replaces the server's certificate with <paramref name="pfx"/> (RavenDB's <c>replace-cluster-cert</c>): it must load
    /// with its private key and not be expired (else a 400 "Unable to load the provided certificate"); it is written over
    /// the configured files — a PFX under the configured password, or PEM certificate and key — and loaded as a file
    /// change would be, so new connections get it without a restart.
    /// </summary>
    public void Replace(byte[] pfx, string? password)
    {
        var (all, leaf) = Loadable(pfx, password);
        if (string.Equals(leaf.Thumbprint, Current.Thumbprint, StringComparison.OrdinalIgnoreCase))
            return; // in use already (a node sharing the files with another may have reloaded it from their change)
        string path = _settings.Path!;
        if (IsPem(path))
        {
            var certificates = string.Concat(new[] { leaf }.Concat(all.Where(c => !ReferenceEquals(c, leaf))).Select(c => c.ExportCertificatePem() + "\n"));
            using var key = (AsymmetricAlgorithm?)leaf.GetRSAPrivateKey() ?? leaf.GetECDsaPrivateKey() ?? throw new BadRequestException("Unable to load the provided certificate: its key is neither RSA nor ECDSA.");
            string keyPem = string.IsNullOrEmpty(_settings.Password) ? key.ExportPkcs8PrivateKeyPem()
                : key.ExportEncryptedPkcs8PrivateKeyPem(_settings.Password, new PbeParameters(PbeEncryptionAlgorithm.Aes256Cbc, HashAlgorithmName.SHA256, 100_000));
            if (_settings.KeyPath is { } keyPath && keyPath != path)
            {
                WriteAtomically(keyPath, Encoding.ASCII.GetBytes(keyPem));
                WriteAtomically(path, Encoding.ASCII.GetBytes(certificates));
            }
            else
                WriteAtomically(path, Encoding.ASCII.GetBytes(certificates + keyPem));
        }
        else
            WriteAtomically(path, all.Export(X509ContentType.Pkcs12, _settings.Password)!);
        if (!Reload())
            throw new BadRequestException("Unable to load the provided certificate once written to Security:Certificate:Path; the previous one stays in use.");
    }

    /// <summary>
    /// The certificates of <paramref name="pfx"/> and the one with a private key, checked as a replacement must be:
    /// loadable, with its key, not expired — else a 400 "Unable to load the provided certificate" (RavenDB's words).
    /// </summary>
    public static (X509Certificate2Collection All, X509Certificate2 Leaf) Loadable(byte[] pfx, string? password)
    {
        X509Certificate2Collection all;
        try
        {
            all = X509CertificateLoader.LoadPkcs12Collection(pfx, password, X509KeyStorageFlags.Exportable | X509KeyStorageFlags.EphemeralKeySet);
        }
        catch (CryptographicException e)
        {
            throw new BadRequestException($"Unable to load the provided certificate: {e.Message}");
        }
        var leaf = all.FirstOrDefault(c => c.HasPrivateKey) ?? throw new BadRequestException("Unable to load the provided certificate: it holds no certificate with a private key.");
        if (leaf.NotAfter < DateTime.Now)
            throw new BadRequestException($"Unable to load the provided certificate: {leaf.Subject} expired on {leaf.NotAfter:u}.");
        return (all, leaf);
    }

    private static void WriteAtomically(string path, byte[] content)
    {
        // Its own temporary file: nodes on one machine may share the certificate's files and replace them at once.
        string tmp = $"{path}.{Environment.ProcessId}.{Guid.NewGuid():N}.tmp";
        using (var f = new FileStream(tmp, FileMode.Create, FileAccess.Write))
        {
            f.Write(content);
            f.Flush(flushToDisk: true);
        }
        File.Move(tmp, path, overwrite: true);
    }

    private static Loaded Load(CertificateSettings settings)
    {
        string path = settings.Path ?? throw new InvalidOperationException("Security:Certificate:Path is not set.");
        foreach (string? file in new[] { path, settings.KeyPath })
            if (file != null && !File.Exists(file))
                throw new InvalidOperationException($"Security:Certificate:{(file == path ? "Path" : "KeyPath")} '{file}' does not exist (full path {System.IO.Path.GetFullPath(file)}).");
        try
        {
            X509Certificate2 leaf;
            var issuers = new X509Certificate2Collection();
            if (IsPem(path))
            {
                string keyPath = settings.KeyPath ?? path;
                leaf = string.IsNullOrEmpty(settings.Password)
                    ? X509Certificate2.CreateFromPemFile(path, keyPath)
                    : X509Certificate2.CreateFromEncryptedPemFile(path, settings.Password, keyPath);
                var all = new X509Certificate2Collection();
                all.ImportFromPemFile(path);
                foreach (var c in all)
                    if (c.Thumbprint != leaf.Thumbprint)
                        issuers.Add(c);
            }
            else
            {
                var all = X509CertificateLoader.LoadPkcs12CollectionFromFile(path, settings.Password, X509KeyStorageFlags.EphemeralKeySet);
                leaf = all.FirstOrDefault(c => c.HasPrivateKey)
                    ?? throw new InvalidOperationException($"Security:Certificate:Path '{path}' holds no certificate with a private key.");
                foreach (var c in all)
                    if (!ReferenceEquals(c, leaf))
                        issuers.Add(c);
            }
            if (!leaf.HasPrivateKey)
                throw new InvalidOperationException($"Security:Certificate:Path '{path}': the certificate has no private key (set Security:Certificate:KeyPath to its PEM key).");
            if (leaf.NotAfter < DateTime.Now)
                throw new InvalidOperationException($"Security:Certificate:Path '{path}': the certificate {leaf.Subject} expired on {leaf.NotAfter:u}.");
            var context = SslStreamCertificateContext.Create(leaf, issuers, offline: true);
            return new Loaded(leaf, issuers, context);
        }
        catch (Exception e) when (e is CryptographicException or IOException or UnauthorizedAccessException or ArgumentException)
        {
            // The exception's message names the file and what is wrong; it never holds the password.
            throw new InvalidOperationException($"Security:Certificate:Path '{path}' cannot be loaded: {e.Message}", e);
        }
    }

    private static bool IsPem(string path)
    {
        string ext = System.IO.Path.GetExtension(path).ToLowerInvariant();
        if (ext is ".pfx" or ".p12")
            return false;
        if (ext is ".pem" or ".crt" or ".cer")
            return true;
        using var f = File.OpenRead(path);
        Span<byte> head = stackalloc byte[11];
        int n = f.ReadAtLeast(head, head.Length, throwOnEndOfStream: false);
        return head[..n].SequenceEqual("-----BEGIN "u8);
    }

    /// <inheritdoc />
    public void Dispose()
    {
        foreach (var w in _watchers)
            w.Dispose();
        _debounce.Dispose();
    }
}
