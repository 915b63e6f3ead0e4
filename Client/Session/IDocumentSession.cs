using RavenLite.Client.Linq;

namespace RavenLite.Client.Session;

/// <summary>The synchronous session: the same unit of work as <see cref="IAsyncDocumentSession"/>, blocking calls.</summary>
public interface IDocumentSession : IDisposable
{
    /// <summary>Advanced operations (shared with the async session).</summary>
    IAsyncAdvancedSessionOperations Advanced { get; }

    /// <summary>See <see cref="IAsyncDocumentSession.StoreAsync(object, CancellationToken)"/>.</summary>
    void Store(object entity);

    /// <summary>See <see cref="IAsyncDocumentSession.StoreAsync(object, string, CancellationToken)"/>.</summary>
    void Store(object entity, string id);

    /// <summary>See <see cref="IAsyncDocumentSession.StoreAsync(object, string?, string, CancellationToken)"/>.</summary>
    void Store(object entity, string? changeVector, string id);

    /// <summary>See <see cref="IAsyncDocumentSession.LoadAsync{T}(string, CancellationToken)"/>.</summary>
    T? Load<T>(string id);

    /// <summary>See <see cref="IAsyncDocumentSession.LoadAsync{T}(IEnumerable{string}, CancellationToken)"/>.</summary>
    Dictionary<string, T?> Load<T>(IEnumerable<string> ids);

    /// <summary>See <see cref="IAsyncDocumentSession.Delete{T}(T)"/>.</summary>
    void Delete<T>(T entity);

    /// <summary>See <see cref="IAsyncDocumentSession.Delete(string)"/>.</summary>
    void Delete(string id);

    /// <summary>See <see cref="IAsyncDocumentSession.SaveChangesAsync"/>.</summary>
    void SaveChanges();

    /// <summary>See <see cref="IAsyncDocumentSession.Query{T}"/>; execute with the synchronous LINQ operators (ToList, Count, First…).</summary>
    IRavenQueryable<T> Query<T>(string? indexName = null, string? collectionName = null);
}
