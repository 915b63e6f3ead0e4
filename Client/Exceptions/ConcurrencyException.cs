namespace RavenLite.Client.Exceptions;

/// <summary>An optimistic-concurrency check failed: the document changed (or exists, or is missing) since the change vector the client sent. HTTP 409.</summary>
public class ConcurrencyException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public ConcurrencyException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public ConcurrencyException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public ConcurrencyException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
