namespace RavenLite.Client.Exceptions;

/// <summary>A cluster-wide transaction found a compare-exchange index or a document atomic guard changed since the session read it; nothing was written. HTTP 409.</summary>
public class ClusterTransactionConcurrencyException : ConcurrencyException
{
    /// <summary>Creates an exception with no message.</summary>
    public ClusterTransactionConcurrencyException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public ClusterTransactionConcurrencyException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public ClusterTransactionConcurrencyException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
