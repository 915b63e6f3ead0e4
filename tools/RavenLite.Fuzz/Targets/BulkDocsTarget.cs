using System.Net.Http.Headers;
using System.Text;

namespace RavenLite.Fuzz.Targets;

/// <summary>
/// <c>bulk_docs</c> batches (docs/reliability.md "Fuzzing"): the input is a batch body — every command type — or, when
/// its first line starts with <c>--</c>, a <c>multipart/mixed</c> body (the batch, then attachment streams) whose
/// boundary is that line.
/// </summary>
public sealed class BulkDocsTarget : IFuzzTarget
{
    private readonly FuzzServer _server = new();

    public BulkDocsTarget() => SeedData.Put(_server);

    public void Run(ReadOnlySpan<byte> input)
    {
        var content = new ByteArrayContent(input.ToArray());
        int newline = input.IndexOf((byte)'\n');
        if (input.StartsWith("--"u8) && newline > 2)
        {
            string boundary = Encoding.UTF8.GetString(input[2..newline]).TrimEnd('\r');
            if (boundary.All(c => c is > ' ' and < '\x7f') // a header the client can send
                && MediaTypeHeaderValue.TryParse($"multipart/mixed; boundary=\"{boundary.Replace("\"", "", StringComparison.Ordinal)}\"", out var media))
                content.Headers.ContentType = media;
        }
        _server.SendToDatabase(HttpMethod.Post, "/bulk_docs", content);
    }

    public void Dispose() => _server.Dispose();
}
