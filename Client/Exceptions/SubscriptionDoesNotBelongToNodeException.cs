namespace RavenLite.Client.Exceptions;

/// <summary>The node asked does not serve the subscription; <see cref="AppropriateNode"/> (a cluster tag) does (RavenDB's exception of the same name).</summary>
public class SubscriptionDoesNotBelongToNodeException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public SubscriptionDoesNotBelongToNodeException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public SubscriptionDoesNotBelongToNodeException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public SubscriptionDoesNotBelongToNodeException(string message, Exception inner)
        : base(message, inner)
    {
    }

    /// <summary>The tag of the node that serves the subscription (null when the server did not say).</summary>
    public string? AppropriateNode { get; init; }
}
