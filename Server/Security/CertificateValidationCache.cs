using System.Collections.Concurrent;
using System.Security.Cryptography.X509Certificates;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Authentication.Certificate;

namespace RavenLite.Server.Security;

/// <summary>
/// Certificate authentication results kept per certificate for two minutes (sliding), so a keep-alive client's
/// requests skip the chain build — and forgotten whenever the registry changes: a certificate refused a moment ago is
/// accepted as soon as its issuer is registered (and one whose issuer was removed is refused), not two minutes later.
/// </summary>
public sealed class CertificateValidationCache : ICertificateValidationCache
{
    private static readonly TimeSpan Expiration = TimeSpan.FromMinutes(2);
    private readonly ConcurrentDictionary<string, (AuthenticateResult Result, DateTime Until)> _results = new(StringComparer.Ordinal);

    public CertificateValidationCache(CertificateRegistry registry)
    {
        ArgumentNullException.ThrowIfNull(registry);
        registry.Changed += _results.Clear;
    }

    /// <inheritdoc />
    public AuthenticateResult? Get(HttpContext context, X509Certificate2 certificate)
    {
        ArgumentNullException.ThrowIfNull(certificate);
        string key = certificate.Thumbprint;
        if (!_results.TryGetValue(key, out var entry))
            return null;
        if (entry.Until < DateTime.UtcNow)
        {
            _results.TryRemove(key, out _);
            return null;
        }
        _results[key] = (entry.Result, DateTime.UtcNow + Expiration);
        return entry.Result;
    }

    /// <inheritdoc />
    public void Put(HttpContext context, X509Certificate2 certificate, AuthenticateResult result)
    {
        ArgumentNullException.ThrowIfNull(certificate);
        if (_results.Count > 10_000)
            _results.Clear(); // bounded: many distinct certificates only cost chain builds
        _results[certificate.Thumbprint] = (result, DateTime.UtcNow + Expiration);
    }
}
