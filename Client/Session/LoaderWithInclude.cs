namespace RavenLite.Client.Session;

/// <summary>Collects include paths, then loads through the session in one request.</summary>
internal sealed class LoaderWithInclude(AsyncDocumentSession session, List<string> paths) : IAsyncLoaderWithInclude
{
    public IAsyncLoaderWithInclude Include(string path)
    {
        ArgumentException.ThrowIfNullOrEmpty(path);
        paths.Add(path);
        return this;
    }

    public async Task<T?> LoadAsync<T>(string id, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(id);
        var all = await session.LoadCoreAsync<T>([id], paths, cancellationToken).ConfigureAwait(false);
        return all[id];
    }

    public Task<Dictionary<string, T?>> LoadAsync<T>(IEnumerable<string> ids, CancellationToken cancellationToken = default) =>
        session.LoadCoreAsync<T>(ids.ToList(), paths, cancellationToken);
}
