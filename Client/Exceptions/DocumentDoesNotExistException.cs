namespace RavenLite.Client.Exceptions;

/// <summary>The document an operation needs (for its counters or attachments) does not exist.</summary>
public class DocumentDoesNotExistException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public DocumentDoesNotExistException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public DocumentDoesNotExistException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public DocumentDoesNotExistException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
