using System.Text.Json.Serialization;

namespace RavenLite.Bench;

/// <summary>One row of results (docs/benchmarks.md JSON contract, plus the byte counts the storage issue asks for).</summary>
internal sealed record BenchResult(
    [property: JsonPropertyName("suite")] string Suite,
    [property: JsonPropertyName("workload")] string Workload,
    [property: JsonPropertyName("engine")] string Engine,
    [property: JsonPropertyName("durability")] string Durability,
    [property: JsonPropertyName("ops")] long Ops,
    [property: JsonPropertyName("seconds")] double Seconds,
    [property: JsonPropertyName("opsPerSec")] double OpsPerSec,
    [property: JsonPropertyName("journalBytes")] long? JournalBytes,
    [property: JsonPropertyName("rawPageBytes")] long? RawPageBytes,
    [property: JsonPropertyName("processWriteBytes")] long? ProcessWriteBytes,
    [property: JsonPropertyName("dataFileBytes")] long? DataFileBytes,
    [property: JsonPropertyName("transactions")] long? Transactions,
    [property: JsonPropertyName("p50Ms")] double? P50Ms,
    [property: JsonPropertyName("p99Ms")] double? P99Ms,
    [property: JsonPropertyName("rssBytes")] long? RssBytes)
{
    /// <summary>Runs the reported median was taken from.</summary>
    [JsonPropertyName("repeats")]
    public int Repeats { get; init; } = 1;

    /// <summary>Storage: RavenLite's undo file just before close (before-images of the pages the largest flush overwrote; a clean close deletes it), bytes.</summary>
    [JsonPropertyName("undoFileBytes")]
    public long? UndoFileBytes { get; init; }

    /// <summary>Storage, delete-half-refill: the data file after the load, before the timed deletes and refill.</summary>
    [JsonPropertyName("dataFileBeforeBytes")]
    public long? DataFileBeforeBytes { get; init; }
}
