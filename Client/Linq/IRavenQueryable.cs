namespace RavenLite.Client.Linq;

/// <summary>A LINQ query against RavenLite (<c>session.Query&lt;User&gt;()</c>); translated to RQL when executed.</summary>
/// <typeparam name="T">Element type.</typeparam>
public interface IRavenQueryable<T> : IOrderedQueryable<T>
{
    /// <summary>The RQL this query translates to (with <c>$pN</c> parameters), without executing it.</summary>
    string ToRql();
}
