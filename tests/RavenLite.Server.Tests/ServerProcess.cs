using System.Diagnostics;
using System.Text.RegularExpressions;

namespace RavenLite.Server.Tests;

/// <summary>
/// The real server as a child process (<c>dotnet RavenLite.Server.dll</c>) on 127.0.0.1 with a
/// chosen data dir, for crash tests: <see cref="Kill"/> sends SIGKILL.
/// </summary>
public sealed partial class ServerProcess : IDisposable
{
    private readonly Process _process;

    private ServerProcess(Process process, Uri url)
    {
        _process = process;
        Url = url;
    }

    /// <summary>Where it listens.</summary>
    public Uri Url { get; }

    /// <summary>Starts the server and waits (up to 60 s) for its "listening on" line.</summary>
    public static async Task<ServerProcess> StartAsync(string dataDir)
    {
        string dll = Path.Combine(AppContext.BaseDirectory, "RavenLite.Server.dll");
        var psi = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (string a in new[] { dll, "--DataDir", dataDir, "--ServerUrl", "http://127.0.0.1:0" })
            psi.ArgumentList.Add(a);
        var p = Process.Start(psi)!;
        var listening = new TaskCompletionSource<Uri>(TaskCreationOptions.RunContinuationsAsynchronously);
        p.OutputDataReceived += (_, e) =>
        {
            if (e.Data != null && ListeningLine().Match(e.Data) is { Success: true } m)
                listening.TrySetResult(new Uri(m.Groups[1].Value));
        };
        p.ErrorDataReceived += (_, _) => { };
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        var done = await Task.WhenAny(listening.Task, Task.Delay(TimeSpan.FromSeconds(60)));
        if (done != listening.Task)
        {
            p.Kill(entireProcessTree: true);
            throw new TimeoutException("The server process did not start listening within 60 s.");
        }
        return new ServerProcess(p, await listening.Task);
    }

    [GeneratedRegex(@"listening on (http://\S+)")]
    private static partial Regex ListeningLine();

    /// <summary>SIGKILL, then waits for the process to be gone.</summary>
    public void Kill()
    {
        if (!_process.HasExited)
        {
            _process.Kill(entireProcessTree: true); // SIGKILL on Linux
            _process.WaitForExit(30_000);
        }
    }

    /// <inheritdoc />
    public void Dispose()
    {
        Kill();
        _process.Dispose();
    }
}
