namespace RavenLite.Client.Exceptions;

/// <summary>The data subscription cannot run (its query no longer compiles).</summary>
public class SubscriptionInvalidStateException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public SubscriptionInvalidStateException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public SubscriptionInvalidStateException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public SubscriptionInvalidStateException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
