using System.Diagnostics;
using Xunit.Abstractions;

namespace RavenLite.Server.Tests;

/// <summary>
/// RavenDB's official Node client (npm ravendb 7.2.6, installed by test.sh into tests/node-client)
/// runs the flow of PROTOCOL.md §13 against a real server, with topology updates on and off.
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

    [Theory]
    [InlineData("on")]
    [InlineData("off")]
    public async Task Official_node_client_runs_the_whole_flow(string topologyUpdates)
    {
        string dir = FlowDir();
        Assert.True(Directory.Exists(Path.Combine(dir, "node_modules", "ravendb")), "npm ravendb is not installed: run ./test.sh (it runs `npm ci` in tests/node-client)");
        await using var server = await TestServer.StartAsync();
        var psi = new ProcessStartInfo("node") { WorkingDirectory = dir, RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (string a in new[] { "flow.mjs", server.Url.ToString().TrimEnd('/'), "flow_" + topologyUpdates, topologyUpdates })
            psi.ArgumentList.Add(a);
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromMinutes(3));
        await p.WaitForExitAsync(cts.Token);
        output.WriteLine(await stdout);
        output.WriteLine(await stderr);
        Assert.True(p.ExitCode == 0, $"node flow exited {p.ExitCode}:\n{await stdout}\n{await stderr}");
        Assert.Contains("flow: ok", await stdout);
    }
}
