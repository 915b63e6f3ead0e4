using System.Diagnostics;
using System.Text.RegularExpressions;

namespace RavenLite.TestKit;

/// <summary>
/// Starts the real server as a child process (<c>dotnet RavenLite.Server.dll</c> from the caller's
/// output folder) on 127.0.0.1, port 0, over <paramref name="dataDir"/>, and waits up to 60 s for its
/// "listening on" line. Shared by the crash tests and the benchmark suites.
/// </summary>
public static partial class ServerLauncher
{
    /// <summary>
    /// Names another build of the server to launch (a folder with RavenLite.Server.dll, e.g. a ReadyToRun publish),
    /// instead of the one in the caller's output folder.
    /// </summary>
    public const string ServerDirVariable = "RAVENLITE_SERVER_DIR";

    /// <summary>Starts the server with <paramref name="extraArgs"/> after the data dir and URL (a <c>--ServerUrl</c> among them wins); <paramref name="onError"/> receives its stderr lines (dropped when null).</summary>
    public static async Task<(Process Process, Uri Url)> StartAsync(string dataDir, IEnumerable<string>? extraArgs = null, Action<string>? onError = null)
    {
        string dll = Path.Combine(Environment.GetEnvironmentVariable(ServerDirVariable) is { Length: > 0 } dir ? dir : AppContext.BaseDirectory, "RavenLite.Server.dll");
        return await StartCommandAsync("dotnet", [dll, "--DataDir", dataDir, "--ServerUrl", "http://127.0.0.1:0", .. extraArgs ?? []], onError);
    }

    /// <summary>Starts a server by another command (<c>ravenlite serve ...</c>, an installed tool) and waits for its "listening on" line.</summary>
    public static async Task<(Process Process, Uri Url)> StartCommandAsync(string fileName, IEnumerable<string> args, Action<string>? onError = null)
    {
        var psi = new ProcessStartInfo(fileName) { RedirectStandardOutput = true, RedirectStandardError = true };
        psi.Environment.Remove(ServerDirVariable); // the server takes RAVENLITE_* variables as its settings
        foreach (string a in args)
            psi.ArgumentList.Add(a);
        var p = Process.Start(psi)!;
        var listening = new TaskCompletionSource<Uri>(TaskCreationOptions.RunContinuationsAsynchronously);
        p.OutputDataReceived += (_, e) =>
        {
            if (e.Data != null && ListeningLine().Match(e.Data) is { Success: true } m)
                listening.TrySetResult(new Uri(m.Groups[1].Value));
        };
        p.ErrorDataReceived += (_, e) =>
        {
            if (e.Data != null)
                onError?.Invoke(e.Data);
        };
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        var done = await Task.WhenAny(listening.Task, Task.Delay(TimeSpan.FromSeconds(60)));
        if (done != listening.Task)
        {
            p.Kill(entireProcessTree: true);
            p.Dispose();
            throw new TimeoutException("The server process did not start listening within 60 s.");
        }
        return (p, await listening.Task);
    }

    /// <summary>SIGKILL (on Linux) to the process tree, then waits up to 30 s for it to be gone.</summary>
    public static void Kill(Process process)
    {
        if (!process.HasExited)
        {
            process.Kill(entireProcessTree: true);
            process.WaitForExit(30_000);
        }
    }

    [GeneratedRegex(@"listening on (https?://\S+)")]
    private static partial Regex ListeningLine();
}
