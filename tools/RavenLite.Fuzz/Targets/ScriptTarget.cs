using System.Text;
using System.Text.Json;

namespace RavenLite.Fuzz.Targets;

/// <summary>
/// Patch and projection scripts (docs/reliability.md "Fuzzing"): the input's first byte picks where its text runs —
/// a test patch of a seeded document (<c>test=true</c>: run, answered, not written), a patch of a document that is
/// then deleted, the body of a <c>declare function</c> a query projects through, or an object literal's members in
/// <c>select { ... }</c>. Jint's limits (statements, recursion, memory, time) must turn runaway scripts into 4xx answers.
/// </summary>
public sealed class ScriptTarget : IFuzzTarget
{
    private readonly FuzzServer _server = new();

    public ScriptTarget() => SeedData.Put(_server);

    public void Run(ReadOnlySpan<byte> input)
    {
        if (input.IsEmpty)
            return;
        string text = Encoding.UTF8.GetString(input[1..]);
        switch (input[0] % 4)
        {
            case 0:
                Patch("orders/1", text, test: true);
                break;
            case 1:
                FuzzServer.Expect(_server.SendToDatabase(HttpMethod.Put, "/docs?id=scratch/1", FuzzServer.Json("""{"Name":"x","Items":[1,2,3],"@metadata":{"@collection":"Scratch"}}""")), System.Net.HttpStatusCode.Created);
                Patch("scratch/1", text, test: false);
                _server.SendToDatabase(HttpMethod.Delete, "/docs?id=scratch/1");
                break;
            case 2:
                Query($"declare function f(o) {{ {text} }} from Orders as o select f(o)");
                break;
            default:
                Query($"from Orders as o select {{ {text} }}");
                break;
        }
    }

    private void Patch(string id, string script, bool test)
    {
        string body = JsonSerializer.Serialize(new { Patch = new { Script = script, Values = new { v = 1, s = "x" } } });
        _server.SendToDatabase(HttpMethod.Patch, $"/docs?id={id}&test={(test ? "true" : "false")}", FuzzServer.Json(body));
    }

    private void Query(string rql) =>
        _server.SendToDatabase(HttpMethod.Post, "/queries", FuzzServer.Json(JsonSerializer.Serialize(new { Query = rql })));

    public void Dispose() => _server.Dispose();
}
