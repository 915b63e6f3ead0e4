namespace RavenLite.Server.Errors;

/// <summary>RQL that does not parse or cannot run (the position is in the message); nothing was read.</summary>
public sealed class InvalidQueryException(string message) : DomainException(RavenExceptionTypes.InvalidQuery, message);
