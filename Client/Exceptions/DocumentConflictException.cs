namespace RavenLite.Client.Exceptions;

/// <summary>The document's versions are in conflict (replication kept them for a person to resolve); storing or deleting it resolves it. HTTP 409.</summary>
public class DocumentConflictException : ConcurrencyException
{
    /// <summary>Creates an exception with no message.</summary>
    public DocumentConflictException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public DocumentConflictException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public DocumentConflictException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
