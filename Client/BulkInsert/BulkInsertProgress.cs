namespace RavenLite.Client.BulkInsert;

/// <summary>How far a bulk insert has got (raised after each buffer is handed to the stream).</summary>
/// <param name="DocumentsSent">Documents written to the stream.</param>
/// <param name="BytesSent">Uncompressed JSON bytes written.</param>
/// <param name="Elapsed">Time since the stream opened.</param>
public sealed record BulkInsertProgress(long DocumentsSent, long BytesSent, TimeSpan Elapsed)
{
    /// <summary>Average documents per second so far.</summary>
    public double DocumentsPerSecond => Elapsed.TotalSeconds > 0 ? DocumentsSent / Elapsed.TotalSeconds : 0;
}
