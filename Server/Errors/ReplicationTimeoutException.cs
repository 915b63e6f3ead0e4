namespace RavenLite.Server.Errors;

/// <summary>
/// Write assurance ran out of time (408, RavenDB's <c>RavenTimeoutException</c> with <c>FailImmediately</c>): the write
/// is committed here, but fewer destinations than asked acknowledged it. The clients must not retry it elsewhere.
/// </summary>
public sealed class ReplicationTimeoutException(string message) : DomainException(RavenExceptionTypes.RavenTimeout, message);
