namespace RavenLite.Fuzz.Targets;

/// <summary>
/// The bulk-insert stream (docs/reliability.md "Fuzzing"): the input is the body of one <c>POST /bulk_insert</c> — a
/// JSON array of commands (PUT, Counters, TimeSeries, AttachmentPUT with its raw bytes after the command, heartbeats),
/// cut, misordered or malformed anywhere.
/// </summary>
public sealed class BulkInsertTarget : IFuzzTarget
{
    private readonly FuzzServer _server = new();
    private long _operation = 1_000_000;

    public void Run(ReadOnlySpan<byte> input) =>
        _server.SendToDatabase(HttpMethod.Post, $"/bulk_insert?id={++_operation}", new ByteArrayContent(input.ToArray()));

    public void Dispose() => _server.Dispose();
}
