namespace RavenLite.Client.Exceptions;

/// <summary>
/// Base of every error the client raises for a server answer. <see cref="ServerType"/> is the
/// server's exception type name (the JSON error's <c>Type</c>), <see cref="StatusCode"/> the HTTP status.
/// </summary>
public class RavenException : Exception
{
    /// <summary>Creates an exception with no message.</summary>
    public RavenException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public RavenException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public RavenException(string message, Exception inner)
        : base(message, inner)
    {
    }

    /// <summary>HTTP status of the answer, when it came from one.</summary>
    public int? StatusCode { get; init; }

    /// <summary>The server's exception type (JSON error <c>Type</c>), when it sent one.</summary>
    public string? ServerType { get; init; }

    /// <summary>The request URL the server reported.</summary>
    public string? Url { get; init; }
}
