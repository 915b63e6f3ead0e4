namespace RavenLite.Server.Queries;

/// <summary>Request-level query settings: paging defaults (when the query has no limit) and WaitForNonStaleResults.</summary>
public sealed record QueryOptions(int? Start, int? PageSize, bool WaitForNonStale, TimeSpan WaitTimeout);
