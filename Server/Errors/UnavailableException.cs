namespace RavenLite.Server.Errors;

/// <summary>
/// The request is fine but cannot be served right now (a database closing, compacting or missing, an index being
/// reset, memory short); the clients retry or fail over.
/// </summary>
public class UnavailableException(string clientType, string message) : DomainException(clientType, message);
