using RavenLite.Client.Linq;

namespace RavenLite.Client.Session;

/// <summary>The synchronous session: each call blocks on the async session's. Not thread-safe.</summary>
internal sealed class DocumentSession(AsyncDocumentSession inner) : IDocumentSession
{
    public IAsyncAdvancedSessionOperations Advanced => inner;

    public void Store(object entity) => inner.StoreAsync(entity).GetAwaiter().GetResult();

    public void Store(object entity, string id) => inner.StoreAsync(entity, id).GetAwaiter().GetResult();

    public void Store(object entity, string? changeVector, string id) => inner.StoreAsync(entity, changeVector, id).GetAwaiter().GetResult();

    public T? Load<T>(string id) => inner.LoadAsync<T>(id).GetAwaiter().GetResult();

    public Dictionary<string, T?> Load<T>(IEnumerable<string> ids) => inner.LoadAsync<T>(ids).GetAwaiter().GetResult();

    public void Delete<T>(T entity) => inner.Delete(entity);

    public void Delete(string id) => inner.Delete(id);

    public void SaveChanges() => inner.SaveChangesAsync().GetAwaiter().GetResult();

    public IRavenQueryable<T> Query<T>(string? indexName = null, string? collectionName = null) => inner.Query<T>(indexName, collectionName);

    public void Dispose() => inner.Dispose();
}
