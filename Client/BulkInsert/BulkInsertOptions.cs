namespace RavenLite.Client.BulkInsert;

/// <summary>Options of a <see cref="BulkInsertOperation"/>.</summary>
public sealed class BulkInsertOptions
{
    /// <summary>Gzip the stream (Content-Encoding: gzip). Default false; worth it on slow links.</summary>
    public bool Compress { get; init; }

    /// <summary>
    /// Leave a document that is already stored exactly as sent (same fields and metadata) as it is: no new
    /// change vector, no re-indexing. Default false (every document is written). The operation's state
    /// counts the skipped ones (<c>DocumentsSkipped</c>).
    /// </summary>
    public bool SkipOverwriteIfUnchanged { get; init; }

    /// <summary>Serialized bytes gathered before they are written to the stream. Default 64 KiB.</summary>
    public int BufferBytes { get; init; } = 64 * 1024;

    /// <summary>
    /// When nothing went to the server for this long (the caller stores slowly, or pauses), what is buffered and a
    /// heartbeat item are sent, as RavenDB's clients do: the server drops a bulk insert stream that stays silent for
    /// its <c>BulkInsertIdleSeconds</c> (120 s by default). Default 15 s.
    /// </summary>
    public TimeSpan HeartbeatInterval { get; init; } = TimeSpan.FromSeconds(15);
}
