namespace RavenLite.Client.Linq;

/// <summary>Filled in when a query with <see cref="RavenQueryableExtensions.Statistics{T}"/> executes.</summary>
public sealed class QueryStatistics
{
    /// <summary>True when the index had not processed every write when it answered.</summary>
    public bool IsStale { get; internal set; }

    /// <summary>Matches before paging.</summary>
    public long TotalResults { get; internal set; }

    /// <summary>Results skipped by the server (for example by distinct).</summary>
    public long SkippedResults { get; internal set; }

    /// <summary>The index that answered (an auto index for collection queries).</summary>
    public string? IndexName { get; internal set; }

    /// <summary>Server time spent, in milliseconds.</summary>
    public long DurationInMs { get; internal set; }

    internal void Fill(Commands.QueryResult result)
    {
        IsStale = result.IsStale;
        TotalResults = result.TotalResults;
        SkippedResults = result.SkippedResults;
        IndexName = result.IndexName;
        DurationInMs = result.DurationInMs;
    }
}
