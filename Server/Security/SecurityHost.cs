using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using Microsoft.AspNetCore.Authentication.Certificate;
using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.DataProtection;
using Microsoft.AspNetCore.Server.Kestrel.Https;
using Microsoft.Extensions.Options;
using RavenLite.Server.Configuration;

namespace RavenLite.Server.Security;

/// <summary>
/// Wires a secured server (docs/security.md): Kestrel serves HTTPS only (TLS 1.2+) with <see cref="ServerCertificate"/>,
/// asks every connection for a client certificate, ASP.NET Core's certificate authentication validates it (validity
/// period, chain to a trusted issuer unless self-signed) and <see cref="AccessPolicy"/> authorizes every request.
/// </summary>
public static class SecurityHost
{
    /// <summary>Registers the services; loads the server certificate now so that a bad one stops the start.</summary>
    public static void AddServices(WebApplicationBuilder builder, ServerOptions options)
    {
        if (!options.Security.Secured)
            return;
        // Loaded once, now: a certificate that does not load stops the start with the reason. Registered through a
        // factory so that the container disposes it (its file watchers) with the host.
        var certificate = new ServerCertificate(options.Security.Certificate);
        var services = builder.Services;
        services.AddSingleton(_ => certificate);
        services.AddSingleton<CertificateRegistry>();
        services.AddSingleton<ClusterCertificates>();
        services.AddSingleton<Cluster.IServerItemFollower>(s => s.GetRequiredService<ClusterCertificates>());
        services.AddSingleton<ClusterServerCertificate>();
        services.AddSingleton<Cluster.IServerItemFollower>(s => s.GetRequiredService<ClusterServerCertificate>());
        services.AddSingleton<AccessPolicy>();
        services.AddSingleton<Replication.IReplicationConnector, SecuredReplicationConnector>();
        services.AddSingleton<Cluster.IRaftTransportSecurity, SecuredRaftTransport>();
        services.AddSingleton<IAuthorizationHandler, AccessPolicy.Handler>();
        services.AddSingleton<IAuthorizationMiddlewareResultHandler, AccessPolicy.ResultHandler>();
        // Authentication brings ASP.NET Core data protection, which RavenLite uses for nothing: keep its keys in memory
        // instead of generating and persisting an unencrypted key ring (and warning about it) at every start.
        services.AddDataProtection().UseEphemeralDataProtectionProvider();
        services.AddAuthentication(CertificateAuthenticationDefaults.AuthenticationScheme)
            .AddCertificate(o =>
            {
                o.AllowedCertificateTypes = CertificateTypes.All;
                o.ChainTrustValidationMode = X509ChainTrustMode.CustomRootTrust;
                o.RevocationMode = X509RevocationMode.NoCheck;
                o.ValidateCertificateUse = true;
                o.ValidateValidityPeriod = true;
                o.Events = new CertificateAuthenticationEvents
                {
                    OnAuthenticationFailed = c =>
                    {
                        c.HttpContext.Items[AccessPolicy.FailureItem] = Describe(c.HttpContext.Connection.ClientCertificate);
                        return Task.CompletedTask;
                    },
                };
            });
        // Validation results are kept per certificate (CertificateValidationCache), until the registry changes. Only
        // authentication is cached; which certificate is registered with what access is read per request.
        services.AddSingleton<ICertificateValidationCache, CertificateValidationCache>();
        // The trusted issuers change with registrations: the handler reads them from its options on every validation.
        services.AddSingleton<IPostConfigureOptions<CertificateAuthenticationOptions>>(s =>
            new PostConfigureOptions<CertificateAuthenticationOptions>(CertificateAuthenticationDefaults.AuthenticationScheme, o =>
            {
                // Roots are trust anchors; intermediates only help the chain build.
                foreach (var issuer in s.GetRequiredService<CertificateRegistry>().TrustedIssuers)
                    (CertificateTrust.IsSelfIssued(issuer) ? o.CustomTrustStore : o.AdditionalChainCertificates).Add(issuer);
            }));
        services.AddAuthorization(o =>
        {
            var policy = new AuthorizationPolicyBuilder().AddRequirements(new AccessPolicy.Requirement()).Build();
            o.DefaultPolicy = policy;
            o.FallbackPolicy = policy;
        });
        builder.WebHost.ConfigureKestrel(k => k.ConfigureHttpsDefaults(h =>
        {
            var certificate = k.ApplicationServices.GetRequiredService<ServerCertificate>();
            h.ServerCertificateSelector = (_, _) => certificate.Current;
            h.SslProtocols = SslProtocols.Tls12 | SslProtocols.Tls13;
            h.ClientCertificateMode = ClientCertificateMode.AllowCertificate; // none: 401 from the policy, not a failed handshake
            h.ClientCertificateValidation = (_, _, _) => true; // judged by the certificate authentication handler, per request
            h.HandshakeTimeout = TimeSpan.FromSeconds(10);
        }));
    }

    /// <summary>Adds authentication and authorization to the pipeline (after the error middleware, before the endpoints).</summary>
    public static void Use(WebApplication app, ServerOptions options)
    {
        if (!options.Security.Secured)
            return;
        app.Services.GetRequiredService<ServerCertificate>().Logger = app.Services.GetRequiredService<ILogger<ServerCertificate>>();
        var registry = app.Services.GetRequiredService<CertificateRegistry>();
        var trust = app.Services.GetRequiredService<IOptionsMonitorCache<CertificateAuthenticationOptions>>();
        // Registrations and certificate reloads change the trusted issuers: the handler's options are rebuilt on next use.
        registry.Changed += () => trust.TryRemove(CertificateAuthenticationDefaults.AuthenticationScheme);
        app.UseAuthentication();
        app.UseAuthorization();
    }

    /// <summary>Why a presented client certificate failed validation, in words.</summary>
    internal static string Describe(X509Certificate2? certificate)
    {
        if (certificate == null)
            return "no certificate";
        var now = DateTime.Now;
        if (certificate.NotAfter < now)
            return $"it expired on {certificate.NotAfter.ToUniversalTime():u}";
        if (certificate.NotBefore > now)
            return $"it is not valid before {certificate.NotBefore.ToUniversalTime():u}";
        return $"it does not chain to an issuer this server trusts (issuer {certificate.Issuer}), or is not meant for client authentication";
    }
}
