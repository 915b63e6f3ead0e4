using System.Collections;
using System.Linq.Expressions;

namespace RavenLite.Client.Linq;

/// <summary>The <see cref="IRavenQueryable{T}"/> implementation: an expression plus the session's provider.</summary>
internal sealed class RavenQueryable<T> : IRavenQueryable<T>
{
    public RavenQueryable(RavenQueryProvider provider, Expression? expression = null)
    {
        RavenProvider = provider;
        Expression = expression ?? Expression.Constant(this);
    }

    public RavenQueryProvider RavenProvider { get; }

    public Type ElementType => typeof(T);

    public Expression Expression { get; }

    public IQueryProvider Provider => RavenProvider;

    public string ToRql() => RavenProvider.Translate(Expression).Rql;

    public IEnumerator<T> GetEnumerator() => RavenProvider.ToListAsync<T>(Expression, default).GetAwaiter().GetResult().GetEnumerator();

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();

    public override string ToString() => ToRql();
}
