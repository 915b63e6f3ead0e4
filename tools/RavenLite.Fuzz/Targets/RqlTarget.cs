using System.Text;
using System.Text.Json;

namespace RavenLite.Fuzz.Targets;

/// <summary>
/// RQL text (docs/reliability.md "Fuzzing"): the input is a query — select, where, order by, load, include,
/// <c>declare function</c>, time-series and facet RQL — posted to <c>/queries</c> with two parameters, so the parser,
/// the planner and the runner see it on seeded data and indexes.
/// </summary>
public sealed class RqlTarget : IFuzzTarget
{
    private readonly FuzzServer _server = new();

    public RqlTarget() => SeedData.Put(_server);

    public void Run(ReadOnlySpan<byte> input)
    {
        string rql = Encoding.UTF8.GetString(input);
        string body = JsonSerializer.Serialize(new { Query = rql, QueryParameters = new { p0 = "companies/1", p1 = 10 } });
        _server.SendToDatabase(HttpMethod.Post, "/queries?queryHash=0", FuzzServer.Json(body));
    }

    public void Dispose() => _server.Dispose();
}
