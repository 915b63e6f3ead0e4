using System.Text.Json;
using RavenLite.Server.Documents;

namespace RavenLite.Server.Queries;

/// <summary>
/// A query's answer: result JSON (whole documents or projections, each with @metadata), the match
/// count, included documents, the etag it saw, the source's name, whether the index was behind the
/// documents, and when the index last indexed.
/// </summary>
public sealed record QueryAnswer(IReadOnlyList<byte[]> Results, long TotalResults, IReadOnlyDictionary<string, StoredDocument?> Includes, long ResultEtag, string IndexName, bool IsStale, DateTime? IndexTimestamp)
{
    /// <summary>Writes further top-level properties of the answer (Highlightings, Explanations, Timings), or null.</summary>
    public Action<Utf8JsonWriter>? WriteExtras { get; init; }

    /// <summary>The answer includes counters or time series: values that change without moving the database's etag, so it is not cached.</summary>
    public bool HasVolatileIncludes { get; init; }
}
