namespace RavenLite.Server.Errors;

/// <summary>
/// The base of every error that domain code reports to its caller: what went wrong, in a message a person can
/// act on, and <see cref="ClientType"/>, the name of RavenDB's exception the official clients raise for it. It
/// carries no transport detail: <see cref="ErrorMapping"/> is the one place that turns each kind into a status code.
/// </summary>
public abstract class DomainException(string clientType, string message, Exception? inner = null) : Exception(message, inner)
{
    /// <summary>Fully qualified client exception type (<see cref="RavenExceptionTypes"/>), for the answer's <c>Type</c> field.</summary>
    public string ClientType { get; } = clientType;

    /// <summary>Extra string fields of the error answer (e.g. <c>IndexDefinitionProperty</c>, <c>ProblematicText</c>).</summary>
    public IReadOnlyDictionary<string, string>? Extra { get; init; }
}
