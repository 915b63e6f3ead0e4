using System.Diagnostics;
using Microsoft.Extensions.DependencyInjection;
using RavenLite.Server.Configuration;
using RavenLite.Server.Hosting;

namespace RavenLite.Server.Tests.Hosting;

public sealed class StartupTests
{
    [Theory]
    [InlineData("http://0.0.0.0:0")]
    [InlineData("http://10.1.2.3:8080")]
    [InlineData("http://[::]:0")]
    public void Non_loopback_binding_is_refused_unless_explicitly_allowed(string url)
    {
        var e = Assert.Throws<InvalidOperationException>(() => ServerHost.Build(["--ServerUrl", url, "--DataDir", Path.GetTempPath()]));
        Assert.Contains("not a loopback address", e.Message);
        Assert.Contains("AllowUnsecuredNonLoopback", e.Message);
        var o = new ServerOptions { ServerUrl = url, AllowUnsecuredNonLoopback = true };
        o.Validate();
    }

    [Fact]
    public async Task Settings_layer_appsettings_then_environment_then_command_line_and_are_validated()
    {
        Environment.SetEnvironmentVariable("RAVENLITE_MaxIdBytes", "300");
        Environment.SetEnvironmentVariable("RAVENLITE_MergerMaxOperations", "77");
        try
        {
            using var dir = new TempDirectory();
            await using var app = ServerHost.Build(["--DataDir", dir.Path, "--ServerUrl", "http://127.0.0.1:0", "--MergerMaxOperations", "99"]);
            var o = app.Services.GetRequiredService<ServerOptions>();
            Assert.Equal(300, o.MaxIdBytes); // environment over appsettings default
            Assert.Equal(99, o.MergerMaxOperations); // command line over environment
            Assert.Equal(Storage.DurabilityMode.Sync, o.Durability); // appsettings.json
            var bad = Assert.Throws<InvalidOperationException>(() => ServerHost.Build(["--DataDir", dir.Path, "--ServerUrl", "http://127.0.0.1:0", "--MaxIdBytes", "5000"]));
            Assert.Contains("MaxIdBytes", bad.Message);
        }
        finally
        {
            Environment.SetEnvironmentVariable("RAVENLITE_MaxIdBytes", null);
            Environment.SetEnvironmentVariable("RAVENLITE_MergerMaxOperations", null);
        }
    }

    /// <summary>Bad configuration stops the start with one line naming the setting: a misspelt name, a data directory that cannot be made, a port in use.</summary>
    [Fact]
    public async Task Server_process_names_the_bad_setting_in_one_line()
    {
        string dll = Path.Combine(AppContext.BaseDirectory, "RavenLite.Server.dll");
        using var dir = new TempDirectory();
        using var taken = new System.Net.Sockets.TcpListener(System.Net.IPAddress.Loopback, 0);
        taken.Start();
        int port = ((System.Net.IPEndPoint)taken.LocalEndpoint).Port;
        async Task<string> Start(string[] args, (string Name, string Value)? env, string expected)
        {
            var psi = new ProcessStartInfo("dotnet") { RedirectStandardError = true, RedirectStandardOutput = true };
            psi.ArgumentList.Add(dll);
            foreach (string a in args)
                psi.ArgumentList.Add(a);
            if (env is { } e)
                psi.Environment[e.Name] = e.Value;
            using var p = Process.Start(psi)!;
            var stdout = p.StandardOutput.ReadToEndAsync();
            string err = await p.StandardError.ReadToEndAsync();
            Assert.True(p.WaitForExit(30_000));
            await stdout;
            Assert.True(p.ExitCode == 2, $"exit {p.ExitCode}: {err}");
            string line = Assert.Single(err.Split('\n', StringSplitOptions.RemoveEmptyEntries));
            Assert.StartsWith("RavenLite cannot start: ", line, StringComparison.Ordinal);
            Assert.Contains(expected, line, StringComparison.Ordinal);
            return line;
        }
        await Start(["--DataDir", dir.Path, "--ServerUrl", "http://127.0.0.1:0"], ("RAVENLITE_Durabilty", "Sync"), "Unknown setting RAVENLITE_Durabilty");
        await Start(["--DataDir", dir.Path, "--ServerUrl", "http://127.0.0.1:0", "--MaxIdByte", "10"], null, "Unknown setting --MaxIdByte");
        await Start(["--DataDir", "/etc/hostname/data", "--ServerUrl", "http://127.0.0.1:0"], null, "DataDir '/etc/hostname/data' cannot be used");
        await Start(["--DataDir", dir.Path, "--ServerUrl", $"http://127.0.0.1:{port}"], null, $"ServerUrl 'http://127.0.0.1:{port}' cannot be listened on");
        await Start(["--DataDir", dir.Path, "--ServerUrl", "http:/127.0.0.1:8080"], null, "ServerUrl 'http:/127.0.0.1:8080'");
    }

    [Fact]
    public async Task Server_process_refuses_a_public_address_with_a_clear_message_and_exit_code()
    {
        string dll = Path.Combine(AppContext.BaseDirectory, "RavenLite.Server.dll");
        using var dir = new TempDirectory();
        var psi = new ProcessStartInfo("dotnet") { RedirectStandardError = true, RedirectStandardOutput = true };
        foreach (string a in new[] { dll, "--ServerUrl", "http://0.0.0.0:18123", "--DataDir", dir.Path })
            psi.ArgumentList.Add(a);
        using var p = Process.Start(psi)!;
        string err = await p.StandardError.ReadToEndAsync();
        Assert.True(p.WaitForExit(30_000));
        Assert.Equal(2, p.ExitCode);
        Assert.Contains("Refusing to listen on 'http://0.0.0.0:18123'", err);
    }

    [Fact]
    public async Task Graceful_shutdown_flushes_so_a_restart_replays_no_journal()
    {
        using var dir = new TempDirectory();
        var s = await TestServer.StartAsync(dir.Path);
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/admin/databases?name=db", TestServer.Json(""))).StatusCode);
        for (int i = 0; i < 20; i++)
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync($"/databases/db/docs?id=d/{i}", TestServer.Json($$$"""{"I":{{{i}}}}"""))).StatusCode);
        await s.DisposeAsync();

        await using var again = await TestServer.StartAsync(dir.Path);
        var doc = await TestServer.ReadJson(await again.Http.GetAsync("/databases/db/docs?id=d/19"));
        Assert.Equal(19, doc.GetProperty("Results")[0].GetProperty("I").GetInt32());
        var registry = again.Services.GetRequiredService<RavenLite.Server.Databases.DatabaseRegistry>();
        var db = registry.Acquire("db");
        try
        {
            Assert.Equal(0, db.Environment.RecoveredTransactions);
        }
        finally
        {
            db.Release();
        }
    }
}
