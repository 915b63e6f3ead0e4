namespace RavenLite.Server.Queries;

/// <summary>
/// Request-level query settings: paging defaults (when the query has no limit), WaitForNonStaleResults, and where
/// selected fields are read from (RavenDB's <c>ProjectionBehavior</c>: <c>Default</c>, <c>FromIndex</c>,
/// <c>FromIndexOrThrow</c>, <c>FromDocument</c>, <c>FromDocumentOrThrow</c>).
/// </summary>
public sealed record QueryOptions(int? Start, int? PageSize, bool WaitForNonStale, TimeSpan WaitTimeout, string ProjectionBehavior = "Default")
{
    /// <summary>The projection behaviours RavenDB's clients send.</summary>
    public static readonly string[] ProjectionBehaviors = ["Default", "FromIndex", "FromIndexOrThrow", "FromDocument", "FromDocumentOrThrow"];

    /// <summary>The request's memory lease: the results collected are charged to it (a query too large for the budget fails early), or null.</summary>
    public Memory.MemoryBudget.Lease? Memory { get; init; }
}
