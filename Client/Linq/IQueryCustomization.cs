namespace RavenLite.Client.Linq;

/// <summary>Per-query options set through <see cref="RavenQueryableExtensions.Customize{T}"/>.</summary>
public interface IQueryCustomization
{
    /// <summary>Makes the server wait (at most <paramref name="timeout"/>, default 15 s) until the index has caught up before answering.</summary>
    IQueryCustomization WaitForNonStaleResults(TimeSpan? timeout = null);
}
