namespace RavenLite.Client.Exceptions;

/// <summary>
/// The server ran out of time waiting on something after the write committed — write assurance: fewer replicas than
/// asked acknowledged the batch in time. The write itself is stored. HTTP 408.
/// </summary>
public class RavenTimeoutException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public RavenTimeoutException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public RavenTimeoutException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public RavenTimeoutException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
