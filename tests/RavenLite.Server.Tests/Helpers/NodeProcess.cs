using System.Diagnostics;
using System.Net.Sockets;
using System.Runtime.InteropServices;

namespace RavenLite.Server.Tests.Helpers;

/// <summary>
/// A server node as a child process on a fixed loopback port with its own data dir and node tag, for replication
/// tests: <see cref="Kill"/> (SIGKILL) and <see cref="RestartAsync"/> keep the URL, so the other nodes' connection
/// strings stay valid; <see cref="Pause"/> / <see cref="Resume"/> send SIGSTOP / SIGCONT.
/// </summary>
public sealed class NodeProcess : IDisposable
{
    private readonly string _tag;
    private readonly string[] _extra;
    private readonly int _raftPort = FreePort();
    private Process? _process;

    private NodeProcess(string dataDir, string tag, int port, string[] extra, string scheme = "http")
    {
        DataDir = dataDir;
        _tag = tag;
        _extra = extra;
        Url = new Uri($"{scheme}://127.0.0.1:{port}");
        Http = new HttpClient { BaseAddress = Url, Timeout = TimeSpan.FromSeconds(30) };
    }

    public string DataDir { get; }

    /// <summary>The process id (what a script given it may signal).</summary>
    public int ProcessId => _process?.Id ?? 0;

    public Uri Url { get; }

    public HttpClient Http { get; }

    /// <summary>Starts node <paramref name="tag"/> over <paramref name="dataDir"/> on a free loopback port, with <paramref name="extra"/> settings.</summary>
    public static async Task<NodeProcess> StartAsync(string dataDir, string tag, params string[] extra)
    {
        var node = new NodeProcess(dataDir, tag, FreePort(), extra);
        await node.RestartAsync();
        return node;
    }

    /// <summary>
    /// Starts a secured node (HTTPS) over <paramref name="dataDir"/>: <paramref name="extra"/> names its certificate and
    /// admin thumbprint; <see cref="Http"/> presents no certificate (the caller's client does).
    /// </summary>
    public static async Task<NodeProcess> StartSecuredAsync(string dataDir, string tag, params string[] extra)
    {
        var node = new NodeProcess(dataDir, tag, FreePort(), extra, "https");
        await node.RestartAsync();
        return node;
    }

    /// <summary>Starts the process again (after <see cref="Kill"/>) on the same port and data dir.</summary>
    public async Task RestartAsync()
    {
        _process?.Dispose();
        (_process, _) = await ServerLauncher.StartAsync(DataDir, ["--ServerUrl", Url.ToString().TrimEnd('/'), "--NodeTag", _tag, "--ReplicationHeartbeatTimeoutSeconds", "3",
            "--RaftPort", _raftPort.ToString(System.Globalization.CultureInfo.InvariantCulture), .. _extra]);
    }

    /// <summary>SIGKILL, then waits for the process to be gone.</summary>
    public void Kill()
    {
        if (_process != null)
            ServerLauncher.Kill(_process);
    }

    /// <summary>SIGSTOP: the process stops answering without closing its connections.</summary>
    public void Pause() => Signal(19);

    /// <summary>SIGCONT.</summary>
    public void Resume() => Signal(18);

    private void Signal(int signal)
    {
        if (_process != null && Kill(_process.Id, signal) != 0)
            throw new InvalidOperationException($"kill({_process.Id}, {signal}) failed: errno {Marshal.GetLastPInvokeError()}");
    }

#pragma warning disable SYSLIB1054 // two ints: no marshalling to generate
    [DllImport("libc", EntryPoint = "kill", SetLastError = true)]
    private static extern int Kill(int pid, int signal);
#pragma warning restore SYSLIB1054

    /// <summary>
    /// A loopback port nothing listens on now, below Linux's ephemeral range (32768 and up): a node restarted after
    /// SIGKILL binds it again, and a port from the ephemeral range may meanwhile have become the local end of some
    /// outgoing connection.
    /// </summary>
    private static int FreePort()
    {
        for (int attempt = 0; ; attempt++)
        {
            int port = Random.Shared.Next(20_000, 32_000);
            try
            {
                using var l = new TcpListener(System.Net.IPAddress.Loopback, port);
                l.Start();
                return port;
            }
            catch (SocketException) when (attempt < 100)
            {
                // taken: try another
            }
        }
    }

    public void Dispose()
    {
        Kill();
        _process?.Dispose();
        Http.Dispose();
    }
}
