namespace RavenLite.Client.Exceptions;

/// <summary>Another worker holds the data subscription (OpenIfFree), or took it over (TakeOver).</summary>
public class SubscriptionInUseException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public SubscriptionInUseException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public SubscriptionInUseException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public SubscriptionInUseException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
