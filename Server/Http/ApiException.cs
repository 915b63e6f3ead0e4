namespace RavenLite.Server.Http;

/// <summary>
/// An error answered as JSON <c>{Type, Message, Error, Url}</c> (PROTOCOL.md §9) with
/// <see cref="StatusCode"/>. <see cref="ClientType"/> is the exception name the official clients map
/// (always under <c>Raven.Client.Exceptions.</c>).
/// </summary>
public class ApiException(int statusCode, string clientType, string message, Exception? inner = null) : Exception(message, inner)
{
    /// <summary>HTTP status of the answer.</summary>
    public int StatusCode { get; } = statusCode;

    /// <summary>Fully qualified client exception type, for the <c>Type</c> field.</summary>
    public string ClientType { get; } = clientType;

    /// <summary>Extra string fields of the error answer (e.g. <c>IndexDefinitionProperty</c>, <c>ProblematicText</c>).</summary>
    public IReadOnlyDictionary<string, string>? Extra { get; init; }

    /// <summary>400 BadRequestException: the request itself is wrong; nothing was written.</summary>
    public static ApiException BadRequest(string message) => new(400, RavenExceptionTypes.BadRequest, message);

    /// <summary>400 InvalidQueryException: RQL that does not parse or cannot run (the position is in the message); nothing was read.</summary>
    public static ApiException InvalidQuery(string message) => new(400, RavenExceptionTypes.InvalidQuery, message);

    /// <summary>409 ConcurrencyException: an expected change vector did not match; nothing was written.</summary>
    public static ApiException Concurrency(string message) => new(409, RavenExceptionTypes.Concurrency, message);

    /// <summary>413: a body or document over its documented limit.</summary>
    public static ApiException TooLarge(string message) => new(413, RavenExceptionTypes.BadRequest, message);

    /// <summary>
    /// 400 IndexCompilationException: an index definition outside what RavenLite understands; names
    /// the definition property and the text at fault (the official clients read both).
    /// </summary>
    public static ApiException IndexCompilation(string message, string property, string problematicText) =>
        new(400, RavenExceptionTypes.IndexCompilation, message)
        {
            Extra = new Dictionary<string, string> { ["IndexDefinitionProperty"] = property, ["ProblematicText"] = problematicText },
        };

    /// <summary>404 for a named thing that does not exist.</summary>
    public static ApiException NotFound(string clientType, string message) => new(404, clientType, message);
}

/// <summary>503 with the <c>Database-Missing</c> header: both official clients raise DatabaseDoesNotExistException.</summary>
public sealed class DatabaseMissingException(string database)
    : ApiException(503, RavenExceptionTypes.DatabaseDoesNotExist, $"Database '{database}' does not exist.")
{
    /// <summary>The name as requested.</summary>
    public string Database { get; } = database;
}
