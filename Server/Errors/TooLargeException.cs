namespace RavenLite.Server.Errors;

/// <summary>A body, document or value over its documented limit; nothing of it was written.</summary>
public sealed class TooLargeException(string message) : DomainException(RavenExceptionTypes.BadRequest, message);
