using System.Security.Claims;
using System.Security.Cryptography.X509Certificates;
using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.Authorization.Policy;
using RavenLite.Server.Http;

namespace RavenLite.Server.Security;

/// <summary>
/// The one authorization rule of a secured server: a route's <see cref="RequiresAccessAttribute"/> against the caller's
/// registered certificate (docs/security.md has the table). Runs as ASP.NET Core's fallback authorization policy for
/// every request, and for each inner request of a multi-get. Answers 401 without a client certificate and 403 (with a
/// message naming what is missing) for a certificate that is refused, unknown or insufficient.
/// </summary>
public sealed class AccessPolicy(CertificateRegistry registry)
{
    /// <summary>The items key where a failed certificate validation leaves its reason.</summary>
    internal const string FailureItem = "RavenLite.CertificateFailure";

    /// <summary>A refusal: the status and the message.</summary>
    public sealed record Denial(int Status, string Message);

    /// <summary>The route's rule (null: the route has none, which is refused).</summary>
    public static Access? RuleOf(Endpoint? endpoint) => endpoint?.Metadata.GetMetadata<RequiresAccessAttribute>()?.Access;

    /// <summary>Null when <paramref name="context"/>'s caller may run <paramref name="endpoint"/>, else why not.</summary>
    public Denial? Check(HttpContext context, Endpoint? endpoint, RouteValueDictionary routeValues)
    {
        if (endpoint == null)
            return null; // nothing will run: the request ends unanswered by any handler (404)
        if (RuleOf(endpoint) is not { } access)
            return new Denial(403, $"The route {context.Request.Method} {context.Request.Path} has no access rule, so it is refused on a secured server.");
        if (access == Access.Anonymous)
            return null;
        string? thumbprint = context.User.FindFirst(ClaimTypes.Thumbprint)?.Value;
        if (thumbprint == null)
        {
            var presented = context.Connection.ClientCertificate;
            if (presented == null)
                return new Denial(401, "This server requires a client certificate for authentication, and the request came without one.");
            string why = context.Items[FailureItem] as string ?? "it failed validation";
            return new Denial(403, $"The client certificate {presented.Subject} ({presented.Thumbprint}) was refused: {why}.");
        }
        var cert = context.Connection.ClientCertificate is { } client ? registry.Find(client) : registry.Find(thumbprint);
        if (cert == null)
            return NotRegistered(context.User.FindFirst(ClaimTypes.X500DistinguishedName)?.Value, thumbprint);
        string? database = routeValues["db"] as string ?? context.Request.Query["name"].FirstOrDefault();
        // The route's description is only built for a refusal: a granted request formats nothing.
        return Decide(cert, access, database, context, static c => $"{c.Request.Method} {c.Request.Path}");
    }

    /// <summary>
    /// The rule for a connection outside HTTP (the subscription TCP port): the same validation as the certificate
    /// authentication handler (validity period, client-authentication use, chain to a trusted issuer unless self-signed),
    /// then the same decision as for a route with <paramref name="access"/>.
    /// </summary>
    public Denial? CheckConnection(X509Certificate2? certificate, Access access, string? database, string what)
    {
        if (certificate == null)
            return new Denial(401, "This server requires a client certificate for authentication, and the connection came without one.");
        if (!CertificateTrust.Chains(certificate, registry.TrustedIssuers, forClientAuthentication: true))
            return new Denial(403, $"The client certificate {certificate.Subject} ({certificate.Thumbprint}) was refused: {SecurityHost.Describe(certificate)}.");
        var cert = registry.Find(certificate);
        if (cert == null)
            return NotRegistered(certificate.Subject, certificate.Thumbprint);
        return Decide(cert, access, database, what, static w => w);
    }

    private static Denial NotRegistered(string? subject, string thumbprint) =>
        new(403, $"The client certificate {subject} ({thumbprint}) is not registered on this server.");

    private static Denial? Decide<TState>(CertificateDefinition cert, Access access, string? database, TState state, Func<TState, string> describe)
    {
        switch (access)
        {
            case Access.Anonymous:
            case Access.ValidUser:
                return null;
            case Access.Operator:
                return cert.SecurityClearance is SecurityClearance.ClusterAdmin or SecurityClearance.Operator ? null
                    : Refuse("it needs Operator or ClusterAdmin clearance.");
            case Access.ClusterAdmin:
                return cert.SecurityClearance == SecurityClearance.ClusterAdmin ? null
                    : Refuse("it needs ClusterAdmin clearance.");
        }
        if (string.IsNullOrEmpty(database))
            return new Denial(400, $"{describe(state)} names no database.");
        var needed = access switch
        {
            Access.DatabaseRead => DatabaseAccess.Read,
            Access.DatabaseReadWrite => DatabaseAccess.ReadWrite,
            _ => DatabaseAccess.Admin,
        };
        var has = cert.AccessTo(database);
        if (has == null)
            return new Denial(403, $"{Who()} has no access to database '{database}'.");
        return has >= needed ? null
            : new Denial(403, $"{Who()} has {has} access to database '{database}'; {describe(state)} needs {needed}.");

        string Who() => $"Certificate '{cert.Name}' ({cert.Thumbprint}, clearance {cert.SecurityClearance})";
        Denial Refuse(string need) => new(403, $"{Who()} cannot use {describe(state)}: {need}");
    }

    /// <summary>True when the caller has any access to <paramref name="database"/> (lists show only those).</summary>
    public bool CanSee(HttpContext context, string database) =>
        context.User.FindFirst(ClaimTypes.Thumbprint)?.Value is { } t && registry.Find(t)?.AccessTo(database) != null;

    /// <summary>The requirement of the fallback policy.</summary>
    internal sealed class Requirement : IAuthorizationRequirement;

    /// <summary>ASP.NET Core's side: evaluates <see cref="Check"/> for the endpoint being authorized.</summary>
    internal sealed class Handler(AccessPolicy policy) : AuthorizationHandler<Requirement, HttpContext>
    {
        protected override Task HandleRequirementAsync(AuthorizationHandlerContext context, Requirement requirement, HttpContext resource)
        {
            if (policy.Check(resource, resource.GetEndpoint(), resource.Request.RouteValues) is { } denial)
                context.Fail(new Reason(this, denial));
            else
                context.Succeed(requirement);
            return Task.CompletedTask;
        }
    }

    private sealed class Reason(IAuthorizationHandler handler, Denial denial) : AuthorizationFailureReason(handler, denial.Message)
    {
        public Denial Denial { get; } = denial;
    }

    /// <summary>Writes a refusal as RavenDB's JSON error (AuthorizationException / AuthenticationException).</summary>
    internal sealed class ResultHandler(AccessPolicy access) : IAuthorizationMiddlewareResultHandler
    {
        public Task HandleAsync(RequestDelegate next, HttpContext context, AuthorizationPolicy policy, PolicyAuthorizationResult authorizeResult)
        {
            if (authorizeResult.Succeeded)
                return next(context);
            // A challenge (no authenticated user) carries no failure reasons: ask the policy again for its answer.
            var denial = authorizeResult.AuthorizationFailure?.FailureReasons.OfType<Reason>().FirstOrDefault()?.Denial
                ?? access.Check(context, context.GetEndpoint(), context.Request.RouteValues)
                ?? new Denial(403, "Access denied.");
            return WriteAsync(context, denial);
        }
    }

    /// <summary>Answers <paramref name="denial"/>.</summary>
    public static Task WriteAsync(HttpContext context, Denial denial) =>
        ErrorHandlingMiddleware.WriteErrorAsync(context, denial.Status,
            denial.Status == 401 ? RavenExceptionTypes.Authentication : denial.Status == 403 ? RavenExceptionTypes.Authorization : RavenExceptionTypes.BadRequest,
            denial.Message, denial.Message);
}
