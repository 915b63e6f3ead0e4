namespace RavenLite.Client.Linq;

/// <summary>A raw RQL query: <c>session.Advanced.AsyncRawQuery&lt;User&gt;("from Users where Age &gt; $age").AddParameter("age", 30)</c>.</summary>
/// <typeparam name="T">Result type.</typeparam>
public interface IAsyncRawDocumentQuery<T>
{
    /// <summary>Sets the value of <c>$name</c>.</summary>
    IAsyncRawDocumentQuery<T> AddParameter(string name, object? value);

    /// <summary>Makes the server wait (bounded) until the index has caught up.</summary>
    IAsyncRawDocumentQuery<T> WaitForNonStaleResults(TimeSpan? timeout = null);

    /// <summary>Fills <paramref name="stats"/> when the query executes.</summary>
    IAsyncRawDocumentQuery<T> Statistics(out QueryStatistics stats);

    /// <summary>Executes the query.</summary>
    Task<List<T>> ToListAsync(CancellationToken cancellationToken = default);
}
