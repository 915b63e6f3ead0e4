namespace RavenLite.Server.Errors;

/// <summary>The caller is known but its clearance or permissions do not allow what it asked; nothing was done.</summary>
public sealed class AccessDeniedException(string message) : DomainException(RavenExceptionTypes.Authorization, message);
