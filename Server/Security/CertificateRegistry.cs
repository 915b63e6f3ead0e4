using System.Collections.Frozen;
using System.Security.Cryptography.X509Certificates;
using RavenLite.Server.Configuration;
using RavenLite.Storage;

namespace RavenLite.Server.Security;

/// <summary>
/// The registered client certificates, kept in the server's own storage environment (<c>{DataDir}/System/storage</c>,
/// tree <c>Certificates</c>: upper-case thumbprint → the <see cref="CertificateDefinition"/> as JSON; docs/security.md),
/// plus the well-known admin thumbprints of the settings. Lookups read an immutable snapshot (one per change), so the
/// per-request check takes no lock. Opened only on a secured server.
/// </summary>
public sealed class CertificateRegistry : IDisposable
{
    private const string TreeName = "Certificates";
    private readonly StorageEnvironment _storage;
    private readonly FrozenSet<string> _wellKnown;
    private readonly ServerCertificate _server;
    private readonly object _writeLock = new();
    private volatile Snapshot _snapshot;

    private sealed record Snapshot(FrozenDictionary<string, CertificateDefinition> ByThumbprint, X509Certificate2Collection Issuers);

    /// <summary>Opens (creating) the system storage and reads the registered certificates.</summary>
    public CertificateRegistry(ServerOptions options, ServerCertificate server)
    {
        _server = server;
        _wellKnown = options.Security.WellKnownAdminThumbprints.ToFrozenSet(StringComparer.Ordinal);
        string dir = Path.Combine(Path.GetFullPath(options.DataDir), "System", "storage");
        Directory.CreateDirectory(dir);
        _storage = StorageEnvironment.Open(new StorageOptions { Directory = dir, Durability = DurabilityMode.Sync });
        _snapshot = Read();
        server.Changed += () =>
        {
            _snapshot = _snapshot with { Issuers = IssuersOf(_snapshot.ByThumbprint.Values) };
            Changed?.Invoke();
        };
    }

    /// <summary>Raised after a registration, an edit, a deletion or a server certificate reload.</summary>
    public event Action? Changed;

    /// <summary>The issuers a chained client certificate may chain to: those in the server certificate's file and those registered with client certificates.</summary>
    public X509Certificate2Collection TrustedIssuers => _snapshot.Issuers;

    /// <summary>The well-known admin thumbprints (from <c>Security:WellKnownAdminCertificates</c>).</summary>
    public IReadOnlyCollection<string> WellKnown => _wellKnown;

    /// <summary>Every registered certificate, by name.</summary>
    public IReadOnlyList<CertificateDefinition> All => _snapshot.ByThumbprint.Values.OrderBy(d => d.Name, StringComparer.OrdinalIgnoreCase).ThenBy(d => d.Thumbprint, StringComparer.Ordinal).ToList();

    /// <summary>
    /// The definition a presented certificate's thumbprint maps to: registered; well-known (ClusterAdmin); this server's
    /// own certificate (ClusterAdmin: the nodes of a secured cluster share it, and call each other with it); else null.
    /// </summary>
    public CertificateDefinition? Find(string thumbprint)
    {
        if (_snapshot.ByThumbprint.TryGetValue(thumbprint, out var d))
            return d;
        if (_wellKnown.Contains(thumbprint))
            return new CertificateDefinition { Name = "Well-known admin certificate", Thumbprint = thumbprint, Certificate = "", SecurityClearance = SecurityClearance.ClusterAdmin };
        return string.Equals(thumbprint, _server.Current.Thumbprint, StringComparison.OrdinalIgnoreCase)
            ? new CertificateDefinition { Name = "This server's certificate (a node of its cluster)", Thumbprint = thumbprint, Certificate = "", SecurityClearance = SecurityClearance.ClusterAdmin }
            : null;
    }

    /// <summary>
    /// The definition of a presented certificate (<see cref="Find(string)"/>), or — for one no thumbprint names — a node
    /// of this cluster when it has this server certificate's subject and issuer (not self-signed): a replacement of the
    /// server certificate (<c>replace-cluster-cert</c>) reaches the nodes one after another, and until the last has it
    /// they present different ones. The caller has checked the presented certificate's chain to a trusted issuer.
    /// </summary>
    public CertificateDefinition? Find(X509Certificate2 presented)
    {
        ArgumentNullException.ThrowIfNull(presented);
        if (Find(presented.Thumbprint) is { } known)
            return known;
        var own = _server.Current;
        bool renewal = own.SubjectName.RawData.AsSpan().SequenceEqual(presented.SubjectName.RawData)
            && own.IssuerName.RawData.AsSpan().SequenceEqual(presented.IssuerName.RawData)
            && !own.SubjectName.RawData.AsSpan().SequenceEqual(own.IssuerName.RawData);
        return renewal
            ? new CertificateDefinition { Name = "A certificate of this server's identity (a node of its cluster)", Thumbprint = presented.Thumbprint, Certificate = "", SecurityClearance = SecurityClearance.ClusterAdmin }
            : null;
    }

    /// <summary>The registered certificate with this thumbprint (well-known ones are not registered).</summary>
    public CertificateDefinition? Registered(string thumbprint) => _snapshot.ByThumbprint.GetValueOrDefault(SecurityOptions.NormalizeThumbprint(thumbprint));

    /// <summary>Stores (adds or replaces) a definition; durable when it returns.</summary>
    public void Put(CertificateDefinition definition)
    {
        lock (_writeLock)
        {
            using (var tx = _storage.WriteTransaction())
            {
                tx.CreateTree(TreeName).Put(Encoding.ASCII.GetBytes(definition.Thumbprint), JsonSerializer.SerializeToUtf8Bytes(definition));
                tx.Commit();
            }
            _snapshot = Read();
        }
        Changed?.Invoke();
    }

    /// <summary>Removes a registration; false when there was none.</summary>
    public bool Delete(string thumbprint)
    {
        bool deleted;
        lock (_writeLock)
        {
            using (var tx = _storage.WriteTransaction())
            {
                deleted = tx.CreateTree(TreeName).Delete(Encoding.ASCII.GetBytes(SecurityOptions.NormalizeThumbprint(thumbprint)));
                tx.Commit();
            }
            _snapshot = Read();
        }
        Changed?.Invoke();
        return deleted;
    }

    private Snapshot Read()
    {
        var map = new Dictionary<string, CertificateDefinition>(StringComparer.Ordinal);
        using (var tx = _storage.ReadTransaction())
        {
            if (tx.ReadTree(TreeName) is { } tree)
            {
                var cursor = tree.CreateCursor();
                for (bool ok = cursor.SeekToFirst(); ok; ok = cursor.MoveNext())
                {
                    var d = JsonSerializer.Deserialize<CertificateDefinition>(cursor.Value)!;
                    map[d.Thumbprint] = d with { Permissions = new Dictionary<string, DatabaseAccess>(d.Permissions, StringComparer.OrdinalIgnoreCase) };
                }
            }
        }
        return new Snapshot(map.ToFrozenDictionary(StringComparer.Ordinal), IssuersOf(map.Values));
    }

    private X509Certificate2Collection IssuersOf(IEnumerable<CertificateDefinition> definitions)
    {
        var issuers = new X509Certificate2Collection();
        var seen = new HashSet<string>(StringComparer.Ordinal);
        foreach (var c in _server.Issuers)
            if (seen.Add(c.Thumbprint))
                issuers.Add(c);
        foreach (var d in definitions)
            foreach (string b64 in d.Issuers)
            {
                var c = X509CertificateLoader.LoadCertificate(Convert.FromBase64String(b64));
                if (seen.Add(c.Thumbprint))
                    issuers.Add(c);
            }
        return issuers;
    }

    /// <inheritdoc />
    public void Dispose() => _storage.Dispose();
}
