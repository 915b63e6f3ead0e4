using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace RavenLite.Server.Security;

/// <summary>How a client certificate's chain is judged: self-issued certificates are trust anchors, the others serve as intermediates.</summary>
public static class CertificateTrust
{
    private static readonly Oid ClientAuthentication = new("1.3.6.1.5.5.7.3.2");

    /// <summary>True when the certificate names itself as its issuer (a root, or a self-signed client certificate).</summary>
    public static bool IsSelfIssued(X509Certificate2 certificate) =>
        certificate.SubjectName.RawData.AsSpan().SequenceEqual(certificate.IssuerName.RawData);

    /// <summary>
    /// True when <paramref name="certificate"/> chains to a self-issued certificate among <paramref name="issuers"/> (or is
    /// self-signed itself), without revocation checks; with <paramref name="forClientAuthentication"/> it must also be
    /// valid now and meant for client authentication.
    /// </summary>
    public static bool Chains(X509Certificate2 certificate, IEnumerable<X509Certificate2> issuers, bool forClientAuthentication)
    {
        using var chain = new X509Chain();
        chain.ChainPolicy.TrustMode = X509ChainTrustMode.CustomRootTrust;
        chain.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
        if (forClientAuthentication)
            chain.ChainPolicy.ApplicationPolicy.Add(ClientAuthentication);
        else
            chain.ChainPolicy.VerificationFlags = X509VerificationFlags.IgnoreNotTimeValid;
        if (IsSelfIssued(certificate))
            chain.ChainPolicy.CustomTrustStore.Add(certificate);
        foreach (var issuer in issuers)
            (IsSelfIssued(issuer) ? chain.ChainPolicy.CustomTrustStore : chain.ChainPolicy.ExtraStore).Add(issuer);
        return chain.Build(certificate);
    }
}
