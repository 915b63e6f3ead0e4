namespace RavenLite.Client.Exceptions;

/// <summary>A secured server refused the client certificate, or it lacks the access the request needs (HTTP 403); the message names what is missing.</summary>
public class AuthorizationException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public AuthorizationException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public AuthorizationException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public AuthorizationException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
