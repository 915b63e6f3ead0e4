namespace RavenLite.Fuzz.Targets;

/// <summary>
/// A <c>.ravendbdump</c> import (docs/reliability.md "Fuzzing"): the input is the dump — gzip or plain JSON, every
/// record kind (documents, attachments with their bytes, revisions, counters, time series, indexes, compare-exchange,
/// identities, the database record) — posted as the import's body.
/// </summary>
public sealed class ImportTarget : IFuzzTarget
{
    private readonly FuzzServer _server = new();
    private long _operation = 2_000_000;

    public void Run(ReadOnlySpan<byte> input) =>
        _server.SendToDatabase(HttpMethod.Post, $"/smuggler/import?operationId={++_operation}", new ByteArrayContent(input.ToArray()));

    public void Dispose() => _server.Dispose();
}
