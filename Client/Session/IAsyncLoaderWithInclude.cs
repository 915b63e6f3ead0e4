namespace RavenLite.Client.Session;

/// <summary>A load that brings referenced documents along: <c>session.Include("CompanyId").LoadAsync&lt;Order&gt;("orders/1-A")</c>.</summary>
public interface IAsyncLoaderWithInclude
{
    /// <summary>Adds another path to include.</summary>
    IAsyncLoaderWithInclude Include(string path);

    /// <summary>Loads one document and the included ones.</summary>
    Task<T?> LoadAsync<T>(string id, CancellationToken cancellationToken = default);

    /// <summary>Loads several documents and the included ones.</summary>
    Task<Dictionary<string, T?>> LoadAsync<T>(IEnumerable<string> ids, CancellationToken cancellationToken = default);
}
