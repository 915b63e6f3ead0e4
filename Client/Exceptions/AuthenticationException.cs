namespace RavenLite.Client.Exceptions;

/// <summary>A secured server got no client certificate (HTTP 401): set DocumentStore.Certificate.</summary>
public class AuthenticationException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public AuthenticationException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public AuthenticationException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public AuthenticationException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
