using System.Net;
using System.Text;
using System.Text.Json;

namespace RavenLite.Fuzz.Targets;

/// <summary>
/// A document body and its <c>@metadata</c> (docs/reliability.md "Fuzzing"): the input's first line is the id, the rest
/// the JSON put there. A stored document (2xx) must then read back, and is deleted again.
/// </summary>
public sealed class DocumentTarget : IFuzzTarget
{
    private readonly FuzzServer _server = new();

    public void Run(ReadOnlySpan<byte> input)
    {
        int newline = input.IndexOf((byte)'\n');
        string id = newline < 0 ? "docs/1" : Encoding.UTF8.GetString(input[..newline]);
        var body = newline < 0 ? input : input[(newline + 1)..];
        var put = _server.SendToDatabase(HttpMethod.Put, "/docs?id=" + Uri.EscapeDataString(id), new ByteArrayContent(body.ToArray()));
        if (!put.IsSuccess)
            return;
        using var answer = JsonDocument.Parse(put.Body);
        string stored = answer.RootElement.GetProperty("Id").GetString() ?? throw new FuzzFindingException("a PUT answered without an Id: " + put.Text);
        FuzzServer.Expect(_server.SendToDatabase(HttpMethod.Get, "/docs?id=" + Uri.EscapeDataString(stored)), HttpStatusCode.OK);
        FuzzServer.Expect(_server.SendToDatabase(HttpMethod.Delete, "/docs?id=" + Uri.EscapeDataString(stored)), HttpStatusCode.NoContent);
    }

    public void Dispose() => _server.Dispose();
}
