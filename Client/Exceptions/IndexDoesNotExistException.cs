namespace RavenLite.Client.Exceptions;

/// <summary>The index named in a query or operation does not exist.</summary>
public class IndexDoesNotExistException : RavenException
{
    /// <summary>Creates an exception with no message.</summary>
    public IndexDoesNotExistException()
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/>.</summary>
    public IndexDoesNotExistException(string message)
        : base(message)
    {
    }

    /// <summary>Creates an exception with <paramref name="message"/> wrapping <paramref name="inner"/>.</summary>
    public IndexDoesNotExistException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
