namespace RavenLite.Client.Exceptions;

/// <summary>A bulk insert failed; the message carries the server's error. Batches committed before the failure stay.</summary>
public class BulkInsertAbortedException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public BulkInsertAbortedException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public BulkInsertAbortedException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public BulkInsertAbortedException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
