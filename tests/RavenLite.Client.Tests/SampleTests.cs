using System.Diagnostics;

namespace RavenLite.Client.Tests;

/// <summary>The README's quick-start sample (samples/QuickStart), run as a child process against a real server.</summary>
public sealed class SampleTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    private static string SampleDll()
    {
        for (var dir = new DirectoryInfo(AppContext.BaseDirectory); dir != null; dir = dir.Parent)
        {
            string bin = Path.Combine(dir.FullName, "samples", "QuickStart", "bin");
            if (Directory.Exists(bin))
            {
                return Directory.GetFiles(bin, "QuickStart.dll", SearchOption.AllDirectories).OrderByDescending(File.GetLastWriteTimeUtc).FirstOrDefault()
                    ?? throw new InvalidOperationException("samples/QuickStart is not built: build RavenLite.sln (./test.sh does).");
            }
        }
        throw new InvalidOperationException("samples/QuickStart not found above " + AppContext.BaseDirectory);
    }

    [Fact]
    public async Task Quick_start_sample_stores_queries_and_bulk_inserts()
    {
        var psi = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true };
        psi.ArgumentList.Add(SampleDll());
        psi.ArgumentList.Add(fixture.Driver.Url.ToString().TrimEnd('/'));
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        await p.WaitForExitAsync(timeout.Token);
        string output = await stdout;
        Assert.True(p.ExitCode == 0, $"sample exited {p.ExitCode}:\n{output}\n{await stderr}");
        Assert.Equal(["stored people/1-A", "over 30: Ann (34, Oslo)", "people in Rome: 10000"], output.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries));
    }
}
