namespace RavenLite.Client.Exceptions;

/// <summary>The server refused a query (RQL) that does not parse or cannot run; the message names the position and the problem.</summary>
public class InvalidQueryException : BadRequestException
{
    /// <summary>Creates an exception with no message.</summary>
    public InvalidQueryException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public InvalidQueryException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public InvalidQueryException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
