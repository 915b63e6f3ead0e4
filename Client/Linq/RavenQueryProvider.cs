using System.Linq.Expressions;
using RavenLite.Client.Commands;
using RavenLite.Client.Session;

namespace RavenLite.Client.Linq;

/// <summary>
/// Executes LINQ queries of one session: translates with <see cref="RqlTranslator"/>, sends a
/// <see cref="QueryCommand"/>, and turns results into tracked entities (whole documents) or plain
/// objects (projections). Immutable per query shape; <see cref="With"/> makes a copy carrying
/// statistics or customization.
/// </summary>
internal sealed class RavenQueryProvider(AsyncDocumentSession session, Type rootType, string? indexName, string? collection) : IQueryProvider
{
    private static readonly TimeSpan DefaultWait = TimeSpan.FromSeconds(15);

    public Type RootType { get; } = rootType;

    public QueryStatistics? Statistics { get; private init; }

    public TimeSpan? WaitForNonStale { get; private init; }

    public RavenQueryProvider With(QueryStatistics? statistics = null, TimeSpan? wait = null) =>
        new(session, RootType, indexName, collection) { Statistics = statistics ?? Statistics, WaitForNonStale = wait ?? WaitForNonStale };

    public RqlQuery Translate(Expression expression) => RqlTranslator.Translate(expression, indexName, collection, session.Store.Conventions);

    public IQueryable CreateQuery(Expression expression)
    {
        var element = expression.Type.GetInterfaces().Append(expression.Type)
            .First(i => i.IsGenericType && i.GetGenericTypeDefinition() == typeof(IEnumerable<>)).GetGenericArguments()[0];
        return (IQueryable)Activator.CreateInstance(typeof(RavenQueryable<>).MakeGenericType(element), this, expression)!;
    }

    public IQueryable<TElement> CreateQuery<TElement>(Expression expression) => new RavenQueryable<TElement>(this, expression);

    public object? Execute(Expression expression) =>
        typeof(RavenQueryProvider).GetMethod(nameof(ExecuteScalar), System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Instance)!
            .MakeGenericMethod(expression.Type).Invoke(this, [expression]);

    public TResult Execute<TResult>(Expression expression) => ExecuteScalarAsync<TResult>(expression, default).GetAwaiter().GetResult();

    private TResult ExecuteScalar<TResult>(Expression expression) => Execute<TResult>(expression);

    public async Task<List<T>> ToListAsync<T>(Expression expression, CancellationToken cancellationToken)
    {
        var (query, result) = await RunAsync(expression, cancellationToken).ConfigureAwait(false);
        return result.Results.Select(session.FromQueryResult<T>).ToList();
    }

    public async Task<TResult> ExecuteScalarAsync<TResult>(Expression expression, CancellationToken cancellationToken)
    {
        string op = expression is MethodCallExpression m ? m.Method.Name : "";
        var (query, result) = await RunAsync(expression, cancellationToken).ConfigureAwait(false);
        switch (query.Terminal)
        {
            case TerminalOperation.Count:
                return op == "LongCount" ? (TResult)(object)result.TotalResults : (TResult)(object)checked((int)result.TotalResults);
            case TerminalOperation.Any:
                return (TResult)(object)(result.TotalResults > 0);
            case TerminalOperation.First:
                if (result.Results.Count == 0)
                    return op == "First" ? throw new InvalidOperationException("The query returned no results (First).") : default!;
                return session.FromQueryResult<TResult>(result.Results[0]);
            case TerminalOperation.Single:
                if (result.Results.Count > 1)
                    throw new InvalidOperationException($"The query returned more than one result ({op}).");
                if (result.Results.Count == 0)
                    return op == "Single" ? throw new InvalidOperationException("The query returned no results (Single).") : default!;
                return session.FromQueryResult<TResult>(result.Results[0]);
            default:
                throw new NotSupportedException($"'{expression}' does not end in a supported operator (Count, Any, First, Single, ToList…).");
        }
    }

    private async Task<(RqlQuery Query, QueryResult Result)> RunAsync(Expression expression, CancellationToken cancellationToken)
    {
        var query = Translate(expression);
        var result = await session.ExecuteQueryAsync(new QueryCommand(query.Rql, query.Parameters, WaitForNonStale), cancellationToken).ConfigureAwait(false);
        Statistics?.Fill(result);
        if (WaitForNonStale != null && result.IsStale)
            throw new TimeoutException($"The index '{result.IndexName}' was still stale after {WaitForNonStale.Value.TotalSeconds:0.#} s (WaitForNonStaleResults).");
        return (query, result);
    }

    internal static TimeSpan DefaultWaitTimeout => DefaultWait;

    /// <summary>The query deferred into the session's next multi_get.</summary>
    public Lazy<Task<IEnumerable<T>>> Lazily<T>(Expression expression)
    {
        var query = Translate(expression);
        return session.AddLazyQuery(new QueryCommand(query.Rql, query.Parameters, WaitForNonStale), result =>
        {
            Statistics?.Fill(result);
            return (IEnumerable<T>)result.Results.Select(session.FromQueryResult<T>).ToList();
        });
    }

    /// <summary>A <c>Count()</c> query deferred into the session's next multi_get (translated as CountAsync sends it).</summary>
    public Lazy<Task<int>> CountLazily(Expression countCall)
    {
        var query = Translate(countCall);
        return session.AddLazyQuery(new QueryCommand(query.Rql, query.Parameters, WaitForNonStale), result => checked((int)result.TotalResults));
    }
}
