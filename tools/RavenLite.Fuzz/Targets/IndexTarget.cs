using System.Text;
using System.Text.Json;

namespace RavenLite.Fuzz.Targets;

/// <summary>
/// Index definitions (docs/reliability.md "Fuzzing"). The input's first byte picks the form, the rest is its text: a C#
/// map, a C# map and reduce (split at a line <c>---</c>), a JavaScript index (<c>map('Orders', o =&gt; ...)</c>), or a whole
/// definition's JSON. A compile error is a 400; an index that is created is queried once (waiting for it, so its code
/// runs over the seeded documents — a failure there is the index's error, never the server's) and deleted.
/// </summary>
public sealed class IndexTarget : IFuzzTarget
{
    private const string Name = "Fuzz/Index";
    private readonly FuzzServer _server = new();

    public IndexTarget() => SeedData.Put(_server);

    public void Run(ReadOnlySpan<byte> input)
    {
        if (input.IsEmpty)
            return;
        string text = Encoding.UTF8.GetString(input[1..]);
        string definition = (input[0] % 4) switch
        {
            0 => JsonSerializer.Serialize(new { Name, Maps = new[] { text } }),
            1 => text.Split("\n---\n", 2) is [var map, var reduce]
                ? JsonSerializer.Serialize(new { Name, Maps = new[] { map }, Reduce = reduce })
                : JsonSerializer.Serialize(new { Name, Maps = new[] { text } }),
            2 => JsonSerializer.Serialize(new { Name, Type = "JavaScriptMap", Maps = new[] { text } }),
            _ => text,
        };
        var put = _server.SendToDatabase(HttpMethod.Put, "/admin/indexes", FuzzServer.Json($"{{\"Indexes\":[{definition}]}}"));
        if (!put.IsSuccess)
            return;
        using var created = JsonDocument.Parse(put.Body);
        foreach (var result in created.RootElement.GetProperty("Results").EnumerateArray())
        {
            string name = result.GetProperty("Index").GetString()!;
            string query = JsonSerializer.Serialize(new { Query = $"from index '{name.Replace("'", "\\'", StringComparison.Ordinal)}'", WaitForNonStaleResults = true, WaitForNonStaleResultsTimeout = "00:00:05" });
            _server.SendToDatabase(HttpMethod.Post, "/queries", FuzzServer.Json(query));
            _server.SendToDatabase(HttpMethod.Delete, "/indexes?name=" + Uri.EscapeDataString(name));
        }
    }

    public void Dispose() => _server.Dispose();
}
