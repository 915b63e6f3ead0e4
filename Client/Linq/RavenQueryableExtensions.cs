using System.Linq.Expressions;

namespace RavenLite.Client.Linq;

/// <summary>Async execution and RavenLite options for LINQ queries (<c>await session.Query&lt;User&gt;().Where(..).ToListAsync()</c>).</summary>
public static class RavenQueryableExtensions
{
    private static RavenQueryProvider ProviderOf<T>(IQueryable<T> source) =>
        (source ?? throw new ArgumentNullException(nameof(source))).Provider as RavenQueryProvider
        ?? throw new NotSupportedException("This method works on RavenLite queries (session.Query<T>()) only.");

    /// <summary>Fills <paramref name="stats"/> (IsStale, TotalResults, IndexName, DurationInMs) when the query executes.</summary>
    public static IRavenQueryable<T> Statistics<T>(this IQueryable<T> source, out QueryStatistics stats)
    {
        stats = new QueryStatistics();
        return new RavenQueryable<T>(ProviderOf(source).With(statistics: stats), source.Expression);
    }

    /// <summary>Sets per-query options, for example <c>x =&gt; x.WaitForNonStaleResults(TimeSpan.FromSeconds(5))</c>.</summary>
    public static IRavenQueryable<T> Customize<T>(this IQueryable<T> source, Action<IQueryCustomization> customize)
    {
        ArgumentNullException.ThrowIfNull(customize);
        var c = new QueryCustomization();
        customize(c);
        return new RavenQueryable<T>(ProviderOf(source).With(wait: c.WaitTimeout), source.Expression);
    }

    /// <summary>The RQL a query translates to (with <c>$pN</c> parameters), without executing it.</summary>
    public static string ToRql<T>(this IQueryable<T> source) => ProviderOf(source).Translate(source.Expression).Rql;

    /// <summary>Executes the query and returns every result.</summary>
    public static Task<List<T>> ToListAsync<T>(this IQueryable<T> source, CancellationToken cancellationToken = default) =>
        ProviderOf(source).ToListAsync<T>(source.Expression, cancellationToken);

    /// <summary>The query's results, fetched with the session's other lazy operations in one request when first asked for.</summary>
    public static Lazy<Task<IEnumerable<T>>> LazilyAsync<T>(this IQueryable<T> source) => ProviderOf(source).Lazily<T>(source.Expression);

    /// <summary>The query's match count, fetched with the session's other lazy operations in one request when first asked for.</summary>
    public static Lazy<Task<int>> CountLazilyAsync<T>(this IQueryable<T> source)
    {
        var count = typeof(Queryable).GetMethods().Single(m => m.Name == nameof(Queryable.Count) && m.GetParameters().Length == 1).MakeGenericMethod(typeof(T));
        return ProviderOf(source).CountLazily(Expression.Call(count, source.Expression));
    }

    /// <summary>Number of matches (no documents are transferred).</summary>
    public static Task<int> CountAsync<T>(this IQueryable<T> source, CancellationToken cancellationToken = default) =>
        Terminal<T, int>(source, nameof(Queryable.Count), null, cancellationToken);

    /// <summary>Number of matching <paramref name="predicate"/>.</summary>
    public static Task<int> CountAsync<T>(this IQueryable<T> source, Expression<Func<T, bool>> predicate, CancellationToken cancellationToken = default) =>
        Terminal<T, int>(source, nameof(Queryable.Count), predicate, cancellationToken);

    /// <summary>True when anything matches.</summary>
    public static Task<bool> AnyAsync<T>(this IQueryable<T> source, CancellationToken cancellationToken = default) =>
        Terminal<T, bool>(source, nameof(Queryable.Any), null, cancellationToken);

    /// <summary>True when anything matches <paramref name="predicate"/>.</summary>
    public static Task<bool> AnyAsync<T>(this IQueryable<T> source, Expression<Func<T, bool>> predicate, CancellationToken cancellationToken = default) =>
        Terminal<T, bool>(source, nameof(Queryable.Any), predicate, cancellationToken);

    /// <summary>The first result; throws when there is none.</summary>
    public static Task<T> FirstAsync<T>(this IQueryable<T> source, CancellationToken cancellationToken = default) =>
        Terminal<T, T>(source, nameof(Queryable.First), null, cancellationToken);

    /// <summary>The first result matching <paramref name="predicate"/>; throws when there is none.</summary>
    public static Task<T> FirstAsync<T>(this IQueryable<T> source, Expression<Func<T, bool>> predicate, CancellationToken cancellationToken = default) =>
        Terminal<T, T>(source, nameof(Queryable.First), predicate, cancellationToken);

    /// <summary>The first result, or default.</summary>
    public static Task<T?> FirstOrDefaultAsync<T>(this IQueryable<T> source, CancellationToken cancellationToken = default) =>
        Terminal<T, T?>(source, nameof(Queryable.FirstOrDefault), null, cancellationToken);

    /// <summary>The first result matching <paramref name="predicate"/>, or default.</summary>
    public static Task<T?> FirstOrDefaultAsync<T>(this IQueryable<T> source, Expression<Func<T, bool>> predicate, CancellationToken cancellationToken = default) =>
        Terminal<T, T?>(source, nameof(Queryable.FirstOrDefault), predicate, cancellationToken);

    /// <summary>The only result; throws when there are none or several.</summary>
    public static Task<T> SingleAsync<T>(this IQueryable<T> source, CancellationToken cancellationToken = default) =>
        Terminal<T, T>(source, nameof(Queryable.Single), null, cancellationToken);

    /// <summary>The only result, or default when none; throws when several.</summary>
    public static Task<T?> SingleOrDefaultAsync<T>(this IQueryable<T> source, CancellationToken cancellationToken = default) =>
        Terminal<T, T?>(source, nameof(Queryable.SingleOrDefault), null, cancellationToken);

    /// <summary>Expression&lt;Func&lt;T, bool&gt;&gt; (not the default-value overloads).</summary>
    private static bool IsPredicate(Type t) =>
        t.IsGenericType && t.GetGenericTypeDefinition() == typeof(Expression<>) && t.GetGenericArguments()[0].GetGenericArguments().Length == 2;

    private static Task<TResult> Terminal<T, TResult>(IQueryable<T> source, string name, Expression<Func<T, bool>>? predicate, CancellationToken cancellationToken)
    {
        var provider = ProviderOf(source);
        var method = typeof(Queryable).GetMethods()
            .Single(m => m.Name == name && m.GetParameters().Length == (predicate == null ? 1 : 2) &&
                         (predicate == null || IsPredicate(m.GetParameters()[1].ParameterType)))
            .MakeGenericMethod(typeof(T));
        var call = predicate == null
            ? Expression.Call(method, source.Expression)
            : Expression.Call(method, source.Expression, Expression.Quote(predicate));
        return provider.ExecuteScalarAsync<TResult>(call, cancellationToken);
    }
}
