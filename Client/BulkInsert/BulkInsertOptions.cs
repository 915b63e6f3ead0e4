namespace RavenLite.Client.BulkInsert;

/// <summary>Options of a <see cref="BulkInsertOperation"/>.</summary>
public sealed class BulkInsertOptions
{
    /// <summary>Gzip the stream (Content-Encoding: gzip). Default false; worth it on slow links.</summary>
    public bool Compress { get; init; }

    /// <summary>Serialized bytes gathered before they are written to the stream. Default 64 KiB.</summary>
    public int BufferBytes { get; init; } = 64 * 1024;
}
