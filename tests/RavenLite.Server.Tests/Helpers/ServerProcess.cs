using System.Diagnostics;

namespace RavenLite.Server.Tests.Helpers;

/// <summary>
/// The real server as a child process (<c>dotnet RavenLite.Server.dll</c>) on 127.0.0.1 with a
/// chosen data dir, for crash tests: <see cref="Kill"/> sends SIGKILL.
/// </summary>
public sealed class ServerProcess : IDisposable
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
        var (process, url) = await ServerLauncher.StartAsync(dataDir);
        return new ServerProcess(process, url);
    }

    /// <summary>Resident set size now (VmRSS).</summary>
    public long RssBytes() => Soak.RssBytes(_process.Id);

    /// <summary>SIGKILL, then waits for the process to be gone.</summary>
    public void Kill() => ServerLauncher.Kill(_process);

    /// <inheritdoc />
    public void Dispose()
    {
        Kill();
        _process.Dispose();
    }
}
