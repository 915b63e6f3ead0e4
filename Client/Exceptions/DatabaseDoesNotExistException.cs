namespace RavenLite.Client.Exceptions;

/// <summary>The database named in the request does not exist (HTTP 503 with a Database-Missing header).</summary>
public class DatabaseDoesNotExistException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public DatabaseDoesNotExistException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public DatabaseDoesNotExistException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public DatabaseDoesNotExistException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
