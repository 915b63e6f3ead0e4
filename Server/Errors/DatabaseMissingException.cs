namespace RavenLite.Server.Errors;

/// <summary>The database named by the request does not exist: both official clients raise DatabaseDoesNotExistException.</summary>
public sealed class DatabaseMissingException(string database)
    : UnavailableException(RavenExceptionTypes.DatabaseDoesNotExist, $"Database '{database}' does not exist.")
{
    /// <summary>The name as requested.</summary>
    public string Database { get; } = database;
}
