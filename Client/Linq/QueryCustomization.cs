namespace RavenLite.Client.Linq;

/// <summary>Collects the options of <see cref="RavenQueryableExtensions.Customize{T}"/>.</summary>
internal sealed class QueryCustomization : IQueryCustomization
{
    public TimeSpan? WaitTimeout { get; private set; }

    public IQueryCustomization WaitForNonStaleResults(TimeSpan? timeout = null)
    {
        WaitTimeout = timeout ?? RavenQueryProvider.DefaultWaitTimeout;
        return this;
    }
}
