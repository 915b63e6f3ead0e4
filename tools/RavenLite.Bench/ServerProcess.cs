using RavenLite.Server.Configuration;
using System.Diagnostics;
using System.Globalization;
using System.Text.Json;
using RavenLite.TestKit;

namespace RavenLite.Bench;

/// <summary>The RavenLite server as a child process (its own RSS), on 127.0.0.1, port 0, over a fresh data dir.</summary>
internal sealed class ServerProcess : IDisposable
{
    private readonly Process _process;

    private ServerProcess(Process process, Uri url)
    {
        _process = process;
        Url = url;
    }

    public Uri Url { get; }

    public static ServerProcess Start(string dataDir, IEnumerable<string>? extraArgs = null)
    {
        var (process, url) = ServerLauncher.StartAsync(
            dataDir,
            ["--Logging:LogLevel:Default", "Warning", "--Logging:LogLevel:RavenLite.Server.Configuration.ServerOptions", "Information", .. extraArgs ?? []],
            line => Console.Error.WriteLine("server: " + line)).GetAwaiter().GetResult();
        return new ServerProcess(process, url);
    }

    /// <summary>Resident set size now (VmRSS).</summary>
    public long RssBytes() => Soak.RssBytes(_process.Id);

    /// <summary>Peak resident set size so far (VmHWM).</summary>
    public long PeakRssBytes()
    {
        foreach (string line in File.ReadLines($"/proc/{_process.Id}/status"))
            if (line.StartsWith("VmHWM:", StringComparison.Ordinal))
                return long.Parse(line.Split(' ', StringSplitOptions.RemoveEmptyEntries)[1], CultureInfo.InvariantCulture) * 1024;
        return 0;
    }

    /// <summary>Context switches of all the server's threads so far (voluntary + involuntary, /proc/PID/task/*/status).</summary>
    public long ContextSwitches()
    {
        long total = 0;
        foreach (string task in Directory.GetDirectories($"/proc/{_process.Id}/task"))
        {
            try
            {
                foreach (string line in File.ReadLines(Path.Combine(task, "status")))
                    if (line.StartsWith("voluntary_ctxt_switches:", StringComparison.Ordinal) || line.StartsWith("nonvoluntary_ctxt_switches:", StringComparison.Ordinal))
                        total += long.Parse(line.Split(':')[1].Trim(), CultureInfo.InvariantCulture);
            }
            catch (IOException)
            {
                // the thread ended meanwhile
            }
        }
        return total;
    }

    /// <summary>CPU time the server process used so far (user + system, /proc/PID/stat, 100 Hz ticks).</summary>
    public double CpuSeconds()
    {
        string stat = File.ReadAllText($"/proc/{_process.Id}/stat");
        var fields = stat[(stat.LastIndexOf(')') + 2)..].Split(' ');
        // After the command name: field 3 is fields[0]; utime and stime are fields 14 and 15.
        return (long.Parse(fields[11], CultureInfo.InvariantCulture) + long.Parse(fields[12], CultureInfo.InvariantCulture)) / 100.0;
    }

    /// <summary>The merger and storage counters of a database (GET stats).</summary>
    public static async Task<(long Transactions, long Operations, long JournalBytes)> StatsAsync(HttpClient http, string db)
    {
        using var doc = JsonDocument.Parse(await http.GetStringAsync($"/databases/{db}/stats"));
        var m = doc.RootElement.GetProperty("Merger");
        if (doc.RootElement.TryGetProperty("Process", out var process))
            Console.WriteLine($"#   server process: {process}");
        Console.WriteLine($"#   server storage: {doc.RootElement.GetProperty("Storage")}");
        return (m.GetProperty("Transactions").GetInt64(), m.GetProperty("Operations").GetInt64(), doc.RootElement.GetProperty("Storage").GetProperty("JournalBytesWritten").GetInt64());
    }

    /// <summary>SIGTERM, then waits up to <paramref name="timeout"/> for a clean exit (flushed, journals and undo file retired); false when it did not exit.</summary>
    public bool Stop(TimeSpan timeout)
    {
        using (var kill = System.Diagnostics.Process.Start("kill", ["-TERM", _process.Id.ToString(System.Globalization.CultureInfo.InvariantCulture)]))
            kill.WaitForExit();
        return _process.WaitForExit(timeout);
    }

    /// <summary>SIGKILL (the crash suite).</summary>
    public void Kill() => ServerLauncher.Kill(_process);

    public void Dispose()
    {
        ServerLauncher.Kill(_process);
        _process.Dispose();
    }
}
