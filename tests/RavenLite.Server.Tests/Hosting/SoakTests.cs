namespace RavenLite.Server.Tests.Hosting;

/// <summary>
/// The short CI variant of soak (the tool: <c>RavenLite.Bench soak</c>, 30 minutes, 64 writers + 8 readers):
/// the same load code against the server as a child process, 16 writers and 4 readers over 2,000 ids for 30 s. It is
/// judged on what a short run on a shared machine can judge honestly: no error answer, every document readable
/// afterwards, and no gross memory growth once the id set is written (RSS at most +25% after the warm-up, where the
/// tool allows 5% over 30 minutes). Latency is printed, never asserted: speed is the tool's verdict.
/// </summary>
public sealed class SoakTests(ITestOutputHelper output)
{
    [Fact]
    public async Task A_short_soak_of_concurrent_writes_and_reads_answers_every_request_without_growing_memory()
    {
        using var dir = new TempDirectory("ravenlite-soak");
        using var server = await ServerProcess.StartAsync(dir.Path);
        using var http = new HttpClient(new SocketsHttpHandler { MaxConnectionsPerServer = 20 }) { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(30) };
        Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/admin/databases?name=soak", new StringContent(""))).StatusCode);

        var result = await Soak.RunAsync(http, "soak", server.RssBytes,
            new Soak.Options(Writers: 16, Readers: 4, Ids: 2_000, TimeSpan.FromSeconds(30), MaxRssGrowth: 0.25, MaxP99Ratio: double.PositiveInfinity));
        Soak.Report(result, output.WriteLine);
        Assert.Empty(result.Failures);
        Assert.True(result.Writes > 2_000 && result.Reads > 0, $"the load did not run: {result.Writes} PUTs, {result.Reads} GETs");
        Assert.All(result.Intervals, i => Assert.True(i.RssMb > 0, $"interval {i.Index} has no RSS sample"));

        // Every id was written many times over: each one reads back, the latest of its writes intact.
        for (int id = 0; id < 2_000; id += 97)
        {
            using var r = await http.GetAsync($"/databases/soak/docs?id=soak/{id}");
            Assert.Equal(HttpStatusCode.OK, r.StatusCode);
            Assert.Contains($"\"N\":{id},", await r.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        }
    }
}
