namespace RavenLite.Server.Errors;

/// <summary>
/// An expected version did not match (a change vector, a compare-exchange index, an atomic guard); nothing was
/// written. <paramref name="clientType"/> names the RavenDB exception of the kind of version.
/// </summary>
public sealed class ConcurrencyException(string message, string clientType = RavenExceptionTypes.Concurrency)
    : DomainException(clientType, message);
