namespace RavenLite.Server.Errors;

/// <summary>
/// The request itself is wrong (a bad value, a missing parameter, a script that does not parse, a document an
/// operation needs that is not there); nothing was written. <paramref name="clientType"/> names a more specific
/// RavenDB exception when the clients expect one.
/// </summary>
public sealed class BadRequestException(string message, string clientType = RavenExceptionTypes.BadRequest, Exception? inner = null)
    : DomainException(clientType, message, inner);
