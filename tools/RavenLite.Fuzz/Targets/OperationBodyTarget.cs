namespace RavenLite.Fuzz.Targets;

/// <summary>
/// A stream posted whole as the body of an endpoint that runs it as an operation (docs/reliability.md "Fuzzing"): the
/// bulk-insert stream (<c>POST /bulk_insert</c>: a JSON array of commands — PUT, Counters, TimeSeries, AttachmentPUT
/// with its raw bytes after the command, heartbeats — cut, misordered or malformed anywhere) and the
/// <c>.ravendbdump</c> import (<c>POST /smuggler/import</c>: gzip or plain JSON, every record kind — documents,
/// attachments with their bytes, revisions, counters, time series, indexes, compare-exchange, identities, the
/// database record). Each input is a new operation.
/// </summary>
public sealed class OperationBodyTarget(string path, string operationParameter) : IFuzzTarget
{
    private readonly FuzzServer _server = new();
    private long _operation = 1_000_000;

    public static OperationBodyTarget BulkInsert() => new("/bulk_insert", "id");

    public static OperationBodyTarget Import() => new("/smuggler/import", "operationId");

    public void Run(ReadOnlySpan<byte> input) =>
        _server.SendToDatabase(HttpMethod.Post, $"{path}?{operationParameter}={++_operation}", new ByteArrayContent(input.ToArray()));

    public void Dispose() => _server.Dispose();
}
