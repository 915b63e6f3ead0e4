using System.Security.Claims;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using RavenLite.Server.Configuration;
using RavenLite.Server.Formatting;
using RavenLite.Server.Http;
using RavenLite.Server.Logging;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Client certificates of a secured server (docs/security.md), as RavenDB's: register <c>PUT /admin/certificates</c>
/// (<c>{Name, Certificate, SecurityClearance, Permissions, Password}</c>), list or get <c>GET /admin/certificates</c>
/// (<c>?thumbprint=</c>, <c>?name=</c>, <c>?metadataOnly=true</c>, <c>start</c>/<c>pageSize</c>), delete
/// <c>DELETE /admin/certificates?thumbprint=</c>, edit <c>POST /admin/certificates/edit</c>, and
/// <c>GET /certificates/whoami</c>. Registering, editing or deleting a ClusterAdmin certificate takes a ClusterAdmin
/// caller. On an unsecured server they answer 400.
/// </summary>
public static class CertificateEndpoints
{
    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPut("/admin/certificates", Put).Requires(Access.Operator);
        app.MapGet("/admin/certificates", Get).Requires(Access.Operator);
        app.MapDelete("/admin/certificates", Delete).Requires(Access.Operator);
        app.MapPost("/admin/certificates/edit", Edit).Requires(Access.Operator);
        app.MapPost("/admin/certificates", Generate).Requires(Access.Operator);
        app.MapPost("/admin/certificates/replace-cluster-cert", ReplaceServerCertificate).Requires(Access.ClusterAdmin);
        app.MapGet("/certificates/whoami", WhoAmI).Requires(Access.ValidUser);
    }

    private static CertificateRegistry Registry(HttpContext context) =>
        context.RequestServices.GetRequiredService<ServerOptions>().Security.Secured
            ? context.RequestServices.GetRequiredService<CertificateRegistry>()
            : throw new BadRequestException("This server is not secured, so it has no client certificates: set Security:Certificate:Path (docs/security.md).");

    private static CertificateDefinition Caller(HttpContext context, CertificateRegistry registry) =>
        context.User.FindFirst(ClaimTypes.Thumbprint)?.Value is { } t && registry.Find(t) is { } d ? d
            : throw new AccessDeniedException("The caller's certificate is not registered.");

    private static async Task Put(HttpContext context)
    {
        var registry = Registry(context);
        using var body = await RequestBody.ReadJsonAsync(context, "certificate registration").ConfigureAwait(false);
        var root = body.RootElement;
        string name = String(root, "Name") is { Length: > 0 } n ? n : throw new BadRequestException("A certificate registration needs a Name.");
        string data = String(root, "Certificate") is { Length: > 0 } c ? c : throw new BadRequestException("A certificate registration needs the Certificate (base64 DER, base64 PFX or PEM).");
        var clearance = ParseClearance(root);
        var permissions = ParsePermissions(root, clearance);
        var (leaf, issuers) = ParseCertificate(data, String(root, "Password"));
        var now = DateTime.Now;
        if (leaf.NotAfter < now)
            throw new BadRequestException($"Certificate {leaf.Subject} ({leaf.Thumbprint}) expired on {leaf.NotAfter.ToUniversalTime():u}; it cannot be registered.");
        if (!CertificateTrust.Chains(leaf, registry.TrustedIssuers.Concat(issuers), forClientAuthentication: false))
            throw new BadRequestException($"Certificate {leaf.Subject} is issued by {leaf.Issuer}, which this server does not trust: register it together with its issuer's certificate (a PEM bundle, or a PFX with the chain).");
        var caller = Caller(context, registry);
        var existing = registry.Registered(leaf.Thumbprint);
        if ((clearance == SecurityClearance.ClusterAdmin || existing?.SecurityClearance == SecurityClearance.ClusterAdmin) && caller.SecurityClearance != SecurityClearance.ClusterAdmin)
            throw new AccessDeniedException($"Certificate '{caller.Name}' has clearance {caller.SecurityClearance}: only a ClusterAdmin may register a ClusterAdmin certificate.");
        var definition = CertificateDefinition.Of(leaf, name, clearance, permissions, issuers);
        await context.RequestServices.GetRequiredService<ClusterCertificates>().PutAsync(definition, context.RequestAborted).ConfigureAwait(false);
        Log.CertificateChanged(context.RequestServices.GetRequiredService<ILogger<CertificateRegistry>>(), name, leaf.Thumbprint, "registered", clearance.ToString());
        context.Response.StatusCode = 201;
    }

    /// <summary>
    /// <c>POST /admin/certificates</c> <c>{Name, SecurityClearance, Permissions, Password}</c> (RavenDB's
    /// <c>CreateClientCertificateOperation</c>): a new client certificate, registered with that clearance and those
    /// permissions, answered as a zip (<see cref="ClientCertificateFactory"/>).
    /// </summary>
    private static async Task Generate(HttpContext context)
    {
        var registry = Registry(context);
        using var body = await RequestBody.ReadJsonAsync(context, "client certificate").ConfigureAwait(false);
        var root = body.RootElement;
        string name = String(root, "Name") is { Length: > 0 } n ? n : throw new BadRequestException("A new client certificate needs a Name.");
        var clearance = ParseClearance(root);
        var permissions = ParsePermissions(root, clearance);
        var caller = Caller(context, registry);
        if (clearance == SecurityClearance.ClusterAdmin && caller.SecurityClearance != SecurityClearance.ClusterAdmin)
            throw new AccessDeniedException($"Certificate '{caller.Name}' has clearance {caller.SecurityClearance}: only a ClusterAdmin may create a ClusterAdmin certificate.");
        var (certificate, zip) = ClientCertificateFactory.Create(name, String(root, "Password"));
        using (certificate)
        {
            await context.RequestServices.GetRequiredService<ClusterCertificates>().PutAsync(CertificateDefinition.Of(certificate, name, clearance, permissions, []), context.RequestAborted).ConfigureAwait(false);
            Log.CertificateChanged(context.RequestServices.GetRequiredService<ILogger<CertificateRegistry>>(), name, certificate.Thumbprint, "created", clearance.ToString());
        }
        context.Response.StatusCode = 201;
        context.Response.ContentType = "application/octet-stream";
        context.Response.Headers.ContentDisposition = $"attachment; filename=\"{Uri.EscapeDataString(name)}.zip\"";
        await context.Response.Body.WriteAsync(zip, context.RequestAborted).ConfigureAwait(false);
    }

    /// <summary>
    /// <c>POST /admin/certificates/replace-cluster-cert</c> <c>{Certificate: base64 PFX, Password?}</c> (RavenDB's
    /// <c>ReplaceClusterCertificateOperation</c>): every node's server certificate replaced (<see cref="ClusterServerCertificate"/>), this one's before the answer.
    /// </summary>
    private static async Task ReplaceServerCertificate(HttpContext context)
    {
        _ = Registry(context); // 400 on an unsecured server
        using var body = await RequestBody.ReadJsonAsync(context, "server certificate").ConfigureAwait(false);
        string data = String(body.RootElement, "Certificate") is { Length: > 0 } c ? c : throw new BadRequestException("Unable to load the provided certificate: the body needs Certificate (base64 PFX).");
        byte[] pfx;
        try
        {
            pfx = Convert.FromBase64String(data);
        }
        catch (FormatException)
        {
            throw new BadRequestException("Unable to load the provided certificate: Certificate is not base64.");
        }
        await context.RequestServices.GetRequiredService<ClusterServerCertificate>().ReplaceAsync(pfx, String(body.RootElement, "Password"), context.RequestAborted).ConfigureAwait(false);
        context.Response.StatusCode = 200;
    }

    private static async Task Edit(HttpContext context)
    {
        var registry = Registry(context);
        using var body = await RequestBody.ReadJsonAsync(context, "certificate edit").ConfigureAwait(false);
        var root = body.RootElement;
        string thumbprint = String(root, "Thumbprint") is { Length: > 0 } t ? SecurityOptions.NormalizeThumbprint(t) : throw new BadRequestException("An edit needs the certificate's Thumbprint.");
        var existing = registry.Registered(thumbprint) ?? throw new NotFoundException(RavenExceptionTypes.RavenException, $"No certificate with thumbprint {thumbprint} is registered.");
        var clearance = ParseClearance(root);
        var caller = Caller(context, registry);
        if ((clearance == SecurityClearance.ClusterAdmin || existing.SecurityClearance == SecurityClearance.ClusterAdmin) && caller.SecurityClearance != SecurityClearance.ClusterAdmin)
            throw new AccessDeniedException($"Certificate '{caller.Name}' has clearance {caller.SecurityClearance}: only a ClusterAdmin may change a ClusterAdmin certificate or grant that clearance.");
        var edited = existing with
        {
            Name = String(root, "Name") is { Length: > 0 } n ? n : existing.Name,
            SecurityClearance = clearance,
            Permissions = ParsePermissions(root, clearance),
        };
        await context.RequestServices.GetRequiredService<ClusterCertificates>().PutAsync(edited, context.RequestAborted).ConfigureAwait(false);
        Log.CertificateChanged(context.RequestServices.GetRequiredService<ILogger<CertificateRegistry>>(), edited.Name, thumbprint, "edited", clearance.ToString());
        context.Response.StatusCode = 204;
    }

    private static async Task Delete(HttpContext context)
    {
        var registry = Registry(context);
        string thumbprint = RequestParsing.Query(context.Request, "thumbprint") is { Length: > 0 } t ? SecurityOptions.NormalizeThumbprint(t) : throw new BadRequestException("DELETE /admin/certificates needs ?thumbprint=.");
        var existing = registry.Registered(thumbprint) ?? throw new NotFoundException(RavenExceptionTypes.RavenException, $"No certificate with thumbprint {thumbprint} is registered.");
        var caller = Caller(context, registry);
        if (existing.SecurityClearance == SecurityClearance.ClusterAdmin && caller.SecurityClearance != SecurityClearance.ClusterAdmin)
            throw new AccessDeniedException($"Certificate '{caller.Name}' has clearance {caller.SecurityClearance}: only a ClusterAdmin may delete a ClusterAdmin certificate.");
        await context.RequestServices.GetRequiredService<ClusterCertificates>().DeleteAsync(thumbprint, context.RequestAborted).ConfigureAwait(false);
        Log.CertificateChanged(context.RequestServices.GetRequiredService<ILogger<CertificateRegistry>>(), existing.Name, thumbprint, "deleted", existing.SecurityClearance.ToString());
        context.Response.StatusCode = 204;
    }

    private static Task Get(HttpContext context)
    {
        var registry = Registry(context);
        var request = context.Request;
        bool metadataOnly = string.Equals(RequestParsing.Query(request, "metadataOnly"), "true", StringComparison.OrdinalIgnoreCase);
        IEnumerable<CertificateDefinition> list = registry.All;
        if (RequestParsing.Query(request, "thumbprint") is { Length: > 0 } t)
        {
            string thumbprint = SecurityOptions.NormalizeThumbprint(t);
            list = list.Where(d => d.Thumbprint == thumbprint);
        }
        if (RequestParsing.Query(request, "name") is { Length: > 0 } name)
            list = list.Where(d => string.Equals(d.Name, name, StringComparison.OrdinalIgnoreCase));
        int start = RequestParsing.QueryInt(request, "start", 0);
        int pageSize = RequestParsing.QueryInt(request, "pageSize", int.MaxValue);
        var page = list.Skip(start).Take(pageSize).ToList();
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var d in page)
                Write(w, d, includeCertificate: !metadataOnly);
            w.WriteEndArray();
            w.WriteEndObject();
        });
    }

    private static Task WhoAmI(HttpContext context)
    {
        var registry = Registry(context);
        var caller = Caller(context, registry);
        return JsonResponse.WriteAsync(context, 200, w => Write(w, caller, includeCertificate: false));
    }

    private static void Write(Utf8JsonWriter w, CertificateDefinition d, bool includeCertificate)
    {
        w.WriteStartObject();
        w.WriteString("Name", d.Name);
        w.WriteString("Thumbprint", d.Thumbprint);
        if (includeCertificate)
            w.WriteString("Certificate", d.Certificate);
        w.WriteString("SecurityClearance", d.SecurityClearance.ToString());
        w.WriteStartObject("Permissions");
        foreach (var (db, access) in d.Permissions.OrderBy(p => p.Key, StringComparer.OrdinalIgnoreCase))
            w.WriteString(db, access.ToString());
        w.WriteEndObject();
        if (d.NotBefore != default)
            w.WriteString("NotBefore", JsonDates.FormatDate(d.NotBefore));
        else
            w.WriteNull("NotBefore");
        if (d.NotAfter != default)
            w.WriteString("NotAfter", JsonDates.FormatDate(d.NotAfter));
        else
            w.WriteNull("NotAfter");
        w.WriteString("PublicKeyPinningHash", d.PublicKeyPinningHash);
        w.WriteNull("CollectionPrimaryKey");
        w.WriteStartArray("CollectionSecondaryKeys");
        w.WriteEndArray();
        w.WriteEndObject();
    }

    private static string? String(JsonElement root, string name) =>
        root.ValueKind == JsonValueKind.Object && root.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.String ? v.GetString() : null;

    private static SecurityClearance ParseClearance(JsonElement root)
    {
        string value = String(root, "SecurityClearance") ?? "ValidUser";
        return value switch
        {
            "ClusterAdmin" => SecurityClearance.ClusterAdmin,
            "Operator" => SecurityClearance.Operator,
            "ValidUser" => SecurityClearance.ValidUser,
            _ => throw new BadRequestException($"SecurityClearance '{value}' is not one of ClusterAdmin, Operator, ValidUser."),
        };
    }

    private static Dictionary<string, DatabaseAccess> ParsePermissions(JsonElement root, SecurityClearance clearance)
    {
        var permissions = new Dictionary<string, DatabaseAccess>(StringComparer.OrdinalIgnoreCase);
        if (root.TryGetProperty("Permissions", out var p) && p.ValueKind == JsonValueKind.Object)
        {
            foreach (var e in p.EnumerateObject())
            {
                string value = e.Value.ValueKind == JsonValueKind.String ? e.Value.GetString()! : e.Value.GetRawText();
                permissions[e.Name] = value switch
                {
                    "Read" => DatabaseAccess.Read,
                    "ReadWrite" => DatabaseAccess.ReadWrite,
                    "Admin" => DatabaseAccess.Admin,
                    _ => throw new BadRequestException($"Permission '{value}' for database '{e.Name}' is not one of Read, ReadWrite, Admin."),
                };
            }
        }
        else if (root.TryGetProperty("Permissions", out p) && p.ValueKind is not (JsonValueKind.Null or JsonValueKind.Undefined))
        {
            throw new BadRequestException("Permissions must be an object: database name → Read, ReadWrite or Admin.");
        }
        // Operators and ClusterAdmins have every database; their permission map means nothing, as in RavenDB.
        return clearance == SecurityClearance.ValidUser ? permissions : new(StringComparer.OrdinalIgnoreCase);
    }

    /// <summary>Reads the certificate the client sent: PEM text (one or more certificates), base64 of a DER certificate, or base64 of a PFX (its private key is dropped). The first certificate is the client's; the rest are its issuers.</summary>
    private static (X509Certificate2 Leaf, List<X509Certificate2> Issuers) ParseCertificate(string data, string? password)
    {
        var all = new X509Certificate2Collection();
        try
        {
            if (data.Contains("-----BEGIN", StringComparison.Ordinal))
            {
                all.ImportFromPem(data);
            }
            else
            {
                byte[] bytes = Convert.FromBase64String(data.Trim());
                if (X509Certificate2.GetCertContentType(bytes) == X509ContentType.Pkcs12)
                {
                    foreach (var c in X509CertificateLoader.LoadPkcs12Collection(bytes, password, X509KeyStorageFlags.EphemeralKeySet))
                        all.Add(X509CertificateLoader.LoadCertificate(c.RawData)); // public part only
                }
                else
                {
                    all.Add(X509CertificateLoader.LoadCertificate(bytes));
                }
            }
        }
        catch (Exception e) when (e is FormatException or CryptographicException or ArgumentException)
        {
            throw new BadRequestException($"The Certificate cannot be read ({e.Message}): send base64 of the DER certificate, base64 of a PFX (with Password), or PEM.");
        }
        if (all.Count == 0)
            throw new BadRequestException("The Certificate holds no certificate.");
        // In a PFX or bundle the client's certificate is the one that is not a CA.
        var leaf = all.FirstOrDefault(c => c.Extensions.OfType<X509BasicConstraintsExtension>().FirstOrDefault() is not { CertificateAuthority: true }) ?? all[0];
        return (leaf, all.Where(c => !ReferenceEquals(c, leaf)).ToList());
    }
}
