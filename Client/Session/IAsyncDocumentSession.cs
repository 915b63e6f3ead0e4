using RavenLite.Client.Linq;

namespace RavenLite.Client.Session;

/// <summary>
/// A unit of work over one database: load and store entities, delete, query, then
/// <see cref="SaveChangesAsync"/> sends every change in one transaction. An identity map returns the
/// same instance for the same id; changes to loaded entities are detected automatically. Not
/// thread-safe; open one per request or task and dispose it.
/// </summary>
public interface IAsyncDocumentSession : IDisposable
{
    /// <summary>Metadata, change vectors, eviction, raw queries and session settings.</summary>
    IAsyncAdvancedSessionOperations Advanced { get; }

    /// <summary>Tracks a new entity; its id comes from its Id property or, when empty, from HiLo (<c>users/1-A</c>), and is written back to it.</summary>
    Task StoreAsync(object entity, CancellationToken cancellationToken = default);

    /// <summary>Tracks an entity under <paramref name="id"/>.</summary>
    Task StoreAsync(object entity, string id, CancellationToken cancellationToken = default);

    /// <summary>Tracks an entity under <paramref name="id"/>; saving succeeds only if the stored document's change vector is <paramref name="changeVector"/> (<c>""</c>: it must not exist).</summary>
    Task StoreAsync(object entity, string? changeVector, string id, CancellationToken cancellationToken = default);

    /// <summary>Loads a document (null when missing). A tracked id is answered from the session without a request.</summary>
    Task<T?> LoadAsync<T>(string id, CancellationToken cancellationToken = default);

    /// <summary>Loads several documents in one request; missing ones map to null.</summary>
    Task<Dictionary<string, T?>> LoadAsync<T>(IEnumerable<string> ids, CancellationToken cancellationToken = default);

    /// <summary>Starts a load that also fetches the documents referenced by <paramref name="path"/> (for example <c>CompanyId</c>), so loading them later needs no request.</summary>
    IAsyncLoaderWithInclude Include(string path);

    /// <summary>Marks a tracked entity for deletion.</summary>
    void Delete<T>(T entity);

    /// <summary>Marks a document for deletion by id.</summary>
    void Delete(string id);

    /// <summary>Marks a document for deletion by id; saving fails with a concurrency error unless its change vector is <paramref name="expectedChangeVector"/>.</summary>
    void Delete(string id, string? expectedChangeVector);

    /// <summary>Sends every new, changed and deleted document in one <c>bulk_docs</c> request (one server transaction). Nothing is sent when nothing changed.</summary>
    /// <exception cref="Exceptions.ConcurrencyException">an optimistic-concurrency check failed; nothing was applied.</exception>
    Task SaveChangesAsync(CancellationToken cancellationToken = default);

    /// <summary>A LINQ query over a collection (auto index) or over <paramref name="indexName"/>.</summary>
    IRavenQueryable<T> Query<T>(string? indexName = null, string? collectionName = null);

    /// <summary>The counters of document <paramref name="documentId"/>: increments and deletes are saved by <see cref="SaveChangesAsync"/>.</summary>
    Counters.ISessionDocumentCounters CountersFor(string documentId);

    /// <summary>The counters of a tracked entity's document.</summary>
    Counters.ISessionDocumentCounters CountersFor(object entity);

    /// <summary>The time series <paramref name="name"/> of a document (<c>INC:...</c> for an incremental one): changes saved by <see cref="SaveChangesAsync"/>.</summary>
    TimeSeries.ISessionDocumentTimeSeries TimeSeriesFor(string documentId, string name);

    /// <summary>The time series <paramref name="name"/> of a tracked entity's document.</summary>
    TimeSeries.ISessionDocumentTimeSeries TimeSeriesFor(object entity, string name);
}
