namespace RavenLite.Client.Session;

/// <summary>How a session's SaveChanges is applied.</summary>
public enum TransactionMode
{
    /// <summary>One database transaction (the default).</summary>
    SingleNode,

    /// <summary>
    /// A cluster-wide transaction: it may hold compare-exchange changes (<see cref="IAsyncAdvancedSessionOperations.ClusterTransaction"/>),
    /// every compare-exchange index and document atomic guard is checked before anything is written, and documents
    /// are protected by atomic guards (a save fails with <see cref="Exceptions.ClusterTransactionConcurrencyException"/>
    /// when another cluster-wide transaction changed a document since this session loaded it).
    /// </summary>
    ClusterWide,
}

/// <summary>Options of a new session.</summary>
public sealed class SessionOptions
{
    /// <summary>The database (null: the store's).</summary>
    public string? Database { get; set; }

    /// <summary>How SaveChanges is applied.</summary>
    public TransactionMode TransactionMode { get; set; }
}

/// <summary>The compare-exchange values of a cluster-wide session: created, changed and deleted with its SaveChanges.</summary>
public interface IClusterTransactionOperations
{
    /// <summary>Creates a value saved with the session's changes (the save fails if the key exists by then).</summary>
    CompareExchange.CompareExchangeValue<T> CreateCompareExchangeValue<T>(string key, T value);

    /// <summary>Reads a value (null when missing); a later change to its <c>Value</c> is saved with the session, checked against the index read.</summary>
    Task<CompareExchange.CompareExchangeValue<T>?> GetCompareExchangeValueAsync<T>(string key, CancellationToken cancellationToken = default);

    /// <summary>Deletes a value with the session's changes, when its index is still <paramref name="index"/>.</summary>
    void DeleteCompareExchangeValue(string key, long index);
}
