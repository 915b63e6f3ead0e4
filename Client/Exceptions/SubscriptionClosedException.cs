namespace RavenLite.Client.Exceptions;

/// <summary>The server closed the data subscription's connection (disabled, dropped, deleted, or no documents left with CloseWhenNoDocsLeft).</summary>
public class SubscriptionClosedException : RavenException
{
    /// <summary>True when the worker may connect again (the subscription was dropped or changed, not disabled or deleted).</summary>
    public bool CanReconnect { get; init; }

    /// <summary>Creates an exception with no message.</summary>
    public SubscriptionClosedException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public SubscriptionClosedException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public SubscriptionClosedException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
