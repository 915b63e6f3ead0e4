using System.Diagnostics;

namespace RavenLite.Server.Tests.Compatibility;

/// <summary>
/// RavenDB's official Node client (npm ravendb 7.2.6, installed by test.sh into tests/node-client)
/// runs the flow of docs/protocol.md §13 against a real server, with topology updates on and off, and the
/// protocol-fidelity checks of protocol.mjs.
/// </summary>
public sealed class NodeClientTests(ITestOutputHelper output)
{
    private static string FlowDir()
    {
        for (var dir = new DirectoryInfo(AppContext.BaseDirectory); dir != null; dir = dir.Parent)
        {
            string candidate = Path.Combine(dir.FullName, "tests", "node-client");
            if (File.Exists(Path.Combine(candidate, "flow.mjs")))
                return candidate;
        }
        throw new InvalidOperationException("tests/node-client not found above " + AppContext.BaseDirectory);
    }

    /// <summary>
    /// protocol.mjs: server-generated ids, every HiLo flow, HTTP caching (304, conditionalLoad, aggressive
    /// caching, noCaching), loadStartingWith, bulk insert (skipOverwriteIfUnchanged, refused streams, a client
    /// gone mid-stream), metadata of documents without a collection, exception types, topology and the
    /// database record, sample data. The server must log no warning or error meanwhile (Kestrel's "automatic
    /// draining of the request body failed" was one, for a refused bulk insert).
    /// </summary>
    [Fact]
    public async Task Official_node_client_gets_RavenDB_answers_where_they_used_to_differ()
    {
        var logs = new CapturedLogs();
        await using var server = await TestServer.StartAsync(logs: logs);
        var (exitCode, stdout, stderr) = await RunNode("protocol.mjs", server.Url.ToString().TrimEnd('/'), "proto");
        Assert.True(exitCode == 0, $"protocol.mjs exited {exitCode}:\n{stdout}\n{stderr}");
        Assert.Contains("protocol: ok", stdout);
        Assert.True(logs.Entries.Count == 0, "the server logged:\n" + string.Join("\n", logs.Entries));
    }

    /// <summary>
    /// The query features, one script each, run by RavenDB's Node client against a fresh server:
    /// search.mjs (Lucene syntax in search(), its and/or operator, orderByScore() and @index-score, analyzers,
    /// timings() and explanations()), facets.mjs (field, range and all-results facets, aggregations, options,
    /// setup documents, dynamic facets, bad facets), suggest.mjs, highlight.mjs, mlt.mjs (MoreLikeThis) and
    /// spatial.mjs (CreateSpatialField, radius and WKT shapes, distance ordering, dynamic points); then the other
    /// features' flows, each described at the top of its script (replication.mjs: a task between two databases,
    /// write assurance, a conflict kept and resolved).
    /// </summary>
    [Theory]
    [InlineData("search")]
    [InlineData("facets")]
    [InlineData("suggest")]
    [InlineData("highlight")]
    [InlineData("mlt")]
    [InlineData("spatial")]
    [InlineData("indexes")]
    [InlineData("queryoptions")]
    [InlineData("itemindexes")]
    [InlineData("analysis")]
    [InlineData("operations")]
    [InlineData("counters")]
    [InlineData("cmpxchg")]
    [InlineData("attachments")]
    [InlineData("revisions")]
    [InlineData("expiration")]
    [InlineData("timeseries")]
    [InlineData("streams")]
    [InlineData("lazy")]
    [InlineData("changes")]
    [InlineData("subscriptions")]
    [InlineData("smuggler")]
    [InlineData("backup")]
    [InlineData("admin")]
    [InlineData("replication")]
    public async Task Official_node_client_runs_the_query_feature_script(string script)
    {
        await using var server = await TestServer.StartAsync();
        var (exitCode, stdout, stderr) = await RunNode(script + ".mjs", server.Url.ToString().TrimEnd('/'), script);
        Assert.True(exitCode == 0, $"{script}.mjs exited {exitCode}:\n{stdout}\n{stderr}");
        Assert.Contains(script + ": ok", stdout);
    }

    /// <summary>HiLo ranges handed out before a restart (and never returned) are not handed out again after it.</summary>
    [Fact]
    public async Task Official_node_client_hilo_ids_stay_unique_across_a_server_restart()
    {
        using var dir = new RavenLite.TestKit.TempDirectory("ravenlite-hilo-restart");
        await using (var server = await TestServer.StartAsync(dir.Path))
        {
            var (code, stdout, stderr) = await RunNode(["protocol.mjs", server.Url.ToString().TrimEnd('/'), "hilo"], "restart1");
            Assert.True(code == 0 && stdout.Contains("restart1: stored 100", StringComparison.Ordinal), $"restart1 exited {code}:\n{stdout}\n{stderr}");
        }
        await using (var server = await TestServer.StartAsync(dir.Path))
        {
            var (code, stdout, stderr) = await RunNode(["protocol.mjs", server.Url.ToString().TrimEnd('/'), "hilo"], "restart2");
            Assert.True(code == 0 && stdout.Contains("protocol: ok", StringComparison.Ordinal), $"restart2 exited {code}:\n{stdout}\n{stderr}");
        }
    }

    /// <summary>etl.mjs: RavenDB ETL and SQL ETL set up with the Node client's operations; PostgreSQL then holds its rows.</summary>
    [Fact]
    public async Task Official_node_client_sets_up_raven_and_sql_etl()
    {
        using var dir = new TempDirectory();
        using var pg = LocalPostgres.Start(dir.Path);
        pg.Execute("""CREATE TABLE "Orders" ("Id" text NOT NULL, "Customer" text, "Total" double precision)""");
        await using var server = await TestServer.StartAsync();
        var (exitCode, stdout, stderr) = await RunScriptAsync(output, ["etl.mjs", server.Url.ToString().TrimEnd('/'), "etl"], new Dictionary<string, string> { ["ETL_PG"] = pg.ConnectionString });
        Assert.True(exitCode == 0, $"etl.mjs exited {exitCode}:\n{stdout}\n{stderr}");
        Assert.Contains("etl: ok", stdout);
        Assert.Equal([.. Enumerable.Range(1, 10).Select(i => FormattableString.Invariant($"orders/{i}|customers/{i}|{i * 2}")).Order(StringComparer.Ordinal)], pg.Rows("""SELECT "Id", "Customer", "Total" FROM "Orders" """));
    }

    private Task<(int ExitCode, string Stdout, string Stderr)> RunNode(params string[] args) => RunNode(args, null);

    private Task<(int ExitCode, string Stdout, string Stderr)> RunNode(string[] args, string? steps) =>
        RunScriptAsync(output, args, steps == null ? [] : new Dictionary<string, string> { ["PROTOCOL_STEPS"] = steps });

    /// <summary>Runs <c>node args...</c> in tests/node-client with <paramref name="environment"/> added (5 minutes at most); its output goes to the test's.</summary>
    internal static async Task<(int ExitCode, string Stdout, string Stderr)> RunScriptAsync(ITestOutputHelper output, string[] args, IReadOnlyDictionary<string, string> environment)
    {
        string dir = FlowDir();
        Assert.True(Directory.Exists(Path.Combine(dir, "node_modules", "ravendb")), "npm ravendb is not installed: run ./test.sh (it runs `npm ci` in tests/node-client)");
        var psi = new ProcessStartInfo("node") { WorkingDirectory = dir, RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (string a in args)
            psi.ArgumentList.Add(a);
        foreach (var (name, value) in environment)
            psi.Environment[name] = value;
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromMinutes(5));
        await p.WaitForExitAsync(cts.Token);
        output.WriteLine(await stdout);
        output.WriteLine(await stderr);
        return (p.ExitCode, await stdout, await stderr);
    }

    [Theory]
    [InlineData("on")]
    [InlineData("off")]
    public async Task Official_node_client_runs_the_whole_flow(string topologyUpdates)
    {
        await using var server = await TestServer.StartAsync();
        var (exitCode, stdout, stderr) = await RunNode("flow.mjs", server.Url.ToString().TrimEnd('/'), "flow_" + topologyUpdates, topologyUpdates);
        Assert.True(exitCode == 0, $"node flow exited {exitCode}:\n{stdout}\n{stderr}");
        Assert.Contains("flow: ok", stdout);
    }
}
