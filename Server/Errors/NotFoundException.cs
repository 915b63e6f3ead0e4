namespace RavenLite.Server.Errors;

/// <summary>A named thing (index, subscription, operation, backup...) that does not exist.</summary>
public sealed class NotFoundException(string clientType, string message) : DomainException(clientType, message);
