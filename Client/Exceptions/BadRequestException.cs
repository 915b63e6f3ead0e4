namespace RavenLite.Client.Exceptions;

/// <summary>The server refused the request as malformed (HTTP 400); the message is the server's.</summary>
public class BadRequestException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public BadRequestException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public BadRequestException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public BadRequestException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
