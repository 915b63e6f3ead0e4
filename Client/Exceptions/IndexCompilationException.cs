namespace RavenLite.Client.Exceptions;

/// <summary>
/// The server could not compile an index definition (HTTP 400): a map outside the supported forms,
/// an unknown field option, a reduce. Nothing was stored.
/// </summary>
public class IndexCompilationException : BadRequestException
{
    /// <summary>Creates an exception with no message.</summary>
    public IndexCompilationException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public IndexCompilationException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public IndexCompilationException(string message, Exception inner)
        : base(message, inner)
    {
    }

    /// <summary>The definition property at fault (<c>Maps</c>, <c>Reduce</c>, <c>Fields</c>).</summary>
    public string? IndexDefinitionProperty { get; init; }

    /// <summary>The text the server could not compile.</summary>
    public string? ProblematicText { get; init; }
}
