namespace RavenLite.Client.Exceptions;

/// <summary>The data subscription does not exist.</summary>
public class SubscriptionDoesNotExistException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public SubscriptionDoesNotExistException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public SubscriptionDoesNotExistException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public SubscriptionDoesNotExistException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
