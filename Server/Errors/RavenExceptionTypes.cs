namespace RavenLite.Server.Errors;

/// <summary>
/// The exception <c>Type</c> names RavenLite sends in JSON errors (docs/protocol.md §9), spelled exactly as
/// RavenDB's own classes are named (namespace + class, from <c>src/Raven.Client/Exceptions/</c>). The
/// official clients pick the exception they raise from the last segment of a name that starts with
/// <c>Raven.Client.Exceptions.</c>, so every error the server answers takes its type from here: one
/// place, used by every feature.
/// </summary>
public static class RavenExceptionTypes
{
    private const string Root = "Raven.Client.Exceptions.";

    /// <summary>The fallback for failures without a more specific type.</summary>
    public const string RavenException = Root + "RavenException";

    /// <summary>The request itself is wrong (bad JSON, a missing parameter, a value out of range).</summary>
    public const string BadRequest = Root + "BadRequestException";

    /// <summary>No route matches the request.</summary>
    public const string RouteNotFound = Root + "Routing.RouteNotFoundException";

    /// <summary>RQL that does not parse or cannot run.</summary>
    public const string InvalidQuery = Root + "InvalidQueryException";

    /// <summary>An expected change vector did not match (409).</summary>
    public const string Concurrency = Root + "ConcurrencyException";

    /// <summary>A conflicting document (409).</summary>
    public const string DocumentConflict = Root + "Documents.DocumentConflictException";

    /// <summary>A document an operation needs is missing.</summary>
    public const string DocumentDoesNotExist = Root + "Documents.DocumentDoesNotExistException";

    /// <summary>An update would move a document to another collection.</summary>
    public const string DocumentCollectionMismatch = Root + "Documents.DocumentCollectionMismatchException";

    /// <summary>The database named in the URL does not exist (sent with 503 and <c>Database-Missing</c>).</summary>
    public const string DatabaseDoesNotExist = Root + "Database.DatabaseDoesNotExistException";

    /// <summary>The database cannot serve the request right now.</summary>
    public const string DatabaseLoadFailure = Root + "Database.DatabaseLoadFailureException";

    /// <summary>503: the database is offline (being compacted).</summary>
    public const string DatabaseDisabled = Root + "Database.DatabaseDisabledException";

    /// <summary>The disk is full.</summary>
    public const string DiskFull = Root + "Database.DiskFullException";

    /// <summary>The index named does not exist.</summary>
    public const string IndexDoesNotExist = Root + "Documents.Indexes.IndexDoesNotExistException";

    /// <summary>An index definition that cannot be compiled (with <c>IndexDefinitionProperty</c> and <c>ProblematicText</c>).</summary>
    public const string IndexCompilation = Root + "Documents.Compilation.IndexCompilationException";

    /// <summary>A bulk insert that failed or was killed.</summary>
    public const string BulkInsertAborted = Root + "Documents.BulkInsert.BulkInsertAbortedException";

    /// <summary>A cluster-wide transaction whose compare-exchange indexes or atomic guards did not match.</summary>
    public const string ClusterTransactionConcurrency = Root + "ClusterTransactionConcurrencyException";

    /// <summary>A compare-exchange key over its length limit.</summary>
    public const string CompareExchangeKeyTooBig = Root + "CompareExchangeKeyTooBigException";

    /// <summary>A custom sorter that does not exist.</summary>
    public const string SorterDoesNotExist = Root + "Documents.Sorters.SorterDoesNotExistException";

    /// <summary>A custom analyzer that does not exist.</summary>
    public const string AnalyzerDoesNotExist = Root + "Documents.Analyzers.AnalyzerDoesNotExistException";

    /// <summary>Revisions asked for where revisions are not configured.</summary>
    public const string RevisionsDisabled = Root + "Documents.Revisions.RevisionsDisabledException";

    /// <summary>A subscription that does not exist.</summary>
    public const string SubscriptionDoesNotExist = Root + "Documents.Subscriptions.SubscriptionDoesNotExistException";

    /// <summary>An attachment that does not exist.</summary>
    public const string AttachmentDoesNotExist = Root + "Documents.Attachments.AttachmentDoesNotExistException";

    /// <summary>A patch script that fails to parse.</summary>
    public const string JavaScriptParse = Root + "Documents.Patching.JavaScriptParseException";

    /// <summary>A patch script that fails while running.</summary>
    public const string JavaScript = Root + "Documents.Patching.JavaScriptException";

    /// <summary>The caller is not allowed to do this (403).</summary>
    public const string Authorization = Root + "Security.AuthorizationException";

    /// <summary>The caller could not be authenticated.</summary>
    public const string Authentication = Root + "Security.AuthenticationException";

    /// <summary>A request that would take the server past its memory budget for requests (503; MemoryBudget).</summary>
    public const string LowMemory = Root + "Server.LowMemoryException";

    /// <summary>A cluster command with no leader to take it, or no majority to commit it (503).</summary>
    public const string NoLeader = Root + "Cluster.NoLeaderException";

    /// <summary>Write assurance timed out after the write committed (answered with <c>FailImmediately</c>: the clients do not fail over).</summary>
    public const string RavenTimeout = "Raven.Client.Exceptions.RavenTimeoutException";

    /// <summary>A request that timed out on the server (the clients map this name to TimeoutException).</summary>
    public const string Timeout = "System.TimeoutException";
}
